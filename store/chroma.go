package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	chroma "github.com/amikos-tech/chroma-go/pkg/api/v2"
	chromaemb "github.com/amikos-tech/chroma-go/pkg/embeddings"

	"github.com/caprag/caprag/embed"
	"github.com/caprag/caprag/ingest"
	"github.com/caprag/caprag/rag"
)

// ChromaOptions locate a Chroma collection.
type ChromaOptions struct {
	URL, Collection, Tenant, Database string
	// Timeout bounds each HTTP request (default 30 s).
	Timeout time.Duration
	// LockDir is DATA_DIR: writers of the collection take the writer lock there, keyed by the
	// server and collection (no lock when empty).
	LockDir string
}

// embedderKey is the collection metadata that records which embedder built the collection.
const embedderKey = "caprag_embedder"

// chromaBatch is how many records go in one request.
const chromaBatch = 500

// Chroma is the store on a Chroma server. The collection holds the child chunks with our
// embeddings, their parent text and where they come from; the passages' text is also loaded into
// memory at open, for BM25 and reference links.
type Chroma struct {
	*index
	client   chroma.Client
	col      chroma.Collection
	url      string
	lockPath string
	lockOpt  LockOptions
	// published is the books' version last read from or written to the collection's metadata
	// (refresh.go); x.mu guards it.
	published string
}

// chromaLockPath is the lock of one collection under DATA_DIR/locks: the collection's name for
// people, a hash of server, tenant, database and collection to tell collections apart.
func chromaLockPath(dir string, co ChromaOptions) string {
	h := sha256.Sum256([]byte(strings.Join([]string{strings.TrimRight(co.URL, "/"), co.Tenant, co.Database, co.Collection}, "\x00")))
	name := strings.Map(func(r rune) rune {
		if r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_') {
			return r
		}
		return '_'
	}, co.Collection)
	if len(name) > 40 {
		name = name[:40]
	}
	return filepath.Join(dir, "locks", "chroma-"+name+"-"+hex.EncodeToString(h[:6])+".lock")
}

// OpenChroma connects to the collection (creating it) and loads its passages.
func OpenChroma(ctx context.Context, co ChromaOptions, opts Options) (*Chroma, error) {
	if co.Timeout == 0 {
		co.Timeout = 30 * time.Second
	}
	client, err := chroma.NewHTTPClient(
		chroma.WithBaseURL(co.URL),
		chroma.WithDatabaseAndTenant(co.Database, co.Tenant),
		chroma.WithHTTPClient(&http.Client{Timeout: co.Timeout}),
	)
	if err != nil {
		return nil, fmt.Errorf("Chroma client for %s: %w", co.URL, err)
	}
	c := &Chroma{client: client, url: co.URL}
	if co.LockDir != "" {
		c.lockPath = chromaLockPath(co.LockDir, co)
		c.lockOpt = LockOptions{Timeout: opts.LockTimeout, Waiting: opts.Waiting}
	}
	col, err := client.GetOrCreateCollection(ctx, co.Collection,
		chroma.WithEmbeddingFunctionCreate(efAdapter{opts.Embedder}),
		chroma.WithDisableEFConfigStorage(),
		chroma.WithHNSWSpaceCreate(chromaemb.COSINE),
		chroma.WithCollectionMetadataCreate(chroma.NewMetadata(chroma.NewStringAttribute(embedderKey, opts.Embedder.ID()))),
	)
	if err != nil {
		client.Close()
		return nil, c.wrap("opening the collection "+co.Collection, err)
	}
	c.col = col
	c.index = newIndex(opts.Embedder, opts.Mode, c)
	// Read under a shared lock: a writer on this machine never shows half a book.
	err = c.locked(ctx, Shared, func() error { return c.load(ctx) })
	if err != nil {
		client.Close()
		return nil, err
	}
	if c.lockPath != "" {
		c.beginWrite = c.lockForWrite
	}
	c.published, _ = col.Metadata().GetString(versionKey)
	c.onChange = c.publish
	if id, ok := col.Metadata().GetString(embedderKey); ok && id != opts.Embedder.ID() && len(c.entries) > 0 {
		client.Close()
		return nil, fmt.Errorf("the books in Chroma collection %q were indexed with %s, the settings ask for %s: %w", co.Collection, id, opts.Embedder.ID(), rag.ErrEmbedderMismatch)
	}
	return c, nil
}

