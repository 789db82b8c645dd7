package store

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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
// embeddings, their parent text and where they come from; at open the passages' text (never
// their vectors: vector search runs on the server) is read into segments, for BM25 and
// reference links.
type Chroma struct {
	*index
	client   chroma.Client
	col      chroma.Collection
	url      string
	name     string
	embedder string // the embedder the collection's vectors were made with
	lockPath string
	lockOpt  LockOptions
	// published is the books' version last read from or written to the collection's metadata
	// (refresh.go); pmu guards it.
	pmu       sync.Mutex
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
	c := &Chroma{client: client, url: co.URL, name: co.Collection}
	if co.LockDir != "" {
		c.lockPath = chromaLockPath(co.LockDir, co)
		c.lockOpt = LockOptions{Timeout: opts.LockTimeout, Waiting: opts.Waiting}
	}
	col, err := c.create(ctx, opts.Embedder)
	if err != nil {
		client.Close()
		return nil, c.wrap("opening the collection "+co.Collection, err)
	}
	c.col = col
	c.index = newIndex(opts.Embedder, opts.Mode, c)
	c.embedder = opts.Embedder.ID()
	if id, ok := col.Metadata().GetString(embedderKey); ok {
		c.embedder = id
	}
	// Read under a shared lock: a writer on this machine never shows half a book.
	if err := c.locked(ctx, Shared, func() error { return c.load(ctx) }); err != nil {
		client.Close()
		return nil, err
	}
	c.beginWrite = c.lockForWrite
	c.published, _ = col.Metadata().GetString(versionKey)
	return c, nil
}

