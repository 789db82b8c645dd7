package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-pdf/fpdf"

	"github.com/caprag/caprag/internal/testenv"
)

const combatMD = `# Combat

Intro to combat.

## Making an Attack

Roll a d20.

### Grappling

When you want to grab a creature, you can use the Attack action to make a special melee attack, a grapple. If you succeed, you subject the target to the grappled condition (see appendix A). See Shoving a Creature.

### Shoving a Creature

You push a creature. The target is knocked prone (see the condition). See p. 12 and pp. 30-31.

# Appendix A: Conditions

#### Grappled

A grappled creature's speed becomes 0.

#### Prone

A prone creature's only movement option is to crawl.
`

func TestMarkdownSectionPaths(t *testing.T) {
	b, err := LoadBytes(context.Background(), "Basic Set.md", []byte(combatMD), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if b.Name != "Basic Set" {
		t.Errorf("book name %q, want the file name without extension", b.Name)
	}
	want := map[string]bool{
		"Combat": false, "Combat > Making an Attack": false, "Combat > Making an Attack > Grappling": false,
		"Combat > Making an Attack > Shoving a Creature": false, "Appendix A: Conditions > Grappled": false,
	}
	for _, p := range b.Passages {
		if _, ok := want[p.Section]; ok {
			want[p.Section] = true
		}
		if p.Book != "Basic Set" || p.Source != "Basic Set.md" || p.Page != 0 {
			t.Errorf("passage %+v lacks its origin", p)
		}
		if !strings.Contains(p.Parent, p.Text) {
			t.Errorf("child %q is not inside its parent", p.Text)
		}
	}
	for s, ok := range want {
		if !ok {
			t.Errorf("no passage with section %q", s)
		}
	}
}

func TestChunksNeverCrossASection(t *testing.T) {
	var md strings.Builder
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&md, "## Rule %d\n\n", i)
		for j := 0; j < 12; j++ {
			fmt.Fprintf(&md, "Sentence %d of rule %d says something long enough to matter here. ", j, i)
		}
		md.WriteString("\n\n")
	}
	b, err := LoadBytes(context.Background(), "r.md", []byte(md.String()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range b.Passages {
		n := strings.TrimPrefix(p.Section, "Rule ")
		if strings.Count(p.Parent, "of rule ") != strings.Count(p.Parent, "of rule "+n+" ") {
			t.Fatalf("section %q holds text of another section: %q", p.Section, p.Parent)
		}
		if len([]rune(p.Text)) > ChildSize || len([]rune(p.Parent)) > ParentSize {
			t.Fatalf("chunk too large: child %d, parent %d", len(p.Text), len(p.Parent))
		}
	}
	if len(b.Passages) < 20 {
		t.Fatalf("%d passages for 20 sections", len(b.Passages))
	}
}

func TestStableIDsAndOversizedParagraph(t *testing.T) {
	long := strings.Repeat("word ", 3000) + strings.Repeat("x", 2000)
	src := "# Big\n\n" + long
	a, err := LoadBytes(context.Background(), "big.md", []byte(src), Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := LoadBytes(context.Background(), "big.md", []byte(src), Options{})
	if len(a.Passages) != len(b.Passages) {
		t.Fatal("same input, different passage count")
	}
	ids := map[string]bool{}
	for i := range a.Passages {
		if a.Passages[i].ID != b.Passages[i].ID {
			t.Fatal("IDs are not stable")
		}
		if ids[a.Passages[i].ID] {
			t.Fatal("duplicate ID")
		}
		ids[a.Passages[i].ID] = true
		if len([]rune(a.Passages[i].Text)) > ChildSize {
			t.Fatalf("child of %d runes", len([]rune(a.Passages[i].Text)))
		}
	}
}

func TestEmptyAndUnsupportedFiles(t *testing.T) {
	if _, err := LoadBytes(context.Background(), "empty.md", []byte("  \n\n"), Options{}); !errors.Is(err, ErrEmpty) {
		t.Errorf("empty file: %v, want ErrEmpty", err)
	}
	if _, err := LoadBytes(context.Background(), "book.docx", []byte("x"), Options{}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("docx: %v, want ErrUnsupported", err)
	}
	b, err := LoadBytes(context.Background(), "notes.txt", []byte("One rule.\n\nAnother rule."), Options{Book: "House Rules"})
	if err != nil || b.Name != "House Rules" || len(b.Passages) != 1 {
		t.Fatalf("text file: %v %+v", err, b)
	}
}

func TestReferences(t *testing.T) {
	b, err := LoadBytes(context.Background(), "Basic Set.md", []byte(combatMD), Options{})
	if err != nil {
		t.Fatal(err)
	}
	AddRefs(b.Passages)
	got := map[string]bool{}
	for _, p := range b.Passages {
		for _, r := range p.Refs {
			got[p.Section+"|"+string(r.Kind)+"|"+r.Target] = true
		}
	}
	// Each reference is resolved to the section it names, inside the book (the store resolves
	// them across books); a book without pages has no page to resolve "p. 12" to.
	for _, w := range []string{
		"Combat > Making an Attack > Grappling|see|Grappled",
		"Combat > Making an Attack > Grappling|see|Shoving a Creature",
		"Combat > Making an Attack > Shoving a Creature|see|Prone",
	} {
		if !got[w] {
			t.Errorf("missing reference %s; have %v", w, got)
		}
	}
	for k := range got {
		if strings.HasPrefix(k, "Appendix A: Conditions > Grappled|mention|Grappled") {
			t.Errorf("a section mentions its own title: %s", k)
		}
	}
}

func TestFilesWalksFoldersForSupportedFiles(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"a.md", "sub/b.pdf", "sub/c.txt", "sub/d.docx", ".git/e.md"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755)
		os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644)
	}
	got, err := Files([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "a.md"), filepath.Join(dir, "sub/b.pdf"), filepath.Join(dir, "sub/c.txt")}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Files = %v, want %v", got, want)
	}
	if _, err := Files([]string{filepath.Join(dir, "missing")}); err == nil {
		t.Fatal("a missing path is not an error")
	}
}

