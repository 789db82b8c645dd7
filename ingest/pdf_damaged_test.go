package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/go-pdf/fpdf"
)

// outlinedPDF is a small book with an outline of chapters and sections, compressed streams,
// headings in a larger font and page numbers in the footer.
func outlinedPDF(tb testing.TB) []byte {
	tb.Helper()
	p := fpdf.New("P", "mm", "A4", "")
	p.SetTitle("Damage Tests", true)
	p.SetFooterFunc(func() {
		p.SetY(-15)
		p.SetFont("Helvetica", "", 8)
		p.CellFormat(0, 10, fmt.Sprint(p.PageNo()), "", 0, "C", false, 0, "")
	})
	for ch := 1; ch <= 3; ch++ {
		p.AddPage()
		p.SetFont("Helvetica", "B", 16)
		title := fmt.Sprintf("Chapter %d", ch)
		p.Bookmark(title, 0, -1)
		p.CellFormat(0, 10, title, "", 1, "L", false, 0, "")
		for s := 1; s <= 3; s++ {
			p.SetFont("Helvetica", "B", 12)
			sec := fmt.Sprintf("Rule %d.%d", ch, s)
			p.Bookmark(sec, 1, -1)
			p.CellFormat(0, 8, sec, "", 1, "L", false, 0, "")
			p.SetFont("Helvetica", "", 10)
			p.MultiCell(0, 5, strings.Repeat(fmt.Sprintf("Rule %d.%d says what a creature does when it is grappled or prone. ", ch, s), 6), "", "J", false)
		}
	}
	var buf bytes.Buffer
	if err := p.Output(&buf); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// flipBytes returns a copy of data with n bytes changed at places drawn from seed.
func flipBytes(data []byte, n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, uint64(n)))
	out := bytes.Clone(data)
	for k := 0; k < n; k++ {
		out[rng.IntN(len(out))] ^= byte(1 + rng.IntN(255))
	}
	return out
}

// knownLoadError reports whether err is one of the loader's documented outcomes for a bad file,
// naming the file.
func knownLoadError(err error, name string) bool {
	return (errors.Is(err, ErrCorrupt) || errors.Is(err, ErrNoText) || errors.Is(err, ErrEmpty) || errors.Is(err, ErrEncrypted)) &&
		strings.Contains(err.Error(), name)
}

// Issue 11 row 2: a PDF with flipped bytes used to panic in the outline reader and take the
// whole run down. Damaged copies of an outlined book (10 and 300 changed bytes, 25 copies each,
// deterministic) either load or fail with one documented error naming the file; none panics
// or hangs.
func TestFlippedBytesPDFsNeverPanic(t *testing.T) {
	good := outlinedPDF(t)
	if b, err := LoadBytes(context.Background(), "good.pdf", good, Options{}); err != nil || len(b.Passages) == 0 {
		t.Fatalf("the undamaged book does not load: %v", err)
	}
	for _, n := range []int{10, 300} {
		loaded, failed := 0, 0
		for seed := uint64(0); seed < 25; seed++ {
			data := flipBytes(good, n, seed)
			b, err := LoadBytes(context.Background(), "damaged.pdf", data, Options{})
			switch {
			case err == nil:
				loaded++
				if b == nil || len(b.Passages) == 0 {
					t.Errorf("%d bytes flipped, seed %d: no error and no passages", n, seed)
				}
			case knownLoadError(err, "damaged.pdf"):
				failed++
			default:
				t.Errorf("%d bytes flipped, seed %d: unexpected error %v", n, seed, err)
			}
		}
		t.Logf("%d bytes flipped: %d of 25 copies loaded, %d failed with an error", n, loaded, failed)
	}
}

// FuzzLoadPDF feeds the PDF loader arbitrary bytes: no panic escapes, and a failure is one
// documented error naming the file. The seed corpus in testdata/fuzz/FuzzLoadPDF holds small
// generated PDFs (with an outline, two columns, a table, encrypted, without text). A longer
// run: go test -run '^$' -fuzz FuzzLoadPDF -fuzztime 10m ./ingest/
func FuzzLoadPDF(f *testing.F) {
	f.Add(outlinedPDF(f))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := LoadBytes(context.Background(), "fuzz.pdf", data, Options{})
		if err != nil && !knownLoadError(err, "fuzz.pdf") {
			t.Fatalf("unexpected error %v", err)
		}
		if err == nil && (b == nil || len(b.Passages) == 0) {
			t.Fatal("no error and no passages")
		}
	})
}
