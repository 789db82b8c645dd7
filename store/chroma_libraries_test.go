package store

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	chroma "github.com/amikos-tech/chroma-go/pkg/api/v2"
	chromaemb "github.com/amikos-tech/chroma-go/pkg/embeddings"
	"golang.org/x/sync/errgroup"

	"github.com/caprag/caprag/embed"
	"github.com/caprag/caprag/evalset"
	"github.com/caprag/caprag/ingest"
	"github.com/caprag/caprag/internal/chromatest"
	"github.com/caprag/caprag/internal/testenv"
	"github.com/caprag/caprag/passage"
)

// TestChromaLibraryLayouts measures the two ways a Chroma server can keep per-server libraries,
// for the vector ranking a server's question needs (its books and the shared ones): one
// collection per library (two queries, run side by side, merged) or one collection with a
// "library" metadata field (one query filtered by `library IN (shared, server)`). The SRD's
// books are split: 11 shared, 4 servers with one each. It prints the latencies; run with
//
//	CAPRAG_CHROMA_LIBRARIES=1 go test -run ChromaLibraryLayouts -v ./store/
func TestChromaLibraryLayouts(t *testing.T) {
	if os.Getenv("CAPRAG_CHROMA_LIBRARIES") == "" {
		t.Skip("a measurement: set CAPRAG_CHROMA_LIBRARIES=1")
	}
	ctx := context.Background()
	srv := chromatest.Shared(t)
	emb := embed.NewLocal(embed.LocalDims)
	books := srd(t)
	servers := []string{"101", "102", "103", "104"}
	qs, err := evalset.Load(testenv.EvalSet(t))
	if err != nil {
		t.Fatal(err)
	}
	// Per library: each library a store (collection) of its own, as Libraries keeps them.
	per := map[string]*Chroma{}
	parts := map[string][]ingest.Book{}
	base := fmt.Sprintf("layout-%d", collections.Add(1))
	for i, lib := range append([]string{SharedLibrary}, servers...) {
		c, err := OpenChroma(ctx, ChromaOptions{URL: srv.URL, Collection: LibraryCollection(base, lib), Tenant: "default_tenant", Database: "default_database"}, Options{Embedder: emb, Mode: Vector})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		part := books[:len(books)-len(servers)]
		if i > 0 {
			part = books[len(books)-len(servers)+i-1 : len(books)-len(servers)+i]
		}
		fill(t, c, part)
		per[lib] = c
		parts[lib] = part
	}
	// One collection: every entry with its library in metadata.
	client, err := chroma.NewHTTPClient(chroma.WithBaseURL(srv.URL), chroma.WithDatabaseAndTenant("default_database", "default_tenant"))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	one, err := client.GetOrCreateCollection(ctx, base+"-one", chroma.WithEmbeddingFunctionCreate(efAdapter{emb}), chroma.WithDisableEFConfigStorage(), chroma.WithHNSWSpaceCreate(chromaemb.COSINE))
	if err != nil {
		t.Fatal(err)
	}
	for lib, bs := range parts {
		var ps []ingest.Passage
		for _, b := range bs {
			ps = append(ps, b.Passages...)
		}
		for lo := 0; lo < len(ps); lo += chromaBatch {
			batch := ps[lo:min(len(ps), lo+chromaBatch)]
			ids := make([]chroma.DocumentID, len(batch))
			metas := make([]chroma.DocumentMetadata, len(batch))
			vecs := make([]chromaemb.Embedding, len(batch))
			texts := make([]string, len(batch))
			for i, p := range batch {
				texts[i] = passage.LastHeading(p.Section) + "\n" + p.Text // as the store embeds them
			}
			vs, err := emb.EmbedDocuments(ctx, texts)
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range batch {
				ids[i] = chroma.DocumentID(lib + "/" + p.ID)
				metas[i] = chroma.NewDocumentMetadata(chroma.NewStringAttribute("library", "s"+lib))
				vecs[i] = chromaemb.NewEmbeddingFromFloat32(vs[i])
			}
			if err := one.Upsert(ctx, chroma.WithIDs(ids...), chroma.WithMetadatas(metas...), chroma.WithEmbeddings(vecs...)); err != nil {
				t.Fatal(err)
			}
		}
	}
	var perTimes, oneTimes []time.Duration
	for round := range 2 {
		for _, q := range qs {
			vec, err := emb.EmbedQuery(ctx, q.Question)
			if err != nil {
				t.Fatal(err)
			}
			for _, lib := range servers {
				start := time.Now()
				g, gctx := errgroup.WithContext(ctx)
				for _, l := range []string{SharedLibrary, lib} {
					g.Go(func() error { _, err := per[l].nearest(gctx, per[l].cur.Load(), vec, 50, nil); return err })
				}
				if err := g.Wait(); err != nil {
					t.Fatal(err)
				}
				d1 := time.Since(start)
				start = time.Now()
				_, err := one.Query(ctx, chroma.WithQueryEmbeddings(chromaemb.NewEmbeddingFromFloat32(vec)), chroma.WithNResults(50),
					chroma.WithWhere(chroma.InString("library", "s", "s"+lib)), chroma.WithInclude(chroma.IncludeDistances))
				if err != nil {
					t.Fatal(err)
				}
				if round > 0 { // the first round warms both
					perTimes = append(perTimes, d1)
					oneTimes = append(oneTimes, time.Since(start))
				}
			}
		}
	}
	// Removing a server's library: a collection deleted, or its entries deleted by filter.
	start := time.Now()
	if err := client.DeleteCollection(ctx, LibraryCollection(base, servers[0])); err != nil {
		t.Fatal(err)
	}
	dropPer := time.Since(start)
	start = time.Now()
	if err := one.Delete(ctx, chroma.WithWhereDelete(chroma.EqString("library", "s"+servers[0]))); err != nil {
		t.Fatal(err)
	}
	dropOne := time.Since(start)
	p := func(ds []time.Duration, q float64) time.Duration {
		slices.Sort(ds)
		return ds[int(q*float64(len(ds)-1))].Round(100 * time.Microsecond)
	}
	t.Logf("%d queries (45 dev questions × 4 servers), top 50 vectors of {shared + server}:", len(perTimes))
	t.Logf("collection per library (2 queries side by side): p50 %s p95 %s; removing a library %s", p(perTimes, 0.5), p(perTimes, 0.95), dropPer.Round(time.Millisecond))
	t.Logf("one collection, library in metadata (1 filtered query): p50 %s p95 %s; removing a library %s", p(oneTimes, 0.5), p(oneTimes, 0.95), dropOne.Round(time.Millisecond))
}