// wrap says what failed in the user's words, naming the server.
func (c *Chroma) wrap(what string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s on the Chroma server at %s: %w", what, c.url, err)
	}
	msg := err.Error()
	if strings.Contains(msg, "connection refused") || strings.Contains(msg, "no such host") || strings.Contains(msg, "Client.Timeout") {
		return fmt.Errorf("cannot reach the Chroma server at %s (%s): %w", c.url, what, err)
	}
	return fmt.Errorf("%s on the Chroma server at %s: %w", what, c.url, err)
}

// locked runs f under the collection's lock (f alone when there is no lock). A reader that
// cannot create the lock file (a read-only DATA_DIR) reads without it; one that finds it held
// past STORE_LOCK_TIMEOUT fails.
func (c *Chroma) locked(ctx context.Context, mode LockMode, f func() error) error {
	if c.lockPath == "" {
		return f()
	}
	l, err := Lock(ctx, c.lockPath, mode, c.lockOpt)
	if err != nil {
		if mode == Shared && !errors.Is(err, ErrLocked) && ctx.Err() == nil {
			return f()
		}
		return fmt.Errorf("reading the books: %w", err)
	}
	defer l.Unlock()
	return f()
}

// lockForWrite takes the collection's writer lock and reads the collection again, so that a
// change is made to what other processes have written meanwhile.
func (c *Chroma) lockForWrite(ctx context.Context) (func(), error) {
	l, err := Lock(ctx, c.lockPath, Exclusive, c.lockOpt)
	if err != nil {
		return nil, fmt.Errorf("writing the books: %w", err)
	}
	if err := c.load(ctx); err != nil {
		l.Unlock()
		return nil, err
	}
	return func() { l.Unlock() }, nil
}

