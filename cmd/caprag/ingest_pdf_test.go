package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-pdf/fpdf"

	"github.com/caprag/caprag/ingest"
)

// damagedOutlinePDF writes a book with an outline whose outline objects have bytes changed:
// the input that made the outline reader panic and took every other file of the run down
// (issue 11, row 2).
func damagedOutlinePDF(t *testing.T) []byte {
	t.Helper()
	p := fpdf.New("P", "mm", "A4", "")
	p.SetFont("Helvetica", "", 11)
	for i := 1; i <= 3; i++ {
		p.AddPage()
		p.Bookmark(fmt.Sprintf("Chapter %d", i), 0, -1)
		p.MultiCell(0, 6, fmt.Sprintf("Chapter %d. Rules about grappling and shoving.", i), "", "L", false)
	}
	var buf bytes.Buffer
	if err := p.Output(&buf); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	i := bytes.Index(data, []byte("/Title (Chapter 2)"))
	if i < 0 {
		t.Fatal("no outline item in the generated PDF")
	}
	for k := 0; k < 40; k += 3 { // damage the outline items around Chapter 2
		data[i+k] ^= 0x5a
	}
	return data
}

// A damaged PDF is one failed file: the other books of the run load, the command says which
// file failed and exits 1.
func TestIngestDamagedPDFLoadsTheRest(t *testing.T) {
	offlineEnv(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a-damaged.pdf"), damagedOutlinePDF(t), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "b-house-rules.md"), []byte("# Grappling\n\nA grappled creature can still cast spells.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := caprag(t, "ingest", dir)
	if code == 2 || strings.Contains(errOut, "panic") || strings.Contains(errOut, "goroutine ") {
		t.Fatalf("exit %d:\n%s", code, errOut)
	}
	if !strings.Contains(out, "b-house-rules") && !strings.Contains(errOut, "b-house-rules") {
		t.Errorf("the Markdown book was not loaded:\n%s\n%s", out, errOut)
	}
	code, out, _ = caprag(t, "books")
	if code != 0 || !strings.Contains(out, "b-house-rules") {
		t.Errorf("books after the run (exit %d):\n%s", code, out)
	}
}

// `caprag books show` prints what was read from a PDF: each passage with its section, printed
// page and text; --page keeps one page, --json gives the same as data.
func TestBooksShow(t *testing.T) {
	offlineEnv(t)
	p := fpdf.New("P", "mm", "A4", "")
	p.SetTitle("Dungeon Rules", true)
	p.SetFooterFunc(func() {
		p.SetY(-15)
		p.SetFont("Helvetica", "", 8)
		p.CellFormat(0, 10, fmt.Sprintf("Dungeon Rules %d", 40+p.PageNo()), "", 0, "C", false, 0, "")
	})
	for _, page := range [][2]string{{"Grappling", "When you grab a creature, it is grappled."}, {"Shoving", "You push a creature away or knock it prone."}} {
		p.AddPage()
		p.SetFont("Helvetica", "B", 16)
		p.CellFormat(0, 10, page[0], "", 1, "L", false, 0, "")
		p.SetFont("Helvetica", "", 10)
		p.MultiCell(0, 5, page[1], "", "L", false)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "rules.pdf")
	var buf bytes.Buffer
	if err := p.Output(&buf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := caprag(t, "ingest", path); code != 0 {
		t.Fatalf("ingest exit %d: %s", code, errOut)
	}
	code, out, errOut := caprag(t, "books", "show", "Dungeon Rules")
	if code != 0 {
		t.Fatalf("books show exit %d: %s", code, errOut)
	}
	want := "[0] p. 41 — Grappling\nWhen you grab a creature, it is grappled.\n\n[1] p. 42 — Shoving\nYou push a creature away or knock it prone.\n\n"
	if out != want {
		t.Errorf("books show printed\n%q\nwant\n%q", out, want)
	}
	code, out, _ = caprag(t, "books", "show", "dungeon rules", "--page", "42", "--json")
	wantJSON := `{"book":"Dungeon Rules","passages":[{"position":1,"page":42,"section":"Shoving","text":"You push a creature away or knock it prone."}]}` + "\n"
	if code != 0 || out != wantJSON {
		t.Errorf("books show --page 42 --json (exit %d):\n%s\nwant\n%s", code, out, wantJSON)
	}
	if code, _, errOut := caprag(t, "books", "show", "Missing"); code != 1 || !strings.Contains(errOut, `no book named "Missing"`) {
		t.Errorf("a missing book: exit %d, %s", code, errOut)
	}
	if code, _, _ := caprag(t, "books", "--page", "3"); code != 2 {
		t.Errorf("--page without show: exit %d, want 2", code)
	}
}

// Without a terminal, ingest prints a plain line when a PDF's pages start and then every few
// seconds while it reads them, not only at the first page.
func TestPlainProgressEveryFewSeconds(t *testing.T) {
	var out bytes.Buffer
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := &progress{w: &out, now: func() time.Time { return clock }}
	for page := 1; page <= 400; page++ {
		p.update(1, 2, ingest.Progress{File: "srd.pdf", Page: page, Pages: 400})
		clock = clock.Add(25 * time.Millisecond) // 10 s for the 400 pages
	}
	p.update(2, 2, ingest.Progress{File: "other.pdf", Page: 1, Pages: 3})
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{"[1/2] srd.pdf: page 1 of 400", "[1/2] srd.pdf: page 121 of 400", "[1/2] srd.pdf: page 241 of 400", "[1/2] srd.pdf: page 361 of 400", "[2/2] other.pdf: page 1 of 3"}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("progress lines:\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}
