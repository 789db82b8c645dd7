// Package samplebooks holds the built-in sample shelf: three short books of Emberfall, a small
// fantasy game written for caprag, whose rules refer to each other across books. caprag answers
// from them when no books have been ingested, so `caprag ask` works on a fresh clone.
package samplebooks

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/caprag/caprag/ingest"
)

//go:embed books/*.md
var files embed.FS

// names maps each file to its book's name.
var names = map[string]string{
	"core-rules.md":             "Core Rules",
	"spells-and-magic.md":       "Spells and Magic",
	"conditions-and-hazards.md": "Conditions and Hazards",
}

// Books loads the sample books.
func Books(ctx context.Context) ([]ingest.Book, error) {
	entries, err := fs.ReadDir(files, "books")
	if err != nil {
		return nil, err
	}
	var out []ingest.Book
	for _, e := range entries {
		data, err := files.ReadFile(path.Join("books", e.Name()))
		if err != nil {
			return nil, err
		}
		name := names[e.Name()]
		if name == "" {
			name = strings.TrimSuffix(e.Name(), ".md")
		}
		b, err := ingest.LoadBytes(ctx, e.Name(), data, ingest.Options{Book: name})
		if err != nil {
			return nil, fmt.Errorf("sample book %s: %w", e.Name(), err)
		}
		b.Source = "built-in sample: " + e.Name()
		for i := range b.Passages {
			b.Passages[i].Source = b.Source
		}
		out = append(out, *b)
	}
	return out, nil
}