// load reads every record of the collection into the index.
func (c *Chroma) load(ctx context.Context) error {
	entries := map[string]*entry{}
	for offset := 0; ; offset += chromaBatch {
		res, err := c.col.Get(ctx, chroma.WithInclude(chroma.IncludeDocuments, chroma.IncludeMetadatas, chroma.IncludeEmbeddings), chroma.WithLimit(chromaBatch), chroma.WithOffset(offset))
		if err != nil {
			return c.wrap("reading the passages", err)
		}
		ids, docs, metas, embs := res.GetIDs(), res.GetDocuments(), res.GetMetadatas(), res.GetEmbeddings()
		for i, id := range ids {
			e := &entry{P: ingest.Passage{ID: string(id)}}
			if i < len(docs) && docs[i] != nil {
				e.P.Text = docs[i].ContentString()
			}
			if i < len(metas) && metas[i] != nil {
				m := metas[i]
				e.P.Book, _ = m.GetString("book")
				e.P.Section, _ = m.GetString("section")
				e.P.Source, _ = m.GetString("source")
				e.P.ParentID, _ = m.GetString("parent_id")
				e.P.Parent, _ = m.GetString("parent")
				page, _ := m.GetInt("page")
				pos, _ := m.GetInt("position")
				e.P.Page, e.P.Position = int(page), int(pos)
			}
			if i < len(embs) && embs[i] != nil {
				e.Vec = embs[i].ContentAsFloat32()
			}
			entries[e.P.ID] = e
		}
		if len(ids) < chromaBatch {
			break
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries = entries
	c.rebuild()
	return nil
}

func (c *Chroma) put(ctx context.Context, es []entry) error {
	for start := 0; start < len(es); start += chromaBatch {
		batch := es[start:min(len(es), start+chromaBatch)]
		ids := make([]chroma.DocumentID, len(batch))
		texts := make([]string, len(batch))
		metas := make([]chroma.DocumentMetadata, len(batch))
		embs := make([]chromaemb.Embedding, len(batch))
		for i, e := range batch {
			ids[i] = chroma.DocumentID(e.P.ID)
			texts[i] = e.P.Text
			metas[i] = chroma.NewDocumentMetadata(
				chroma.NewStringAttribute("book", e.P.Book),
				chroma.NewStringAttribute("section", e.P.Section),
				chroma.NewStringAttribute("source", e.P.Source),
				chroma.NewStringAttribute("parent_id", e.P.ParentID),
				chroma.NewStringAttribute("parent", e.P.Parent),
				chroma.NewIntAttribute("page", int64(e.P.Page)),
				chroma.NewIntAttribute("position", int64(e.P.Position)),
			)
			embs[i] = chromaemb.NewEmbeddingFromFloat32(e.Vec)
		}
		if err := c.col.Upsert(ctx, chroma.WithIDs(ids...), chroma.WithTexts(texts...), chroma.WithMetadatas(metas...), chroma.WithEmbeddings(embs...)); err != nil {
			return c.wrap("storing passages", err)
		}
	}
	return nil
}

func (c *Chroma) del(ctx context.Context, ids []string) error {
	for start := 0; start < len(ids); start += chromaBatch {
		batch := ids[start:min(len(ids), start+chromaBatch)]
		dids := make([]chroma.DocumentID, len(batch))
		for i, id := range batch {
			dids[i] = chroma.DocumentID(id)
		}
		if err := c.col.Delete(ctx, chroma.WithIDs(dids...)); err != nil {
			return c.wrap("removing passages", err)
		}
	}
	return nil
}

func (c *Chroma) nearest(ctx context.Context, vec []float32, n int, books []string) ([]string, error) {
	opts := []chroma.CollectionQueryOption{
		chroma.WithQueryEmbeddings(chromaemb.NewEmbeddingFromFloat32(vec)),
		chroma.WithNResults(n),
		chroma.WithInclude(chroma.IncludeDistances),
	}
	if len(books) > 0 {
		// Book names are matched case-insensitively by the index; ask Chroma for the stored names.
		var names []string
		f := bookFilter(books)
		for name := range c.bookCounts {
			if f.ok(name) {
				names = append(names, name)
			}
		}
		if len(names) == 0 {
			return nil, nil
		}
		opts = append(opts, chroma.WithWhere(chroma.InString("book", names...)))
	}
	res, err := c.col.Query(ctx, opts...)
	if err != nil {
		return nil, c.wrap("searching", err)
	}
	var ids []string
	for _, g := range res.GetIDGroups() {
		for _, id := range g {
			ids = append(ids, string(id))
		}
	}
	return ids, nil
}

func (c *Chroma) close() error { return c.client.Close() }

// Close releases the client.
func (c *Chroma) Close() error { return c.close() }

// efAdapter lets chroma-go hold our embedder, so it never falls back to its own default model
// (which it would download). caprag always sends the vectors itself.
type efAdapter struct{ e embed.Embedder }

func (a efAdapter) EmbedDocuments(ctx context.Context, texts []string) ([]chromaemb.Embedding, error) {
	vs, err := a.e.EmbedDocuments(ctx, texts)
	if err != nil {
		return nil, err
	}
	out := make([]chromaemb.Embedding, len(vs))
	for i, v := range vs {
		out[i] = chromaemb.NewEmbeddingFromFloat32(v)
	}
	return out, nil
}

func (a efAdapter) EmbedQuery(ctx context.Context, text string) (chromaemb.Embedding, error) {
	v, err := a.e.EmbedQuery(ctx, text)
	if err != nil {
		return nil, err
	}
	return chromaemb.NewEmbeddingFromFloat32(v), nil
}

func (a efAdapter) Name() string { return "caprag" }
func (a efAdapter) GetConfig() chromaemb.EmbeddingFunctionConfig {
	return chromaemb.EmbeddingFunctionConfig{}
}
func (a efAdapter) DefaultSpace() chromaemb.DistanceMetric { return chromaemb.COSINE }
func (a efAdapter) SupportedSpaces() []chromaemb.DistanceMetric {
	return []chromaemb.DistanceMetric{chromaemb.COSINE}
}
