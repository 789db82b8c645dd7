package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Section paths in `search --json` are printed as written, not HTML-escaped ("\u003e").
func TestSearchJSONKeepsSectionPathsReadable(t *testing.T) {
	offlineEnv(t)
	books := t.TempDir()
	os.WriteFile(filepath.Join(books, "House Rules.md"), []byte("# House Rules\n\n## Critical Fumbles & Flops\n\nA natural 1 on an attack drops the weapon.\n"), 0o644)
	if code, _, errOut := caprag(t, "ingest", books); code != 0 {
		t.Fatalf("ingest: %d %s", code, errOut)
	}
	code, out, _ := caprag(t, "search", "fumble", "--json")
	if code != 0 || !strings.Contains(out, `"section":"House Rules > Critical Fumbles & Flops"`) {
		t.Fatalf("search --json: exit %d, %s", code, out)
	}
}
