package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"
)

// longParagraphs are one-paragraph texts of about n bytes in the shapes that made chunking slow:
// words without a sentence end, one enormous word, many short sentences, a nested list without
// blank lines, accented words.
func longParagraphs(n int) map[string]string {
	rep := func(s string) string { return strings.Repeat(s, n/len(s)+1)[:n] }
	return map[string]string{
		"words":       rep("grapple the goblin "),
		"one word":    rep("x"),
		"sentences":   rep("Hit. "),
		"nested list": rep("- item\n  - sub item\n    - sub sub item\n"),
		"accents":     strings.ToValidUTF8(rep("épée à deux mains "), ""),
	}
}

// Row 6 of issue 11: chunking was quadratic in paragraph length (1/2/4/8 MB took 2.5/6.4/16/33.6
// s). The chunker now looks at each rune a bounded number of times, whatever the shape or size.
func TestChunkingIsLinear(t *testing.T) {
	for _, size := range []int{16 << 10, 1 << 20} {
		for shape, text := range longParagraphs(size) {
			c := &chunker{}
			ps := c.chunk("B", "b.md", []section{{text: text}})
			perByte := float64(c.steps) / float64(len(text))
			if perByte > 6 {
				t.Errorf("%s, %d KiB: %.1f steps per byte (want ≤ 6: linear)", shape, size>>10, perByte)
			}
			for _, p := range ps {
				if utf8.RuneCountInString(p.Text) > ChildSize || utf8.RuneCountInString(p.Parent) > ParentSize {
					t.Fatalf("%s: child of %d runes, parent of %d", shape, utf8.RuneCountInString(p.Text), utf8.RuneCountInString(p.Parent))
				}
			}
		}
	}
}

// BenchmarkChunkParagraph chunks one paragraph of 1 and 8 MB (issue 11: 8 MB must take < 1 s).
func BenchmarkChunkParagraph(b *testing.B) {
	for _, size := range []int{1 << 20, 8 << 20} {
		for _, shape := range []string{"words", "one word", "nested list"} {
			text := longParagraphs(size)[shape]
			b.Run(fmt.Sprintf("%s/%dMB", strings.ReplaceAll(shape, " ", "-"), size>>20), func(b *testing.B) {
				b.SetBytes(int64(len(text)))
				for b.Loop() {
					chunk("B", "b.md", []section{{text: text}})
				}
			})
		}
	}
}

// Row 7 of issue 11: a symlinked folder named on the command line gave "no PDF, Markdown or text
// files", symlinked subfolders were skipped silently, and one unreadable subfolder aborted the
// whole run. Links to folders are followed, loops and dangling links reported, and the rest is
// found.
func TestFilesFollowsLinksAndReportsProblems(t *testing.T) {
	root := t.TempDir()
	books := filepath.Join(root, "books")
	write := func(rel string) {
		p := filepath.Join(root, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("# T\n\nText.\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("books/core.md")
	write("elsewhere/extra/house.md")
	link := func(target, name string) {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	link(filepath.Join(root, "elsewhere", "extra"), "books/extra") // a linked subfolder
	link(books, "books/loop")                                      // a link back up: a loop
	link(filepath.Join(root, "nowhere"), "books/gone")             // a dangling link
	link(books, "linked-books")                                    // a linked folder named on the command line

	got, err := Files([]string{filepath.Join(root, "linked-books")})
	want := []string{filepath.Join(root, "linked-books", "core.md"), filepath.Join(root, "linked-books", "extra", "house.md")}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Files = %v, want %v", got, want)
	}
	if err == nil || !strings.Contains(err.Error(), "loop") || !strings.Contains(err.Error(), "gone") {
		t.Fatalf("problems: %v, want the loop and the dangling link reported", err)
	}
	// A missing path among others is reported; the others are still found.
	got, err = Files([]string{filepath.Join(root, "missing"), books})
	if len(got) != 2 || err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("Files with a missing path: %v, %v", got, err)
	}
}

func TestFilesReportsAnUnreadableFolder(t *testing.T) {
	root := t.TempDir()
	os.Chmod(filepath.Dir(root), 0o755) // reachable by the unprivileged user below
	os.Chmod(root, 0o755)
	for _, rel := range []string{"a.md", "locked/b.md", "open/c.md"} {
		p := filepath.Join(root, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("# T\n\nText.\n"), 0o644)
	}
	if err := os.Chmod(filepath.Join(root, "locked"), 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(root, "locked"), 0o755) })
	var got []string
	var err error
	asUnprivileged(t, func() { got, err = Files([]string{root}) })
	want := []string{filepath.Join(root, "a.md"), filepath.Join(root, "open", "c.md")}
	if fmt.Sprint(got) != fmt.Sprint(want) || err == nil || !strings.Contains(err.Error(), "locked") || !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("Files = %v, %v; want %v and the unreadable folder reported", got, err, want)
	}
}

