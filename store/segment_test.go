package store

import (
	"compress/gzip"
	"context"
	"encoding/gob"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/caprag/caprag/embed"
	"github.com/caprag/caprag/ingest"
	"github.com/caprag/caprag/rag"
	"github.com/caprag/caprag/words"
)

// someSRD is a handful of SRD books that link to each other (conditions, rules, spells…).
func someSRD(t testing.TB) []ingest.Book {
	var out []ingest.Book
	for _, b := range srd(t) {
		switch b.Name {
		case "conditions", "rules", "spellcasting", "gamemastering", "equipment", "races":
			out = append(out, b)
		}
	}
	if len(out) != 6 {
		t.Fatalf("SRD books: %d of 6", len(out))
	}
	return out
}

// TestTopKMatchesAFullSort checks BM25's top-k selection against scoring and sorting every
// document, with and without a book filter.
func TestTopKMatchesAFullSort(t *testing.T) {
	s := NewMemory(Options{Embedder: embed.NewLocal(64)})
	fill(t, s, someSRD(t))
	v := s.cur.Load()
	if err := v.load(""); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"grappled creature speed", "cast a spell while wearing armor", "the the of", "poison damage saving throw", "xyzzy"} {
		for _, filter := range [][]string{nil, {"rules", "Conditions"}} {
			ok := v.filter(filter)
			got := v.bm25(words.Tokens(q), 20, ok)
			all := v.bm25(words.Tokens(q), v.n, ok)
			want := all[:min(20, len(all))]
			if !slices.Equal(got, want) {
				t.Fatalf("%q %v: top 20 %v, want %v", q, filter, got, want)
			}
			for i := 1; i < len(all); i++ {
				if all[i-1].s < all[i].s || all[i-1].s == all[i].s && all[i-1].g > all[i].g {
					t.Fatalf("%q: ranking out of order at %d", q, i)
				}
			}
			for _, h := range all {
				if i, _ := v.at(h.g); ok != nil && !ok[i] {
					t.Fatalf("%q: the filter let %s through", q, v.shelves[i].name)
				}
			}
		}
	}
}

