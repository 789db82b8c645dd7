package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/caprag/caprag/config"
	"github.com/caprag/caprag/embed"
	"github.com/caprag/caprag/ingest"
	"github.com/caprag/caprag/internal/chromatest"
	"github.com/caprag/caprag/rag"
)

const houseA = `# House Rules A

## Critical Fumbles

On a natural 1 the attacker drops the weapon into the flumph pit.
`

const houseB = `# House Rules B

## Critical Fumbles

On a natural 1 the attacker loses the next turn to the gibbering tide.
`

// libraryConfigs give the settings of both stores over a fresh DATA_DIR (and collection).
func libraryConfigs() map[string]func(t *testing.T) config.Config {
	return map[string]func(t *testing.T) config.Config{
		"embedded": func(t *testing.T) config.Config {
			return config.Config{DataDir: t.TempDir(), VectorStore: "embedded", EmbeddingsProvider: "local", SearchMode: "hybrid"}
		},
		"chroma": func(t *testing.T) config.Config {
			srv := chromatest.Shared(t)
			return config.Config{DataDir: t.TempDir(), VectorStore: "chroma", ChromaURL: srv.URL, ChromaCollection: fmt.Sprintf("lib-%d", collections.Add(1)),
				ChromaTenant: "default_tenant", ChromaDatabase: "default_database", EmbeddingsProvider: "local", SearchMode: "hybrid"}
		},
	}
}

// TestLibrariesAreScoped: a server's books are found in its scope and never in another's; the
// shared books are found in every scope; DMs ("") read the shared books alone. Both stores.
func TestLibrariesAreScoped(t *testing.T) {
	for name, config := range libraryConfigs() {
		t.Run(name, func(t *testing.T) {
			cfg := config(t)
			ctx := context.Background()
			l, err := OpenLibraries(ctx, cfg, LibrariesOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			add := func(lib, book, md string) {
				s, err := l.Library(ctx, lib)
				if err != nil {
					t.Fatal(err)
				}
				if err := s.ReplaceBook(ctx, loadBook(t, book, md)); err != nil {
					t.Fatal(err)
				}
			}
			add(SharedLibrary, "core", coreMD)
			add("111", "House A", houseA)
			add("222", "House B", houseB)
			books := func(lib string) []string {
				sc, err := l.Scope(ctx, lib)
				if err != nil {
					t.Fatal(err)
				}
				docs, err := sc.Retrieve(ctx, "natural 1 fumble drops grappling", rag.SearchOptions{K: 10})
				if err != nil {
					t.Fatal(err)
				}
				var out []string
				for _, d := range docs {
					out = append(out, d.Book)
				}
				return out
			}
			for lib, want := range map[string]string{"111": "House A", "222": "House B"} {
				got := strings.Join(books(lib), ",")
				other := map[string]string{"111": "House B", "222": "House A"}[lib]
				if !strings.Contains(got, want) || !strings.Contains(got, "core") || strings.Contains(got, other) {
					t.Errorf("scope %s found %s; want %s and core, never %s", lib, got, want, other)
				}
			}
			if got := strings.Join(books(SharedLibrary), ","); strings.Contains(got, "House") {
				t.Errorf("the shared scope found %s", got)
			}
			sc, _ := l.Scope(ctx, "111")
			bs, _ := sc.(rag.Library).Books(ctx)
			if len(bs) != 2 || bs[0].Name != "House A" || bs[0].Library != "111" || bs[1].Library != "" {
				t.Errorf("books of scope 111: %+v", bs)
			}
			refs, _ := sc.(rag.TitleFinder).Mentions(ctx, "what about critical fumbles and grappling")
			if len(refs) == 0 {
				t.Errorf("no title named in scope 111")
			}
			va, _ := sc.(rag.Versioner).Version(ctx)
			sb, _ := l.Scope(ctx, "222")
			vb, _ := sb.(rag.Versioner).Version(ctx)
			s3, _ := l.Scope(ctx, "333")
			v3, _ := s3.(rag.Versioner).Version(ctx)
			s4, _ := l.Scope(ctx, "444")
			v4, _ := s4.(rag.Versioner).Version(ctx)
			if va == vb || v3 != v4 || v3 == va {
				t.Errorf("versions: A %q B %q, two servers without books %q %q", va, vb, v3, v4)
			}
			// A question of a server without books creates nothing (no folder, no collection).
			if ok, err := l.exists(ctx, "333"); ok || err != nil {
				t.Errorf("the scope of a server without books created its library (%v)", err)
			}
			ids, err := l.List(ctx)
			if err != nil || strings.Join(ids, ",") != "111,222" {
				t.Errorf("libraries listed: %v %v", ids, err)
			}
		})
	}
}

// TestBooksOfAnotherProcessReachTheRunningOne: a second process (another Libraries on the same
// DATA_DIR or Chroma server, as `caprag ingest --server` is) adds a book; the first finds it
// after the refresh interval, without reopening. Both stores.
func TestBooksOfAnotherProcessReachTheRunningOne(t *testing.T) {
	for name, config := range libraryConfigs() {
		t.Run(name, func(t *testing.T) {
			cfg := config(t)
			ctx := context.Background()
			now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			bot, err := OpenLibraries(ctx, cfg, LibrariesOptions{Refresh: time.Second, Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			defer bot.Close()
			find := func(lib string) bool {
				sc, err := bot.Scope(ctx, lib)
				if err != nil {
					t.Fatal(err)
				}
				docs, _ := sc.Retrieve(ctx, "flumph pit", rag.SearchOptions{K: 3})
				return len(docs) > 0 && docs[0].Book == "House A"
			}
			if find("111") || find(SharedLibrary) {
				t.Fatal("found before it was added")
			}
			cli, err := OpenLibraries(ctx, cfg, LibrariesOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, lib := range []string{"111", SharedLibrary} {
				s, _ := cli.Library(ctx, lib)
				if err := s.ReplaceBook(ctx, loadBook(t, "House A", houseA)); err != nil {
					t.Fatal(err)
				}
			}
			cli.Close()
			now = now.Add(2 * time.Second)
			if !find("111") || !find(SharedLibrary) {
				t.Fatal("the running process did not see the books another process added")
			}
		})
	}
}

// TestAScopeOfTwoLibrariesLinksTheirBooks: the lexicon of a server's scope knows the terms of its
// books and of the shared ones, and is built once for a set of books.
func TestAScopeOfTwoLibrariesLinksTheirBooks(t *testing.T) {
	ctx := context.Background()
	emb := embed.NewLocal(embed.LocalDims)
	l := NewLibraries(func(context.Context, string) (Store, error) { return NewMemory(Options{Embedder: emb}), nil })
	for lib, b := range map[string]ingest.Book{SharedLibrary: loadBook(t, "cond", condMD), "7": loadBook(t, "House A", houseA)} {
		s, _ := l.Library(ctx, lib)
		if err := s.ReplaceBook(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	sc, _ := l.Scope(ctx, "7")
	lx := sc.(*Scope).Lexicon()
	if lx == nil || len(lx.Parts) != 2 {
		t.Fatalf("lexicon of the scope: %+v", lx)
	}
	again, _ := l.Scope(ctx, "7")
	if again.(*Scope).Lexicon() != lx {
		t.Fatal("the scope's lexicon was built again for the same books")
	}
	shared, _ := l.Scope(ctx, SharedLibrary)
	if lx := shared.(*Scope).Lexicon(); lx == nil || len(lx.Parts) != 1 {
		t.Fatalf("the shared scope's lexicon: %+v", lx)
	}
}
