package store

import (
	"context"
	"slices"
	"testing"

	"github.com/caprag/caprag/embed"
	"github.com/caprag/caprag/ingest"
	"github.com/caprag/caprag/rag"
)

// A bestiary written for this test: two creatures whose stat blocks share the heading
// "Actions", the way every creature's does.
const bestiaryMD = `# Creatures

## Cave Bear

A huge bear of the deep caves. It sleeps through the winter in a den of stones.

### Actions

Maul. Melee attack: the target takes slashing damage and must make a saving throw or become stunned.

## Marsh Wyrm

A long swamp serpent that hunts from the reeds.

### Actions

Venom Fang. Melee attack: the target takes poison damage and is paralyzed until the poison ends.
`

// The table of contents lists each book's sections once, in reading order, of the books asked
// for; a title several sections share resolves, given with the heading above it, to that one
// section.
func TestContentsAndTitlesByPath(t *testing.T) {
	ctx := context.Background()
	s := NewMemory(Options{Embedder: embed.NewLocal(embed.LocalDims)})
	if err := s.ReplaceBooks(ctx, []ingest.Book{loadBook(t, "bestiary", bestiaryMD), loadBook(t, "conditions", condMD)}, nil); err != nil {
		t.Fatal(err)
	}
	got, err := s.Contents(ctx, rag.SearchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []rag.Heading{
		{Book: "bestiary", Section: "Creatures > Cave Bear"}, {Book: "bestiary", Section: "Creatures > Cave Bear > Actions"},
		{Book: "bestiary", Section: "Creatures > Marsh Wyrm"}, {Book: "bestiary", Section: "Creatures > Marsh Wyrm > Actions"},
		{Book: "conditions", Section: "Conditions > Grappled"}, {Book: "conditions", Section: "Conditions > Prone"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("contents\n%v\nwant\n%v", got, want)
	}
	only, _ := s.Contents(ctx, rag.SearchOptions{Books: []string{"Conditions"}})
	if !slices.Equal(only, want[4:]) {
		t.Errorf("contents of the conditions book: %v", only)
	}
	for target, section := range map[string]string{
		"Marsh Wyrm > Actions":            "Creatures > Marsh Wyrm > Actions",
		"creatures > cave bear > actions": "Creatures > Cave Bear > Actions",
		"Prone":                           "Conditions > Prone",
	} {
		docs, err := s.Resolve(ctx, rag.Document{}, rag.Reference{Kind: rag.RefSee, Text: target, Target: target}, rag.SearchOptions{K: 2})
		if err != nil || len(docs) != 1 || docs[0].Section != section {
			var got []string
			for _, d := range docs {
				got = append(got, d.Section)
			}
			t.Errorf("%q resolves to %q (%v), want only %q", target, got, err, section)
		}
	}
}

// A server's scope lists the server's books first, then the shared ones; another server's are
// not in it.
func TestScopeContents(t *testing.T) {
	ctx := context.Background()
	emb := embed.NewLocal(embed.LocalDims)
	l := NewLibraries(func(context.Context, string) (Store, error) { return NewMemory(Options{Embedder: emb}), nil })
	for lib, b := range map[string]ingest.Book{SharedLibrary: loadBook(t, "conditions", condMD), "7": loadBook(t, "bestiary", bestiaryMD), "8": loadBook(t, "core", coreMD)} {
		s, _ := l.Library(ctx, lib)
		if err := s.ReplaceBook(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	sc, _ := l.Scope(ctx, "7")
	got, err := sc.(rag.ContentsReader).Contents(ctx, rag.SearchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var books []string
	for _, h := range got {
		if !slices.Contains(books, h.Book) {
			books = append(books, h.Book)
		}
	}
	if !slices.Equal(books, []string{"bestiary", "conditions"}) || len(got) != 6 {
		t.Errorf("scope 7 lists %d sections of %q, want 6 of bestiary then conditions", len(got), books)
	}
	// The same list for the same books (a prompt prepares it once), a new one when they change.
	again, _ := l.Scope(ctx, "7")
	if list, _ := again.(rag.ContentsReader).Contents(ctx, rag.SearchOptions{}); &list[0] != &got[0] {
		t.Errorf("the scope's table of contents was listed again for the same books")
	}
	s7, _ := l.Library(ctx, "7")
	if err := s7.ReplaceBook(ctx, loadBook(t, "bestiary", bestiaryMD+"\n## Cave Troll\n\nA troll of the deep caves.\n")); err != nil {
		t.Fatal(err)
	}
	changed, _ := l.Scope(ctx, "7")
	if list, _ := changed.(rag.ContentsReader).Contents(ctx, rag.SearchOptions{}); len(list) != 7 {
		t.Errorf("after a book changed the scope lists %d sections, want 7", len(list))
	}
	only, _ := l.Scope(ctx, "7")
	if list, _ := only.(rag.ContentsReader).Contents(ctx, rag.SearchOptions{Books: []string{"conditions"}}); len(list) != 2 {
		t.Errorf("the scope's conditions book lists %d sections, want 2", len(list))
	}
}
