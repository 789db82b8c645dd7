package store

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/caprag/caprag/embed"
	"github.com/caprag/caprag/ingest"
	"github.com/caprag/caprag/lexicon"
)

// sameLinks checks that two lexicons of the same books say the same: passages, terms (with
// their mentions and specificity), every passage's links, the word counts of its words.
func sameLinks(t *testing.T, got, want *lexicon.Lexicon) {
	t.Helper()
	if got.N != want.N || !reflect.DeepEqual(got.Docs, want.Docs) {
		t.Fatalf("the passages differ: %d and %d", got.N, want.N)
	}
	if !reflect.DeepEqual(got.Terms, want.Terms) {
		t.Errorf("the terms differ: %d and %d", len(got.Terms), len(want.Terms))
	}
	for n := range got.N {
		if g, w := got.Edges(n), want.Edges(n); !reflect.DeepEqual(g, w) {
			t.Fatalf("passage %s links %+v, want %+v", got.Docs[n].ID, g, w)
		}
		if n%50 == 0 {
			for _, tk := range got.Tokens(n) {
				if got.DF(tk.Stem) != want.DF(tk.Stem) {
					t.Fatalf("DF(%q) = %d, want %d", tk.Stem, got.DF(tk.Stem), want.DF(tk.Stem))
				}
			}
		}
	}
}

// A book added to (or removed from) a library whose lexicon is linked gives the lexicon that
// linking the whole library anew gives (a process that opens the library), though the running
// one relinks it from the lexicon it had, reading only what the change touches.
func TestAChangedLibraryIsRelinkedAsAFullLink(t *testing.T) {
	ctx := context.Background()
	books := srd(t)
	i := slices.IndexFunc(books, func(b ingest.Book) bool { return b.Name == "conditions" })
	if i < 0 {
		t.Fatal("no conditions in the SRD")
	}
	dir := t.TempDir()
	opts := Options{Embedder: embed.NewLocal(embed.LocalDims), Mode: Lexical}
	s, err := OpenEmbedded(ctx, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, s, slices.Delete(slices.Clone(books), i, i+1))
	s.Lexicon()
	for _, change := range []struct {
		name string
		do   func() error
	}{
		{"conditions added", func() error { return s.ReplaceBook(ctx, books[i]) }},
		{"rules removed", func() error { return s.RemoveBook(ctx, "rules") }},
	} {
		if err := change.do(); err != nil {
			t.Fatal(err)
		}
		got := s.Lexicon()
		if !s.cur.Load().lex.relinked {
			t.Fatalf("%s: the lexicon was linked anew, not relinked", change.name)
		}
		fresh, err := OpenEmbedded(ctx, dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		want := fresh.Lexicon()
		if fresh.cur.Load().lex.relinked {
			t.Fatal("a store just opened relinked its lexicon")
		}
		sameLinks(t, got, want)
	}
}

// The lexicon of a server's scope (its books and the shared ones), relinked from the shared
// library's, is the one linking both libraries' books anew gives; the server's book defines a
// term the shared books use ("Critical Fumbles") and one they define too ("Grappled").
func TestAScopeLexiconIsItsBooksLinked(t *testing.T) {
	ctx := context.Background()
	emb := embed.NewLocal(embed.LocalDims)
	l := NewLibraries(func(context.Context, string) (Store, error) { return NewMemory(Options{Embedder: emb}), nil })
	shared, _ := l.Library(ctx, SharedLibrary)
	fill(t, shared, srd(t)[:6])
	house, _ := l.Library(ctx, "7")
	fill(t, house, []ingest.Book{loadBook(t, "House A", houseA+"\n## Grappled\n\nA grappled creature may still bite. Critical fumbles end it.\n")})
	sc, _ := l.Scope(ctx, "7")
	got := sc.(*Scope).Lexicon()
	var parts []lexicon.Part
	for _, s := range []Store{house, shared} {
		parts = append(parts, s.(*Local).Lexicon().Parts...)
	}
	sameLinks(t, got, lexicon.Link(parts))
	if e := got.Terms["grappled"]; e == nil || len(e.Defs) != 2 {
		t.Errorf("Grappled, defined by both libraries: %+v", e)
	}
}