// create opens the collection, creating it for vectors of emb when it is missing.
func (c *Chroma) create(ctx context.Context, emb embed.Embedder) (chroma.Collection, error) {
	return c.client.GetOrCreateCollection(ctx, c.name,
		chroma.WithEmbeddingFunctionCreate(efAdapter{emb}),
		chroma.WithDisableEFConfigStorage(),
		chroma.WithHNSWSpaceCreate(chromaemb.COSINE),
		chroma.WithCollectionMetadataCreate(chroma.NewMetadata(chroma.NewStringAttribute(embedderKey, emb.ID()))),
	)
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
// change is made to what other processes have written meanwhile. When the change is done, its
// version is published in the collection's metadata (refresh.go) before the lock is released.
func (c *Chroma) lockForWrite(ctx context.Context) (func(), error) {
	if c.lockPath == "" {
		return func() { c.publish(ctx) }, nil
	}
	l, err := Lock(ctx, c.lockPath, Exclusive, c.lockOpt)
	if err != nil {
		return nil, fmt.Errorf("writing the books: %w", err)
	}
	if err := c.load(ctx); err != nil {
		l.Unlock()
		return nil, err
	}
	return func() { c.publish(ctx); l.Unlock() }, nil
}

// load reads every record's text and metadata (not its vector) into one segment per book.
func (c *Chroma) load(ctx context.Context) error {
	byBook := map[string]*ingest.Book{}
	for offset := 0; ; offset += chromaBatch {
		res, err := c.col.Get(ctx, chroma.WithInclude(chroma.IncludeDocuments, chroma.IncludeMetadatas), chroma.WithLimit(chromaBatch), chroma.WithOffset(offset))
		if err != nil {
			return c.wrap("reading the passages", err)
		}
		ids, docs, metas := res.GetIDs(), res.GetDocuments(), res.GetMetadatas()
		for i, id := range ids {
			p := ingest.Passage{ID: string(id)}
			if i < len(docs) && docs[i] != nil {
				p.Text = docs[i].ContentString()
			}
			if i < len(metas) && metas[i] != nil {
				m := metas[i]
				p.Book, _ = m.GetString("book")
				p.Section, _ = m.GetString("section")
				p.Source, _ = m.GetString("source")
				p.ParentID, _ = m.GetString("parent_id")
				p.Parent, _ = m.GetString("parent")
				page, _ := m.GetInt("page")
				pos, _ := m.GetInt("position")
				p.Page, p.Position = int(page), int(pos)
			}
			b := byBook[p.Book]
			if b == nil {
				b = &ingest.Book{Name: p.Book}
				byBook[p.Book] = b
			}
			b.Passages = append(b.Passages, p)
		}
		if len(ids) < chromaBatch {
			break
		}
	}
	var ready []*built
	for _, b := range byBook {
		slices.SortFunc(b.Passages, func(x, y ingest.Passage) int { return cmp.Compare(x.Position, y.Position) })
		id, payload := encodeSegment(b.Name, b.Passages, false)
		seg, err := decodeSegment(id, payload)
		if err != nil {
			return err
		}
		ready = append(ready, &built{seg: seg, payload: payload})
	}
	// Books another process removed are dropped from the view.
	var gone []string
	for _, sh := range c.cur.Load().shelves {
		if byBook[sh.name] == nil {
			gone = append(gone, sh.name)
		}
	}
	// The records are on the server already: link the books without storing them again.
	if err := c.apply(ctx, ready, gone, false); err != nil {
		return err
	}
	for _, sh := range c.cur.Load().shelves {
		sh.embedder = c.embedder
	}
	return nil
}

func (c *Chroma) put(ctx context.Context, es []entry) error {
	if c.embedder != c.emb.ID() {
		// One collection holds vectors of one embedder (and one length).
		if len(c.cur.Load().shelves) > 0 {
			return fmt.Errorf("the books in the Chroma collection were embedded with %s, the settings ask for %s: run `caprag ingest --reindex` first: %w", c.embedder, c.emb.ID(), rag.ErrEmbedderMismatch)
		}
		if err := c.embedderChanged(ctx, c.emb.ID()); err != nil {
			return err
		}
	}
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

func (c *Chroma) nearest(ctx context.Context, v *view, vec []float32, n int, books []string) ([]hit, error) {
	if c.embedder != c.emb.ID() {
		return nil, fmt.Errorf("the books in the Chroma collection were embedded with %s, the settings ask for %s (run `caprag ingest --reindex`): %w", c.embedder, c.emb.ID(), rag.ErrEmbedderMismatch)
	}
	opts := []chroma.CollectionQueryOption{
		chroma.WithQueryEmbeddings(chromaemb.NewEmbeddingFromFloat32(vec)),
		chroma.WithNResults(n),
		chroma.WithInclude(chroma.IncludeDistances),
	}
	if len(books) > 0 {
		// Book names are matched case-insensitively by the index; ask Chroma for the stored names.
		var names []string
		f := bookFilter(books)
		for _, sh := range v.shelves {
			if f.ok(sh.name) {
				names = append(names, sh.name)
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
	var hits []hit
	for _, g := range res.GetIDGroups() {
		for _, id := range g {
			if i, ok := v.byID(string(id)); ok {
				hits = append(hits, hit{g: i})
			}
		}
	}
	return hits, nil
}

// replaceAll creates the collection again (its vectors' length is fixed when it is first
// filled) and stores es, whose vectors embedder made. Every vector is computed before the old
// collection is dropped.
func (c *Chroma) replaceAll(ctx context.Context, es []entry, embedder string) error {
	if err := c.client.DeleteCollection(ctx, c.name); err != nil {
		return c.wrap("dropping the collection "+c.name, err)
	}
	col, err := c.create(ctx, c.emb)
	if err != nil {
		return c.wrap("creating the collection "+c.name, err)
	}
	c.col, c.embedder = col, embedder
	return c.put(ctx, es)
}

// embedderChanged records in the collection's metadata which embedder made its vectors.
func (c *Chroma) embedderChanged(ctx context.Context, id string) error {
	if err := c.col.ModifyMetadata(ctx, chroma.NewMetadata(chroma.NewStringAttribute(embedderKey, id))); err != nil {
		return c.wrap("recording the embedder", err)
	}
	c.embedder = id
	return nil
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
