package store

import (
	"context"
	"os"
	"testing"

	"github.com/caprag/caprag/embed"
	"github.com/caprag/caprag/evalset"
	"github.com/caprag/caprag/internal/testenv"
	"github.com/caprag/caprag/rag"
)

// BenchmarkLibrarySearch times searches of the dev questions over an embedded store already on
// disk (CAPRAG_BENCH_DIR, a DATA_DIR/books folder; scripts/bench-scale builds the 10× and 30×
// libraries) and reports p50 and p95, for BM25 alone (the default with the local embedder) and
// forced hybrid. Skipped without CAPRAG_BENCH_DIR.
func BenchmarkLibrarySearch(b *testing.B) {
	dir := os.Getenv("CAPRAG_BENCH_DIR")
	if dir == "" {
		b.Skip("CAPRAG_BENCH_DIR names no library")
	}
	qs, err := evalset.Load(testenv.EvalSet(b))
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []Mode{Lexical, Hybrid} {
		b.Run(string(mode), func(b *testing.B) {
			s, err := OpenEmbedded(context.Background(), dir, Options{Embedder: embed.NewLocal(embed.LocalDims), Mode: mode})
			if err != nil {
				b.Fatal(err)
			}
			// The first search reads the books; the figures are of a library already open.
			if _, err := s.Retrieve(context.Background(), "grappled", rag.SearchOptions{K: 5}); err != nil {
				b.Fatal(err)
			}
			timeSearches(b, s, qs)
		})
	}
}
