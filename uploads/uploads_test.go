package uploads

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/caprag/caprag/embed"
	"github.com/caprag/caprag/store"
)

// files serves named files on loopback.
func files(t *testing.T, fs map[string][]byte) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := fs[strings.TrimPrefix(r.URL.Path, "/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func memoryShelves() *store.Libraries {
	emb := embed.NewLocal(embed.LocalDims)
	return store.NewLibraries(func(context.Context, string) (store.Store, error) {
		return store.NewMemory(store.Options{Embedder: emb}), nil
	})
}

const rulesMD = "# House Rules\n\n## Fumbles\n\nA natural 1 drops the weapon.\n"

// TestRefusedUploadsLeaveTheLibraryUnchanged: an empty file, one over the limit, a program named
// .pdf, a damaged PDF and a zip named .md are each refused with their reason, and the library
// keeps the one book it had.
func TestRefusedUploadsLeaveTheLibraryUnchanged(t *testing.T) {
	ctx := context.Background()
	srv := files(t, map[string][]byte{
		"rules.md":    []byte(rulesMD),
		"empty.md":    {},
		"big.md":      []byte(strings.Repeat("# Big\n\nword\n", 20000)),
		"game.pdf":    append([]byte("\x7fELF\x02\x01\x01"), make([]byte, 200)...),
		"broken.pdf":  []byte("%PDF-1.7\n1 0 obj << /Type /Catalog >>\nthis is not a PDF body\n%%EOF"),
		"archive.md":  []byte("PK\x03\x04\x14\x00rest of a zip"),
		"notapdf.pdf": []byte("# Just Markdown\n\ntext\n"),
	})
	shelves := memoryShelves()
	j := New(Options{Shelves: shelves, MaxBytes: 100 << 10})
	up := func(name string, size int64) Upload {
		return Upload{Library: "42", Filename: name, URL: srv.URL + "/" + name, Size: size}
	}
	res, err := j.Add(ctx, up("rules.md", int64(len(rulesMD))), nil)
	if err != nil || res.Book != "rules" || res.Passages == 0 {
		t.Fatalf("good upload: %+v %v", res, err)
	}
	lib, _ := shelves.Library(ctx, "42")
	before, _ := lib.Version(ctx)
	for _, tc := range []struct {
		name string
		size int64
		want error
	}{
		{"empty.md", 0, ErrEmpty},
		{"big.md", 240000, ErrTooBig},
		{"big.md", 1000, ErrTooBig}, // Discord said small; the bytes say otherwise
		{"game.pdf", 207, ErrWrongType},
		{"broken.pdf", 80, ErrCorrupt},
		{"archive.md", 30, ErrWrongType},
		{"notapdf.pdf", 22, ErrWrongType},
	} {
		_, err := j.Add(ctx, up(tc.name, tc.size), nil)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	after, _ := lib.Version(ctx)
	books, _ := lib.Books(ctx)
	if after != before || len(books) != 1 {
		t.Fatalf("a refused upload changed the library: %+v", books)
	}
}

// TestOneUploadPerLibrary: a second upload to a library with one under way is refused with
// ErrBusy; another library's waits for a free slot and then runs.
func TestOneUploadPerLibrary(t *testing.T) {
	ctx := context.Background()
	release := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow.md" {
			<-release
		}
		_, _ = w.Write([]byte(rulesMD))
	}))
	defer srv.Close()
	defer once.Do(func() { close(release) })
	j := New(Options{Shelves: memoryShelves(), Jobs: 1})
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := j.Add(ctx, Upload{Library: "1", Filename: "slow.md", URL: srv.URL + "/slow.md", Size: 10}, func(p Progress) {
			if p.Stage == Downloading {
				close(started)
			}
		})
		done <- err
	}()
	<-started
	if _, err := j.Add(ctx, Upload{Library: "1", Filename: "b.md", URL: srv.URL + "/b.md", Size: 10}, nil); !errors.Is(err, ErrBusy) {
		t.Fatalf("second upload to the same library: %v, want ErrBusy", err)
	}
	queued := make(chan struct{})
	other := make(chan error, 1)
	go func() {
		_, err := j.Add(ctx, Upload{Library: "2", Filename: "c.md", URL: srv.URL + "/c.md", Size: 10}, func(p Progress) {
			if p.Stage == Queued {
				close(queued)
			}
		})
		other <- err
	}()
	<-queued
	once.Do(func() { close(release) })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := <-other; err != nil {
		t.Fatal(err)
	}
}

// TestSniffByContent: the type comes from the bytes, the name only tells Markdown from text.
func TestSniffByContent(t *testing.T) {
	for _, tc := range []struct {
		data, name, want string
		err              error
	}{
		{"%PDF-1.4 ...", "book.bin", ".pdf", nil},
		{"\n\n%PDF-1.7", "book", ".pdf", nil},
		{"# Title\n", "notes.md", ".md", nil},
		{"# Title\n", "notes.MARKDOWN", ".md", nil},
		{"plain words", "notes", ".txt", nil},
		{"\xff\xfe#\x00 \x00T\x00", "utf16.txt", ".txt", nil},
		{"MZ\x90\x00", "setup.pdf", "", ErrWrongType},
		{"\x89PNG\r\n", "map.md", "", ErrWrongType},
		{"text\x00with nul", "odd.txt", "", ErrWrongType},
		{"", "x.md", "", ErrEmpty},
	} {
		got, err := Sniff([]byte(tc.data), tc.name)
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("Sniff(%q, %q) = %q, %v; want %q, %v", tc.data, tc.name, got, err, tc.want, tc.err)
		}
	}
}

// FuzzSniff: any bytes under any name give a type or an error, never both, never a panic.
func FuzzSniff(f *testing.F) {
	f.Add([]byte("%PDF-1.4"), "a.pdf")
	f.Add([]byte("\x7fELF"), "a.pdf")
	f.Add([]byte("# T\n"), "a.md")
	f.Add([]byte{0xff, 0xfe, 0}, "a.txt")
	f.Fuzz(func(t *testing.T, data []byte, name string) {
		ext, err := Sniff(data, name)
		if (ext == "") == (err == nil) {
			t.Fatalf("Sniff(%q, %q) = %q, %v", data, name, ext, err)
		}
		if err == nil && ext != ".pdf" && ext != ".md" && ext != ".txt" {
			t.Fatalf("extension %q", ext)
		}
	})
}
