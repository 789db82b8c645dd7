package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-pdf/fpdf"
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
