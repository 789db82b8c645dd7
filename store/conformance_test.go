package store

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/caprag/caprag/embed"
	"github.com/caprag/caprag/ingest"
	"github.com/caprag/caprag/lexicon"
	"github.com/caprag/caprag/offline"
	"github.com/caprag/caprag/rag"
	"github.com/caprag/caprag/words"
)

const coreMD = `# Combat

## Grappling

When you want to grab a creature or wrestle with it, you can use the Attack action to make a special melee attack, a grapple. If you succeed, you subject the target to the grappled condition (see Conditions).

## Cover

Walls, trees, creatures, and other obstacles can provide cover during combat. Half cover gives a +2 bonus to AC. See page 12.

**Total Cover.** A target with total cover can't be targeted directly by an attack or a spell.

## Rapid Strike

A Rapid Strike lets you attack twice with a -6 penalty on each attack.
`

const condMD = `# Conditions

## Grappled

A grappled creature's speed becomes 0, and it can't benefit from any bonus to its speed.

## Prone

A prone creature's only movement option is to crawl.
`

func loadBook(t testing.TB, name, md string) ingest.Book {
	t.Helper()
	b, err := ingest.LoadBytes(context.Background(), name+".md", []byte(md), ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return *b
}

// conformance is the behaviour every store shares; it runs against each backend.
// It runs the hybrid ranking, so that each backend's vector search is part of every search.
func conformance(t *testing.T, open func(t *testing.T, opts Options) Store) {
	ctx := context.Background()
	emb := embed.NewLocal(embed.LocalDims)
	newStore := func(t *testing.T) Store {
		s := open(t, Options{Embedder: emb, Mode: Hybrid})
		books := []ingest.Book{loadBook(t, "core", coreMD), loadBook(t, "conditions", condMD)}
		last, total := 0, 0
		err := s.ReplaceBooks(ctx, books, func(done, n int) {
			if done <= last || done > n {
				t.Errorf("embedding progress went %d → %d of %d", last, done, n)
			}
			last, total = done, n
		})
		if err != nil {
			t.Fatal(err)
		}
		if want := len(books[0].Passages) + len(books[1].Passages); last != want || total != want {
			t.Fatalf("embedding progress ended at %d of %d, want %d of %d", last, total, want, want)
		}
		return s
	}
	t.Run("BooksWithCounts", func(t *testing.T) {
		s := newStore(t)
		books, err := s.Books(ctx)
		if err != nil || len(books) != 2 || books[0].Name != "conditions" || books[1].Name != "core" || books[0].Passages == 0 {
			t.Fatalf("Books = %+v, %v", books, err)
		}
	})
	t.Run("ProperNameFoundFirst", func(t *testing.T) {
		s := newStore(t)
		docs, err := s.Retrieve(ctx, "How does Rapid Strike work?", rag.SearchOptions{K: 3})
		if err != nil || len(docs) == 0 {
			t.Fatalf("Retrieve: %v, %v", docs, err)
		}
		if docs[0].Section != "Combat > Rapid Strike" || docs[0].Book != "core" {
			t.Fatalf("first result %s / %s, want core / Combat > Rapid Strike", docs[0].Book, docs[0].Section)
		}
		if !strings.Contains(docs[0].Text, "-6 penalty") || docs[0].Match == "" || docs[0].Score <= 0 {
			t.Fatalf("document lacks parent text, match or score: %+v", docs[0])
		}
	})
	t.Run("TableOfContents", func(t *testing.T) {
		s := newStore(t)
		cr, ok := s.(rag.ContentsReader)
		if !ok {
			t.Fatal("the store lists no table of contents")
		}
		toc, err := cr.Contents(ctx, rag.SearchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, h := range toc {
			got = append(got, h.Book+": "+h.Section)
		}
		slices.Sort(got)
		want := []string{"conditions: Conditions > Grappled", "conditions: Conditions > Prone", "core: Combat > Cover", "core: Combat > Grappling", "core: Combat > Rapid Strike"}
		if !slices.Equal(got, want) {
			t.Errorf("contents %q, want %q", got, want)
		}
		docs, err := s.Resolve(ctx, rag.Document{}, rag.Reference{Kind: rag.RefSee, Text: "Conditions > Prone", Target: "Conditions > Prone"}, rag.SearchOptions{K: 2})
		if err != nil || len(docs) != 1 || docs[0].Section != "Conditions > Prone" {
			t.Errorf("a title with the heading above it resolved to %+v (%v)", docs, err)
		}
	})
	t.Run("BookFilter", func(t *testing.T) {
		s := newStore(t)
		docs, _ := s.Retrieve(ctx, "grappled creature speed", rag.SearchOptions{K: 5, Books: []string{"Core"}})
		for _, d := range docs {
			if d.Book != "core" {
				t.Fatalf("book filter let %s through", d.Book)
			}
		}
		if len(docs) == 0 {
			t.Fatal("nothing found in core")
		}
	})
	t.Run("ReingestKeepsCount", func(t *testing.T) {
		s := newStore(t)
		before, _ := s.Books(ctx)
		v1, _ := s.Version(ctx)
		if err := s.ReplaceBook(ctx, loadBook(t, "core", coreMD)); err != nil {
			t.Fatal(err)
		}
		after, _ := s.Books(ctx)
		if before[1].Passages != after[1].Passages {
			t.Fatalf("re-ingest changed count %d → %d", before[1].Passages, after[1].Passages)
		}
		if v2, _ := s.Version(ctx); v2 != v1 {
			t.Fatal("re-ingesting identical text changed the version")
		}
		// A changed book replaces the old passages: no stale text.
		if err := s.ReplaceBook(ctx, loadBook(t, "core", "# Combat\n\n## Rapid Strike\n\nNow a -4 penalty.")); err != nil {
			t.Fatal(err)
		}
		docs, _ := s.Retrieve(ctx, "Rapid Strike penalty", rag.SearchOptions{K: 5, Books: []string{"core"}})
		if len(docs) != 1 || !strings.Contains(docs[0].Text, "-4") {
			t.Fatalf("stale passages after replacing the book: %+v", docs)
		}
		if v3, _ := s.Version(ctx); v3 == v1 {
			t.Fatal("version unchanged after the book changed")
		}
	})
	t.Run("ReplaceBooksLeavesOthersAlone", func(t *testing.T) {
		s := newStore(t)
		changed := loadBook(t, "core", "# Combat\n\n## Rapid Strike\n\nNow a -4 penalty.")
		added := loadBook(t, "spells", "# Spells\n\n## Fireball\n\nA bright streak flashes to a point you choose.")
		if err := s.ReplaceBooks(ctx, []ingest.Book{changed, added}, nil); err != nil {
			t.Fatal(err)
		}
		books, _ := s.Books(ctx)
		if len(books) != 3 || books[0].Name != "conditions" || books[1].Name != "core" || books[1].Passages != 1 || books[2].Name != "spells" {
			t.Fatalf("books after replacing two of them together: %+v", books)
		}
		if docs, _ := s.Retrieve(ctx, "prone crawl", rag.SearchOptions{K: 1}); len(docs) == 0 || docs[0].Book != "conditions" {
			t.Fatalf("the book left out of the batch lost its passages: %+v", docs)
		}
		if err := s.ReplaceBooks(ctx, []ingest.Book{added, {Name: "empty"}}, nil); err == nil {
			t.Fatal("a book with no passages was accepted")
		}
	})
	t.Run("RemoveBook", func(t *testing.T) {
		s := newStore(t)
		if err := s.RemoveBook(ctx, "conditions"); err != nil {
			t.Fatal(err)
		}
		if err := s.RemoveBook(ctx, "conditions"); !errors.Is(err, ErrNoBook) {
			t.Fatalf("removing twice: %v, want ErrNoBook", err)
		}
		books, _ := s.Books(ctx)
		if len(books) != 1 {
			t.Fatalf("books after removal: %+v", books)
		}
	})
	t.Run("LexiconFollowsTheBooks", func(t *testing.T) {
		s := newStore(t)
		lib, ok := s.(interface{ Lexicon() *lexicon.Lexicon })
		if !ok {
			t.Fatal("the store does not give the books' lexicon")
		}
		docs, _ := s.Retrieve(ctx, "grapple", rag.SearchOptions{K: 1, Books: []string{"core"}})
		if len(docs) != 1 || !slices.ContainsFunc(docs[0].Refs, func(r rag.Reference) bool {
			return r.Target == "Grappled" && r.Book == "conditions" && r.ID != "" && r.Weight > 0
		}) {
			t.Fatalf("refs %+v, want Grappled of conditions by ID, weighted", docs)
		}
		if e := lib.Lexicon().Terms["grappled"]; e == nil {
			t.Fatal("the lexicon lacks Grappled")
		}
		if err := s.RemoveBook(ctx, "conditions"); err != nil {
			t.Fatal(err)
		}
		if e := lib.Lexicon().Terms["grappled"]; e != nil {
			t.Errorf("after removing conditions the lexicon still defines Grappled: %+v", e)
		}
	})
	t.Run("CrossBookReferencesResolve", func(t *testing.T) {
		s := newStore(t)
		docs, _ := s.Retrieve(ctx, "grapple", rag.SearchOptions{K: 1, Books: []string{"core"}})
		if len(docs) != 1 {
			t.Fatal("grappling not found")
		}
		var mention *rag.Reference
		for _, r := range docs[0].Refs {
			if r.Kind == rag.RefMention && r.Target == "Grappled" {
				mention = &r
			}
		}
		if mention == nil {
			t.Fatalf("no mention of Grappled in %+v", docs[0].Refs)
		}
		got, err := s.Resolve(ctx, docs[0], *mention, rag.SearchOptions{K: 2})
		if err != nil || len(got) == 0 || got[0].Book != "conditions" || got[0].Section != "Conditions > Grappled" {
			t.Fatalf("Resolve(Grappled) = %+v, %v", got, err)
		}
	})
	t.Run("QuestionNamesARuleDefinedInASection", func(t *testing.T) {
		s := newStore(t)
		tf, ok := s.(rag.TitleFinder)
		if !ok {
			t.Fatal("the store does not find the rules a question names")
		}
		refs, err := tf.Mentions(ctx, "Can the archers still shoot me behind total cover?")
		i := slices.IndexFunc(refs, func(r rag.Reference) bool { return r.Target == "Total Cover" && r.Book == "core" })
		if err != nil || i < 0 {
			t.Fatalf("Mentions = %+v, %v; want the rule Total Cover of core", refs, err)
		}
		got, err := s.Resolve(ctx, rag.Document{}, refs[i], rag.SearchOptions{K: 1})
		if err != nil || len(got) != 1 || got[0].Section != "Combat > Cover" || !strings.Contains(got[0].Text, "Total Cover. A target") {
			t.Fatalf("Resolve(Total Cover) = %+v, %v; want the Cover passage defining it", got, err)
		}
	})
	t.Run("WordFrequency", func(t *testing.T) {
		// The offline writer weighs a question's words by how many passages use them.
		v, ok := newStore(t).(offline.Vocabulary)
		if !ok {
			t.Fatal("the store does not tell word frequencies (offline.Vocabulary)")
		}
		grappl, total := v.Frequency(words.Stem("grappled"))
		crawl, _ := v.Frequency(words.Stem("crawl"))
		none, _ := v.Frequency("zeppelin")
		if total < 3 || grappl < 2 || crawl != 1 || none != 0 || grappl >= total {
			t.Fatalf("Frequency: grappl %d, crawl %d, zeppelin %d of %d passages", grappl, crawl, none, total)
		}
	})
	t.Run("EmptyQuery", func(t *testing.T) {
		s := newStore(t)
		docs, err := s.Retrieve(ctx, "   ", rag.SearchOptions{K: 5})
		if err != nil || len(docs) != 0 {
			t.Fatalf("empty query: %v, %v", docs, err)
		}
	})
}

func TestMemoryStore(t *testing.T) {
	conformance(t, func(t *testing.T, opts Options) Store { return NewMemory(opts) })
}

func TestEmbeddedStore(t *testing.T) {
	conformance(t, func(t *testing.T, opts Options) Store {
		s, err := OpenEmbedded(context.Background(), t.TempDir(), opts)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestEmbeddedStorePersistsAndChecksTheEmbedder(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := OpenEmbedded(ctx, dir, Options{Embedder: embed.NewLocal(embed.LocalDims)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ReplaceBooks(ctx, []ingest.Book{loadBook(t, "core", coreMD), loadBook(t, "conditions", condMD)}, nil); err != nil {
		t.Fatal(err)
	}
	v, _ := s.Version(ctx)
	s2, err := OpenEmbedded(ctx, dir, Options{Embedder: embed.NewLocal(embed.LocalDims)})
	if err != nil {
		t.Fatal(err)
	}
	v2, _ := s2.Version(ctx)
	books, _ := s2.Books(ctx)
	if v2 != v || len(books) != 2 {
		t.Fatalf("reopened store: version %s vs %s, books %+v", v2, v, books)
	}
	// Another embedder: the books still list, search by BM25 and can be removed; a search that
	// reads vectors says how to embed them again, and --reindex does.
	other := embed.NewLocal(256)
	s3, err := OpenEmbedded(ctx, dir, Options{Embedder: other, Mode: Lexical})
	if err != nil {
		t.Fatalf("opening with another embedder: %v", err)
	}
	if docs, err := s3.Retrieve(ctx, "Rapid Strike", rag.SearchOptions{K: 1}); err != nil || len(docs) != 1 {
		t.Fatalf("lexical search with another embedder: %+v, %v", docs, err)
	}
	s4, err := OpenEmbedded(ctx, dir, Options{Embedder: other, Mode: Hybrid})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s4.Retrieve(ctx, "Rapid Strike", rag.SearchOptions{K: 1})
	if !errors.Is(err, rag.ErrEmbedderMismatch) || !strings.Contains(err.Error(), "--reindex") {
		t.Fatalf("hybrid search with another embedder: %v, want ErrEmbedderMismatch saying --reindex", err)
	}
	n, err := s4.Reindex(ctx, false, nil)
	if err != nil || n != 2 {
		t.Fatalf("Reindex = %d, %v; want 2 books", n, err)
	}
	s5, err := OpenEmbedded(ctx, dir, Options{Embedder: other, Mode: Hybrid})
	if err != nil {
		t.Fatal(err)
	}
	if docs, err := s5.Retrieve(ctx, "Rapid Strike", rag.SearchOptions{K: 1}); err != nil || len(docs) != 1 || docs[0].Section != "Combat > Rapid Strike" {
		t.Fatalf("hybrid search after --reindex: %+v, %v", docs, err)
	}
	if err := s5.RemoveBook(ctx, "conditions"); err != nil {
		t.Fatal(err)
	}
	if err := s3.RemoveBook(ctx, "core"); err != nil { // an older handle sees the other's change
		t.Fatal(err)
	}
	if books, _ := s5.Books(ctx); len(books) != 1 {
		t.Fatalf("books before refresh: %+v", books)
	}
	if ok, err := s5.Refresh(ctx); !ok || err != nil {
		t.Fatalf("Refresh = %v, %v", ok, err)
	}
	if books, _ := s5.Books(ctx); len(books) != 0 {
		t.Fatalf("books after both removals: %+v", books)
	}
}