// TestSparseVectorsScoreAsDense checks that the hashed embedder's vectors are stored sparse and
// score exactly as the dense rows, and learned-looking dense vectors stay dense.
func TestSparseVectorsScoreAsDense(t *testing.T) {
	ctx := context.Background()
	emb := embed.NewLocal(embed.LocalDims)
	texts := []string{"A grappled creature's speed becomes 0.", "Fireball: a bright streak flashes", "", "prone prone prone crawl"}
	vecs, _ := emb.EmbedDocuments(ctx, texts)
	v, err := decodeVectors(encodeVectors(emb.ID(), vecs))
	if err != nil {
		t.Fatal(err)
	}
	if v.dense != nil || v.size() >= 4*len(vecs)*embed.LocalDims {
		t.Fatalf("hashed vectors stored dense (%d bytes)", v.size())
	}
	q, _ := emb.EmbedQuery(ctx, "grappled speed crawl")
	got := make([]float32, len(vecs))
	v.scores(q, got)
	for i, row := range vecs {
		var want float32
		for j, x := range row {
			want += x * q[j]
		}
		if got[i] != want {
			t.Fatalf("row %d: sparse %v, dense %v", i, got[i], want)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	dense := make([][]float32, 3)
	for i := range dense {
		dense[i] = make([]float32, 16)
		for j := range dense[i] {
			dense[i][j] = float32(r.NormFloat64())
		}
	}
	d, err := decodeVectors(encodeVectors("learned", dense))
	if err != nil || d.dense == nil {
		t.Fatalf("dense vectors: %+v, %v", d, err)
	}
	ds := make([]float32, 3)
	d.scores(dense[2], ds)
	if ds[2] <= 0 || math.IsNaN(float64(ds[1])) {
		t.Fatalf("dense scores %v", ds)
	}
}

// TestLexicalSearchReadsNoVectors checks that vectors stay on disk for BM25 alone and are read by
// a hybrid search.
func TestLexicalSearchReadsNoVectors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	w, err := OpenEmbedded(ctx, dir, Options{Embedder: embed.NewLocal(embed.LocalDims)})
	if err != nil {
		t.Fatal(err)
	}
	fill(t, w, []ingest.Book{loadBook(t, "core", coreMD), loadBook(t, "conditions", condMD)})
	for _, c := range []struct {
		mode Mode
		read bool
	}{{Lexical, false}, {Hybrid, true}} {
		s, err := OpenEmbedded(ctx, dir, Options{Embedder: embed.NewLocal(embed.LocalDims), Mode: c.mode})
		if err != nil {
			t.Fatal(err)
		}
		if docs, err := s.Retrieve(ctx, "grappled speed", rag.SearchOptions{K: 2}); err != nil || len(docs) == 0 {
			t.Fatalf("%s: %+v, %v", c.mode, docs, err)
		}
		for _, sh := range s.cur.Load().shelves {
			if got := sh.seg.vecs.loaded(); got != c.read {
				t.Errorf("%s search: vectors of %s read: %v, want %v", c.mode, sh.name, got, c.read)
			}
		}
	}
}

// TestDamagedFileIsNamed flips a byte of a book's segment file: the search says which file is
// damaged instead of serving it.
func TestDamagedFileIsNamed(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	w, err := OpenEmbedded(ctx, dir, Options{Embedder: embed.NewLocal(embed.LocalDims)})
	if err != nil {
		t.Fatal(err)
	}
	fill(t, w, []ingest.Book{loadBook(t, "core", coreMD)})
	segs, _ := filepath.Glob(filepath.Join(dir, "seg-*"))
	if len(segs) != 1 {
		t.Fatalf("segment files: %v", segs)
	}
	b, _ := os.ReadFile(segs[0])
	b[len(b)/2] ^= 0x20
	os.WriteFile(segs[0], b, 0o644)
	s, err := OpenEmbedded(ctx, dir, Options{Embedder: embed.NewLocal(embed.LocalDims)})
	if err != nil {
		t.Fatal(err)
	}
	if books, _ := s.Books(ctx); len(books) != 1 {
		t.Fatalf("books: %+v", books)
	}
	_, err = s.Retrieve(ctx, "Rapid Strike", rag.SearchOptions{K: 1})
	var de *DamagedError
	if !errors.As(err, &de) || de.Path != segs[0] || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("search over a damaged file: %v, want a DamagedError naming %s", err, segs[0])
	}
}

// FuzzDecodeSegment feeds damaged and arbitrary payloads to the segment reader: it returns an
// error or a segment, never panics, and a segment it returns can be searched.
func FuzzDecodeSegment(f *testing.F) {
	_, good := encodeSegment("core", loadBook(f, "core", coreMD).Passages, true)
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte{})
	f.Add([]byte{2, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, payload []byte) {
		s, err := decodeSegment("x", payload)
		if err != nil {
			return
		}
		for i := range s.hashes {
			docs, _ := s.postings(i)
			for _, doc := range docs {
				if int(doc) >= len(s.ps) {
					t.Fatalf("posting %d of %d children", doc, len(s.ps))
				}
			}
		}
	})
}

// TestOpenConvertsTheFormerStore: a store written before segments (one gob of every passage)
// opens with its books, converted once.
func TestOpenConvertsTheFormerStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var es []entry
	for _, b := range []ingest.Book{loadBook(t, "core", coreMD), loadBook(t, "conditions", condMD)} {
		for _, p := range b.Passages {
			es = append(es, entry{P: p, Vec: []float32{1}})
		}
	}
	f, err := os.Create(filepath.Join(dir, storeFile))
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	if err := gob.NewEncoder(zw).Encode(fileFormat{Format: 1, Embedder: "local/hashed-words-v2/2048", Entries: es}); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	f.Close()
	s, err := OpenEmbedded(ctx, dir, Options{Embedder: embed.NewLocal(embed.LocalDims)})
	if err != nil {
		t.Fatal(err)
	}
	books, _ := s.Books(ctx)
	if len(books) != 2 || books[1].Name != "core" || books[1].Passages != len(loadBook(t, "core", coreMD).Passages) {
		t.Fatalf("converted books: %+v", books)
	}
	if _, err := os.Stat(filepath.Join(dir, storeFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the former store file is still there: %v", err)
	}
	if docs, err := s.Retrieve(ctx, "Rapid Strike", rag.SearchOptions{K: 1}); err != nil || len(docs) != 1 || docs[0].Section != "Combat > Rapid Strike" {
		t.Fatalf("search after conversion: %+v, %v", docs, err)
	}
}

