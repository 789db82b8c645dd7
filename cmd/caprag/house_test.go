package main

import (
	"go/build"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caprag/caprag/internal/testenv"
)

const module = "github.com/caprag/caprag/"

// deps returns every package pkg imports, directly or, unless direct, not (test files excluded).
func deps(t *testing.T, pkg string, direct bool) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	var walk func(path string)
	walk = func(path string) {
		dir := ""
		if rel, ok := strings.CutPrefix(path, module); ok {
			dir = filepath.Join(testenv.Root(), rel)
		}
		if dir == "" {
			return // outside the module: its imports are not ours to check, except by name below
		}
		p, err := build.ImportDir(dir, 0)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, imp := range p.Imports {
			if !seen[imp] {
				seen[imp] = true
				if !direct {
					walk(imp)
				}
			}
		}
	}
	walk(module + pkg)
	return seen
}

// The import rules of DESIGN.md's house: loading books needs no answering pipeline, the
// embedders need no loader, the Discord session needs no pipeline, the pipeline no Discord,
// and the two vocabularies (words, passage) are leaves. bot reaches rag only through commands.
func TestHouseImportRules(t *testing.T) {
	for _, r := range []struct {
		pkg, never string
		direct     bool
	}{
		{"ingest", module + "rag", false},
		{"ingest", module + "offline", false},
		{"ingest", module + "llm", false},
		{"embed", module + "ingest", false},
		{"bot", module + "rag", true},
		{"rag", "github.com/bwmarrin/discordgo", false},
		{"rag", module + "store", false},
		{"rag", module + "ingest", false},
		{"rag", module + "offline", false},
		{"rag", module + "llm", false},
		{"store", module + "offline", false},
		{"words", module, false},
		{"passage", module, false},
	} {
		for d := range deps(t, r.pkg, r.direct) {
			if d == r.never || strings.HasSuffix(r.never, "/") && strings.HasPrefix(d, r.never) {
				t.Errorf("%s imports %s", r.pkg, d)
			}
		}
	}
}
