package store

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/caprag/caprag/embed"
	"github.com/caprag/caprag/ingest"
	"github.com/caprag/caprag/rag"
)

// countingEmbedder is a learned-vector stand-in (not the hashed local embedder) that counts queries.
type countingEmbedder struct {
	*embed.Local
	queries atomic.Int32
}

func (c *countingEmbedder) EmbedQuery(ctx context.Context, q string) ([]float32, error) {
	c.queries.Add(1)
	return c.Local.EmbedQuery(ctx, q)
}

func (c *countingEmbedder) ID() string { return "counting/" + c.Local.ID() }

func TestAutoModeFollowsTheEmbedder(t *testing.T) {
	local := embed.NewLocal(embed.LocalDims)
	other := &countingEmbedder{Local: local}
	for _, c := range []struct {
		mode Mode
		emb  embed.Embedder
		want Mode
	}{
		{"", local, Lexical}, {Auto, local, Lexical}, {Auto, other, Hybrid}, {"", other, Hybrid},
		{Hybrid, local, Hybrid}, {Vector, local, Vector}, {Lexical, other, Lexical},
	} {
		if got := c.mode.resolve(c.emb); got != c.want {
			t.Errorf("%q with %s resolves to %q, want %q", c.mode, c.emb.ID(), got, c.want)
		}
	}
}

func TestLexicalSearchEmbedsNoQuery(t *testing.T) {
	ctx := context.Background()
	emb := &countingEmbedder{Local: embed.NewLocal(embed.LocalDims)}
	for _, c := range []struct {
		mode    Mode
		queries int32
	}{{Lexical, 0}, {Hybrid, 1}} {
		emb.queries.Store(0)
		s := NewMemory(Options{Embedder: emb, Mode: c.mode})
		fill(t, s, []ingest.Book{loadBook(t, "core", coreMD)})
		docs, err := s.Retrieve(ctx, "Rapid Strike", rag.SearchOptions{K: 1})
		if err != nil || len(docs) != 1 || docs[0].Section != "Combat > Rapid Strike" {
			t.Fatalf("%s: %+v, %v", c.mode, docs, err)
		}
		if got := emb.queries.Load(); got != c.queries {
			t.Errorf("%s search embedded %d queries, want %d", c.mode, got, c.queries)
		}
	}
}