// TestSearchWhileBooksChange searches from several goroutines while books are added, replaced
// and removed: every search sees one whole generation (run with -race).
func TestSearchWhileBooksChange(t *testing.T) {
	ctx := context.Background()
	s, err := OpenEmbedded(ctx, t.TempDir(), Options{Embedder: embed.NewLocal(embed.LocalDims), Mode: Hybrid})
	if err != nil {
		t.Fatal(err)
	}
	fill(t, s, []ingest.Book{loadBook(t, "core", coreMD)})
	done := make(chan struct{})
	errs := make(chan error, 4)
	for range 3 {
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				docs, err := s.Retrieve(ctx, "Rapid Strike penalty", rag.SearchOptions{K: 3})
				if err == nil && (len(docs) == 0 || !strings.Contains(docs[0].Text, "penalty")) {
					err = errors.New("core's Rapid Strike not found first")
				}
				if err == nil {
					_, err = s.Mentions(ctx, "grappled and prone")
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range 10 {
		fill(t, s, []ingest.Book{loadBook(t, "conditions", condMD)})
		text := strings.Replace(coreMD, "-6 penalty", "-"+string(rune('1'+i%9))+" penalty", 1)
		fill(t, s, []ingest.Book{loadBook(t, "core", text)})
		if err := s.RemoveBook(ctx, "conditions"); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// FuzzDecodeVectors: the vectors reader returns an error or vectors it can score, never panics
// and never allocates for counts its bytes cannot hold.
func FuzzDecodeVectors(f *testing.F) {
	emb := embed.NewLocal(64)
	vecs, _ := emb.EmbedDocuments(context.Background(), []string{"grappled creature", "prone crawl"})
	f.Add(encodeVectors(emb.ID(), vecs))
	f.Add(encodeVectors("learned", [][]float32{{0.5, -0.5}, {1, 0}}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, payload []byte) {
		v, err := decodeVectors(payload)
		if err != nil || v.dims > 4096 {
			return
		}
		q := make([]float32, v.dims)
		for i := range q {
			q[i] = 1
		}
		v.scores(q, make([]float32, v.n))
	})
}

// TestSearchWithoutRefsLinksNothing: a search that asks for no references (caprag search)
// returns the same ranking without linking the library's lexicon; one that does gets the refs.
func TestSearchWithoutRefsLinksNothing(t *testing.T) {
	ctx := context.Background()
	s := NewMemory(Options{Embedder: embed.NewLocal(embed.LocalDims)})
	fill(t, s, []ingest.Book{loadBook(t, "core", coreMD), loadBook(t, "conditions", condMD)})
	bare, err := s.Retrieve(ctx, "grapple", rag.SearchOptions{K: 2, NoRefs: true})
	if err != nil || len(bare) == 0 {
		t.Fatalf("%+v, %v", bare, err)
	}
	if s.cur.Load().lex.lx != nil {
		t.Fatal("a search without references linked the lexicon")
	}
	full, _ := s.Retrieve(ctx, "grapple", rag.SearchOptions{K: 2})
	refs := func(ds []rag.Document) (n int) {
		for _, d := range ds {
			n += len(d.Refs)
		}
		return n
	}
	if len(full) != len(bare) || full[0].ID != bare[0].ID || full[1].ID != bare[1].ID || refs(bare) != 0 || refs(full) == 0 {
		t.Fatalf("without refs %+v\nwith refs %+v", bare, full)
	}
}