// makePDF writes a PDF whose footers print page numbers starting at first (not the page index).
func makePDF(t testing.TB, title string, pages []string, first int) []byte {
	t.Helper()
	p := fpdf.New("P", "mm", "A4", "")
	p.SetTitle(title, true)
	p.SetFont("Helvetica", "", 11)
	p.SetFooterFunc(func() {
		p.SetY(-15)
		p.CellFormat(0, 10, fmt.Sprintf("Dungeon Rules %d", first+p.PageNo()-1), "", 0, "C", false, 0, "")
	})
	for _, text := range pages {
		p.AddPage()
		if text != "" {
			p.MultiCell(0, 6, text, "", "L", false)
		}
	}
	var buf bytes.Buffer
	if err := p.Output(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestPDFCitesPrintedPageNumbers(t *testing.T) {
	pages := []string{
		"Grappling. When you grab a creature it is grappled. See page 45 for conditions.",
		"Shoving. You can push a creature away from you or knock it prone.",
		"Cover. Walls and trees give half cover or three-quarters cover.",
		"Resting. A short rest is a period of downtime of at least 1 hour.",
	}
	data := makePDF(t, "Dungeon Rules", pages, 44)
	var progress []Progress
	b, err := LoadBytes(context.Background(), "rules.pdf", data, Options{Progress: func(p Progress) { progress = append(progress, p) }})
	if err != nil {
		t.Fatal(err)
	}
	if b.Name != "Dungeon Rules" || b.Pages != 4 {
		t.Fatalf("book %q with %d pages, want the title metadata and 4 pages", b.Name, b.Pages)
	}
	found := map[string]int{}
	for _, p := range b.Passages {
		found[strings.Fields(p.Text)[0]] = p.Page
		if strings.Contains(p.Text, "Dungeon Rules 4") {
			t.Errorf("footer left in the text: %q", p.Text)
		}
	}
	for word, page := range map[string]int{"Grappling.": 44, "Shoving.": 45, "Cover.": 46, "Resting.": 47} {
		if found[word] != page {
			t.Errorf("%s cited on page %d, want printed page %d (have %v)", word, found[word], page, found)
		}
	}
	if len(progress) == 0 || progress[len(progress)-1].Pages != 4 {
		t.Errorf("progress = %+v", progress)
	}
}

func TestPDFWithoutText(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "scan.pdf")
	p := fpdf.New("P", "mm", "A4", "")
	p.AddPage()
	p.AddPage()
	var buf bytes.Buffer
	p.Output(&buf)
	os.WriteFile(path, buf.Bytes(), 0o644)
	b, err := LoadFile(context.Background(), path, Options{})
	if !errors.Is(err, ErrNoText) || b == nil || len(b.Warnings) != 1 || !strings.Contains(b.Warnings[0], "scan.pdf") {
		t.Fatalf("scan: book %+v, err %v; want a warning naming the file and ErrNoText", b, err)
	}
}

func TestCorruptPDFs(t *testing.T) {
	good := makePDF(t, "X", []string{"Some text."}, 1)
	cases := map[string][]byte{
		"not a pdf": []byte("hello, this is not a PDF"),
		"truncated": good[:len(good)/2],
		"empty":     {},
		"garbage":   append([]byte("%PDF-1.4\n"), bytes.Repeat([]byte{0xff, 0x00, 0x13}, 500)...),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := LoadBytes(context.Background(), "bad.pdf", data, Options{})
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err = %v, want ErrCorrupt", err)
			}
			if !strings.Contains(err.Error(), "bad.pdf") {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

func TestEncryptedPDF(t *testing.T) {
	p := fpdf.New("P", "mm", "A4", "")
	p.SetProtection(fpdf.CnProtectPrint, "user-secret", "owner-secret")
	p.SetFont("Helvetica", "", 11)
	p.AddPage()
	p.MultiCell(0, 6, "Secret rules.", "", "L", false)
	var buf bytes.Buffer
	if err := p.Output(&buf); err != nil {
		t.Fatal(err)
	}
	_, err := LoadBytes(context.Background(), "locked.pdf", buf.Bytes(), Options{})
	if !errors.Is(err, ErrEncrypted) {
		t.Fatalf("err = %v, want ErrEncrypted", err)
	}
}

func TestSRDMarkdownCorpus(t *testing.T) {
	dir := testenv.SRDDir(t)
	files, err := Files([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	var all []Passage
	for _, f := range files {
		b, err := LoadFile(context.Background(), f, Options{})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b.Passages...)
	}
	if len(files) != 15 || len(all) < 3000 {
		t.Fatalf("%d files, %d passages", len(files), len(all))
	}
	t.Logf("%d files, %d passages", len(files), len(all))
}

func TestSRDPDFPrintedPages(t *testing.T) {
	b := srdPDF(t)
	if b.Pages != 403 {
		t.Fatalf("%d pages, want 403", b.Pages)
	}
	for _, p := range b.Passages {
		if strings.Contains(p.Text, "System Reference Document 5.1 "+fmt.Sprint(p.Page)) {
			t.Fatalf("footer left in passage text on page %d", p.Page)
		}
		if strings.ContainsAny(p.Text, "\t\r") {
			t.Fatalf("whitespace not normalised: %q", p.Text)
		}
	}
	// "Grappling" is on the page whose footer reads "System Reference Document 5.1 95",
	// "Contests in Combat" on 96 and "Paralyzed" on 358; each is a section of its own.
	for title, page := range map[string]int{"Grappling": 95, "Contests in Combat": 96, "Paralyzed": 358} {
		found := false
		for _, p := range b.Passages {
			if strings.HasSuffix(p.Section, " > "+title) {
				found = true
				if p.Page != page {
					t.Errorf("%s cited on page %d, want %d", title, p.Page, page)
				}
				break
			}
		}
		if !found {
			t.Errorf("no section %q", title)
		}
	}
}

// BenchmarkPDFText reads the text of the real SRD PDF with caprag and with poppler's pdftotext,
// side by side; compare the medians (-count 5).
func BenchmarkPDFText(b *testing.B) {
	path := testenv.SRDPDF(b)
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("caprag", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, _, _, err := readPDF(context.Background(), data, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("pdftotext", func(b *testing.B) {
		if _, err := exec.LookPath("pdftotext"); err != nil {
			b.Skip("pdftotext not installed (apt install poppler-utils)")
		}
		for i := 0; i < b.N; i++ {
			if err := exec.Command("pdftotext", path, os.DevNull).Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkLoadSRD loads the 14 Markdown books of the SRD.
func BenchmarkLoadSRD(b *testing.B) {
	files, _ := Files([]string{testenv.SRDDir(b)})
	for i := 0; i < b.N; i++ {
		for _, f := range files {
			if _, err := LoadFile(context.Background(), f, Options{}); err != nil {
				b.Fatal(err)
			}
		}
	}
}
