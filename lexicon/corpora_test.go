package lexicon_test

import (
	"cmp"
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/caprag/caprag/ingest"
	"github.com/caprag/caprag/internal/testenv"
	"github.com/caprag/caprag/lexicon"
)

// corpusParts reads a shared corpus as the store keeps it: each book's parents in reading order,
// read by lexicon.Read and passed through Encode and Decode.
func corpusParts(t *testing.T, dir string) []lexicon.Part {
	files, err := ingest.Files([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	var out []lexicon.Part
	for _, f := range files {
		b, err := ingest.LoadFile(context.Background(), f, ingest.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ps := slices.Clone(b.Passages)
		slices.SortStableFunc(ps, func(a, b ingest.Passage) int { return cmp.Compare(a.Position, b.Position) })
		var docs []lexicon.Doc
		seen := map[string]bool{}
		for _, p := range ps {
			if !seen[p.ParentID] {
				seen[p.ParentID] = true
				docs = append(docs, lexicon.Doc{ID: p.ParentID, Section: p.Section, Page: p.Page, Text: p.Parent})
			}
		}
		part, err := lexicon.Decode(b.Name, docs, lexicon.Read(b.Name, docs).Encode())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, part)
	}
	return out
}

// On the SRD and the Fate books, the lexicon read lazily from stored parts says what a full link
// says, and a book added to a linked library gives what linking the whole library gives.
func TestCorporaLinkLikeAFullLink(t *testing.T) {
	if testing.Short() {
		t.Skip("reads two corpora")
	}
	shared := testenv.SharedDir(t)
	for _, c := range []struct{ corpus, added string }{{"srd51", "conditions"}, {"fate", "fate-core"}} {
		t.Run(c.corpus, func(t *testing.T) {
			ps := corpusParts(t, filepath.Join(shared, "corpus", c.corpus))
			lx := lexicon.Link(ps)
			if len(lx.Terms) < 500 {
				t.Fatalf("%d terms in %s", len(lx.Terms), c.corpus)
			}
			lexicon.SameAsEager(t, lx)
			without := slices.DeleteFunc(slices.Clone(ps), func(p lexicon.Part) bool { return p.Book == c.added })
			if len(without) != len(ps)-1 {
				t.Fatalf("no book %q in %s", c.added, c.corpus)
			}
			lexicon.SameLexicon(t, lexicon.Relink(lexicon.Link(without), ps), lx)
		})
	}
}