// Row 10 of issue 11: binary garbage named .md ingested as 391 passages, and Latin-1 text was
// turned into U+FFFD so accented words were never found.
func TestTextEncodings(t *testing.T) {
	ctx := context.Background()
	latin1 := []byte("# R\xe8gles\n\nUne \xe9p\xe9e \xe0 deux mains co\xfbte 50 \x80.\n") // Windows-1252: è é à û €
	b, err := LoadBytes(ctx, "regles.md", latin1, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p := b.Passages[0]; p.Section != "Règles" || !strings.Contains(p.Text, "épée à deux mains coûte 50 €") {
		t.Fatalf("Windows-1252 read as %q / %q", p.Section, p.Text)
	}
	if len(b.Warnings) != 1 || !strings.Contains(b.Warnings[0], "Windows-1252") {
		t.Fatalf("warnings %q, want one saying how the file was read", b.Warnings)
	}
	utf16 := []byte{0xFF, 0xFE}
	for _, r := range "# Épée\n\nTexte.\n" {
		utf16 = append(utf16, byte(r), byte(r>>8))
	}
	if b, err := LoadBytes(ctx, "u.md", utf16, Options{}); err != nil || b.Passages[0].Section != "Épée" {
		t.Fatalf("UTF-16: %v", err)
	}
	if b, err := LoadBytes(ctx, "bom.txt", append([]byte{0xEF, 0xBB, 0xBF}, "Plain rule."...), Options{}); err != nil || b.Passages[0].Text != "Plain rule." || len(b.Warnings) != 0 {
		t.Fatalf("UTF-8 with a BOM: %v %+v", err, b)
	}
	garbage := make([]byte, 64<<10)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range garbage {
		garbage[i] = byte(rng.Uint32())
	}
	for name, data := range map[string][]byte{
		"random.md":   garbage,
		"png.md":      append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), garbage[:512]...),
		"elf.txt":     append([]byte("\x7fELF\x02\x01\x01\x00"), garbage[:4096]...),
		"controls.md": bytes.Repeat([]byte("rule\x01\x02\x03 "), 100),
	} {
		if _, err := LoadBytes(ctx, name, data, Options{}); !errors.Is(err, ErrBinary) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v, want ErrBinary naming the file", name, err)
		}
	}
	if _, err := LoadBytes(ctx, "cp437.txt", []byte("Box \x81\x8d drawing"), Options{}); !errors.Is(err, ErrEncoding) {
		t.Errorf("bytes undefined in Windows-1252: %v, want ErrEncoding", err)
	}
}

// Row 5 of issue 11: a 200 MB Markdown file ingested at 19.4 GB. A file over the limits is now
// refused before it is read, with a message that names the setting.
func TestSizeLimitsRefuseBeforeReading(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	big := filepath.Join(dir, "big.md")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(200 << 20); err != nil { // sparse: 200 MB that take no disk
		t.Fatal(err)
	}
	f.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = LoadFile(ctx, big, Options{})
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "MAX_BOOK_TEXT_MB") || !strings.Contains(err.Error(), "200 MiB") {
		t.Fatalf("200 MB Markdown: %v, want ErrTooLarge naming MAX_BOOK_TEXT_MB", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Fatalf("refusing the file allocated %d bytes: it was read", grew)
	}
	pdf := filepath.Join(dir, "big.pdf")
	os.WriteFile(pdf, make([]byte, 3<<20), 0o644)
	if _, err := LoadFile(ctx, pdf, Options{Limits: Limits{FileBytes: 2 << 20}}); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "MAX_FILE_MB") {
		t.Fatalf("3 MiB file over a 2 MiB limit: %v", err)
	}
	// Text decoded to more than the limit (the limit checks the text, not only the file).
	text := []byte("# Rules\n\n" + strings.Repeat("A rule. ", 40000))
	if _, err := LoadBytes(ctx, "t.md", text, Options{Limits: Limits{TextBytes: 100 << 10}}); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "MAX_BOOK_TEXT_MB") {
		t.Fatalf("320 KiB of text over a 100 KiB limit: %v", err)
	}
	if _, err := LoadBytes(ctx, "t.md", text, Options{}); err != nil {
		t.Fatalf("under the default limits: %v", err)
	}
}
