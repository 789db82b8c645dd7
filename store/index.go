package store

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/caprag/caprag/embed"
	"github.com/caprag/caprag/ingest"
	"github.com/caprag/caprag/lexicon"
	"github.com/caprag/caprag/passage"
	"github.com/caprag/caprag/rag"
	"github.com/caprag/caprag/words"
)

// entry is one child passage with its vector.
type entry struct {
	P   ingest.Passage
	Vec []float32
}

// backend is where entries live: in memory (embedded store) or in a Chroma collection. The
// index keeps every entry's text in memory either way, for BM25 and reference resolution.
type backend interface {
	// put stores entries (replacing those with the same IDs); del removes IDs.
	put(ctx context.Context, es []entry) error
	del(ctx context.Context, ids []string) error
	// nearest returns up to n entry IDs most similar to vec, restricted to books when given.
	nearest(ctx context.Context, vec []float32, n int, books []string) ([]string, error)
	close() error
}

// index is the shared engine of both stores.
type index struct {
	mu         sync.RWMutex
	emb        embed.Embedder
	mode       Mode
	be         backend
	entries    map[string]*entry
	order      []*entry // by book, position
	lex        *bm25
	parents    map[string][]*entry            // parent ID → children
	refs       map[string][]passage.Reference // parent ID → outgoing references
	titles     map[string][]string            // normalised heading → parent IDs (first parent of each section first)
	pages      map[string][]string            // book\x00page → parent IDs
	version    string
	bookCounts map[string]int                  // book name → passages
	lx         *lexicon.Lexicon                // the books' terms and reference graph
	onChange   func(ctx context.Context) error // persists (embedded store)
	// beginWrite, when set, is called before a change, without x.mu: it takes the writer lock
	// that keeps other processes from changing the books at the same time and brings the index
	// up to date with what they wrote; the func it returns releases the lock.
	beginWrite func(ctx context.Context) (func(), error)
}

// lockForWrite runs beginWrite. The context it returns is not cancelled with ctx: a change, once
// started, runs to its end (Ctrl-C during a Chroma write would leave half a book), each request
// bounded by its own timeout.
func (x *index) lockForWrite(ctx context.Context) (context.Context, func(), error) {
	if x.beginWrite == nil {
		return ctx, func() {}, nil
	}
	unlock, err := x.beginWrite(ctx)
	if err != nil {
		return nil, nil, err
	}
	return context.WithoutCancel(ctx), unlock, nil
}

func newIndex(emb embed.Embedder, mode Mode, be backend) *index {
	mode = mode.resolve(emb)
	return &index{emb: emb, mode: mode, be: be, entries: map[string]*entry{}}
}

// rebuild recomputes every derived structure: ordering, BM25, book counts, parents, titles, pages, reference
// links (title mentions across all books) and the version.
func (x *index) rebuild() {
	x.order = x.order[:0]
	for _, e := range x.entries {
		x.order = append(x.order, e)
	}
	slices.SortFunc(x.order, func(a, b *entry) int {
		return cmp.Or(cmp.Compare(a.P.Book, b.P.Book), cmp.Compare(a.P.Position, b.P.Position))
	})
	docs := make([][]string, len(x.order))
	for i, e := range x.order {
		// The section's last heading counts twice: rule names live in headings. (Weighing the
		// heading, the headings above it and the text as BM25F fields, each normalised by its
		// own length, did not pay on both corpora: README, "Answers".)
		h := passage.LastHeading(e.P.Section)
		docs[i] = words.Tokens(h + " " + h + " " + e.P.Section + " " + e.P.Text)
	}
	x.lex = newBM25(docs)
	x.bookCounts = map[string]int{}
	x.parents = map[string][]*entry{}
	x.titles = map[string][]string{}
	x.pages = map[string][]string{}
	var (
		parentList []ingest.Passage
		parentIDs  []string
	)
	h := sha256.New()
	for _, e := range x.order {
		h.Write([]byte(e.P.ID))
		x.bookCounts[e.P.Book]++
		pid := e.P.ParentID
		if _, ok := x.parents[pid]; !ok {
			parentList = append(parentList, ingest.Passage{Book: e.P.Book, Section: e.P.Section, Page: e.P.Page, Text: e.P.Parent})
			parentIDs = append(parentIDs, pid)
			for _, t := range headingKeys(e.P.Section) {
				x.titles[t] = append(x.titles[t], pid)
			}
			if e.P.Page > 0 {
				k := e.P.Book + "\x00" + strconv.Itoa(e.P.Page)
				x.pages[k] = append(x.pages[k], pid)
			}
		}
		x.parents[pid] = append(x.parents[pid], e)
	}
	x.version = hex.EncodeToString(h.Sum(nil)[:8])
	// What the books say about their own words: one part per book, resolved across the library.
	var parts []lexicon.Part
	for lo := 0; lo < len(parentList); {
		hi := lo
		var docs []lexicon.Doc
		for ; hi < len(parentList) && parentList[hi].Book == parentList[lo].Book; hi++ {
			p := parentList[hi]
			docs = append(docs, lexicon.Doc{ID: parentIDs[hi], Section: p.Section, Page: p.Page, Text: p.Text})
		}
		parts = append(parts, lexicon.Read(parentList[lo].Book, docs))
		lo = hi
	}
	x.lx = lexicon.Link(parts)
	// Terms are found by name too: a rule defined under a run-in heading ("Malice (Inhaled). A
	// creature…"), a heading's parts ("Bronze Rule" of "THE BRONZE RULE, AKA THE FATE FRACTAL").
	for _, key := range slices.Sorted(maps.Keys(x.lx.Terms)) {
		if _, ok := x.titles[key]; ok {
			continue
		}
		for _, d := range x.lx.Terms[key].Defs {
			x.titles[key] = append(x.titles[key], x.lx.Docs[d].ID)
		}
	}
	x.refs = make(map[string][]passage.Reference, len(parentList))
	for i, pid := range parentIDs {
		x.refs[pid] = x.lx.Refs(i)
	}
}

// headingKeys are the lookup keys of a section: its last heading, normalised and stemmed.
func headingKeys(section string) []string { return nameKeys(passage.LastHeading(section)) }

// nameKeys are the lookup keys of a title: normalised and stemmed.
func nameKeys(t string) []string {
	if t == "" {
		return nil
	}
	n := words.Normalize(t)
	s := strings.Join(words.Tokens(t), " ")
	if s == n || s == "" {
		return []string{n}
	}
	return []string{n, s}
}

// ReplaceBook stores a book, replacing any earlier version of it.
func (x *index) ReplaceBook(ctx context.Context, b ingest.Book) error {
	return x.ReplaceBooks(ctx, []ingest.Book{b}, nil)
}

// embedBatch is how many passages are embedded between two progress reports.
const embedBatch = 256

// ReplaceBooks stores books, each replacing any earlier version of it, with one rebuild of the
// derived state and one save at the end: loading a folder of books costs one save, not one per
// book. progress (may be nil) hears how many passages are embedded so far. All books are embedded
// before anything changes, so an embedding failure leaves the store as it was.
func (x *index) ReplaceBooks(ctx context.Context, books []ingest.Book, progress func(embedded, total int)) error {
	var es []entry
	names := map[string]bool{}
	for _, b := range books {
		if len(b.Passages) == 0 {
			return fmt.Errorf("book %q has no passages", b.Name)
		}
		for _, p := range b.Passages {
			p.Book = b.Name
			p.Refs = nil
			es = append(es, entry{P: p})
		}
		names[b.Name] = true
	}
	if len(es) == 0 {
		return nil
	}
	for lo := 0; lo < len(es); lo += embedBatch {
		batch := es[lo:min(lo+embedBatch, len(es))]
		texts := make([]string, len(batch))
		for i, e := range batch {
			texts[i] = passage.LastHeading(e.P.Section) + "\n" + e.P.Text
		}
		vecs, err := x.emb.EmbedDocuments(ctx, texts)
		if err != nil {
			return fmt.Errorf("embedding %s: %w", batch[0].P.Book, err)
		}
		if len(vecs) != len(texts) {
			return fmt.Errorf("embedding %s: got %d vectors for %d passages", batch[0].P.Book, len(vecs), len(texts))
		}
		for i := range batch {
			batch[i].Vec = vecs[i]
		}
		if progress != nil {
			progress(lo+len(batch), len(es))
		}
	}
	keep := make(map[string]bool, len(es))
	for _, e := range es {
		keep[e.P.ID] = true
	}
	ctx, unlock, err := x.lockForWrite(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	x.mu.Lock()
	defer x.mu.Unlock()
	var stale []string
	for id, e := range x.entries {
		if names[e.P.Book] && !keep[id] {
			stale = append(stale, id)
		}
	}
	if err := x.be.put(ctx, es); err != nil {
		return err
	}
	if len(stale) > 0 {
		if err := x.be.del(ctx, stale); err != nil {
			return err
		}
	}
	for _, id := range stale {
		delete(x.entries, id)
	}
	for i := range es {
		x.entries[es[i].P.ID] = &es[i]
	}
	return x.changed(ctx)
}

// RemoveBook deletes a book; ErrNoBook when there is none of that name.
func (x *index) RemoveBook(ctx context.Context, name string) error {
	ctx, unlock, err := x.lockForWrite(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	x.mu.Lock()
	defer x.mu.Unlock()
	var ids []string
	for id, e := range x.entries {
		if strings.EqualFold(e.P.Book, name) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return fmt.Errorf("%q: %w", name, ErrNoBook)
	}
	if err := x.be.del(ctx, ids); err != nil {
		return err
	}
	for _, id := range ids {
		delete(x.entries, id)
	}
	return x.changed(ctx)
}

// changed rebuilds the derived state and persists; x.mu is held.
func (x *index) changed(ctx context.Context) error {
	x.rebuild()
	if x.onChange != nil {
		return x.onChange(ctx)
	}
	return nil
}

// Books lists the books with their passage counts, by name.
func (x *index) Books(context.Context) ([]rag.BookInfo, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var out []rag.BookInfo
	for b, n := range x.bookCounts {
		out = append(out, rag.BookInfo{Name: b, Passages: n})
	}
	slices.SortFunc(out, func(a, b rag.BookInfo) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// Version identifies the current set of passages.
func (x *index) Version(context.Context) (string, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.version, nil
}

const rrfK = 60

// Retrieve ranks the passages for a query: BM25 and vector rankings of the child chunks fused by
// reciprocal rank fusion, then grouped by parent (best child wins), K results.
func (x *index) Retrieve(ctx context.Context, query string, opts rag.SearchOptions) ([]rag.Document, error) {
	k := opts.K
	if k <= 0 {
		k = 5
	}
	if strings.TrimSpace(query) == "" {
		return nil, nil
	}
	depth := max(50, 4*k)
	var qvec []float32
	if x.mode != Lexical {
		v, err := x.emb.EmbedQuery(ctx, query)
		if err != nil {
			return nil, fmt.Errorf("embedding the question: %w", err)
		}
		qvec = v
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	if len(x.order) == 0 {
		return nil, nil
	}
	books := bookFilter(opts.Books)
	scores := map[*entry]float64{}
	if x.mode != Vector {
		for rank, i := range x.lex.search(words.Tokens(query), depth, func(i int) bool { return books.ok(x.order[i].P.Book) }) {
			scores[x.order[i]] += 1 / float64(rrfK+rank+1)
		}
	}
	if x.mode != Lexical {
		ids, err := x.be.nearest(ctx, qvec, depth, opts.Books)
		if err != nil {
			return nil, err
		}
		for rank, id := range ids {
			if e, ok := x.entries[id]; ok && books.ok(e.P.Book) {
				scores[e] += 1 / float64(rrfK+rank+1)
			}
		}
	}
	best := map[string]*entry{}
	for e, s := range scores {
		if b, ok := best[e.P.ParentID]; !ok || s > scores[b] || (s == scores[b] && e.P.Position < b.P.Position) {
			best[e.P.ParentID] = e
		}
	}
	ranked := make([]*entry, 0, len(best))
	for _, e := range best {
		ranked = append(ranked, e)
	}
	slices.SortFunc(ranked, func(a, b *entry) int {
		return cmp.Or(cmp.Compare(scores[b], scores[a]), cmp.Compare(a.P.Book, b.P.Book), cmp.Compare(a.P.Position, b.P.Position))
	})
	if len(ranked) > k {
		ranked = ranked[:k]
	}
	out := make([]rag.Document, len(ranked))
	for i, e := range ranked {
		out[i] = x.doc(e, scores[e])
	}
	return out, nil
}

func (x *index) doc(e *entry, score float64) rag.Document {
	return rag.Document{
		ID: e.P.ParentID, Book: e.P.Book, Section: e.P.Section, Page: e.P.Page, Source: e.P.Source,
		Text: e.P.Parent, Match: e.P.Text, Score: score, Refs: x.refs[e.P.ParentID],
	}
}

// Resolve returns the passages a reference points to: the passages of a page for a page
// reference, the start of the section whose title the reference names otherwise.
func (x *index) Resolve(ctx context.Context, from rag.Document, ref passage.Reference, opts rag.SearchOptions) ([]rag.Document, error) {
	k := opts.K
	if k <= 0 {
		k = 3
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	books := bookFilter(opts.Books)
	var pids []string
	switch {
	case ref.ID != "":
		pids = []string{ref.ID}
	case ref.Kind == passage.RefPage:
		book := cmp.Or(ref.Book, from.Book)
		page := strings.TrimLeft(ref.Target, "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
		pids = x.pages[book+"\x00"+page]
	default:
		pids = x.titleParents(ref.Target, ref.Book)
	}
	var out []rag.Document
	seen := map[string]bool{}
	for _, pid := range pids {
		cs := x.parents[pid]
		if len(cs) == 0 || seen[pid] || !books.ok(cs[0].P.Book) || pid == from.ID {
			continue
		}
		seen[pid] = true
		out = append(out, x.doc(cs[0], 0))
		if len(out) == k {
			break
		}
	}
	return out, nil
}

// titleParents finds the parents of the sections a title names: exact heading first, then the
// stemmed heading, then a heading that starts with the target ("appendix PH-A" → "Appendix PH-A:
// Conditions"). Only the first parent of each section is returned first.
func (x *index) titleParents(target, book string) []string {
	n := words.Normalize(target)
	s := strings.Join(words.Tokens(target), " ")
	pick := func(pids []string) []string {
		if book == "" {
			return pids
		}
		var out []string
		for _, p := range pids {
			if cs := x.parents[p]; len(cs) > 0 && cs[0].P.Book == book {
				out = append(out, p)
			}
		}
		return out
	}
	for _, key := range []string{n, s} {
		if key == "" {
			continue
		}
		if p := pick(x.titles[key]); len(p) > 0 {
			return firstOfSections(x, p)
		}
	}
	if len(n) >= 4 {
		var keys []string
		for t := range x.titles {
			if strings.HasPrefix(t, n+" ") {
				keys = append(keys, t)
			}
		}
		slices.Sort(keys)
		var out []string
		for _, t := range keys {
			out = append(out, pick(x.titles[t])...)
		}
		return firstOfSections(x, out)
	}
	return nil
}

// firstOfSections orders parents so the first parent of each section comes before the rest.
func firstOfSections(x *index, pids []string) []string {
	seen := map[string]bool{}
	var first, rest []string
	for _, p := range pids {
		cs := x.parents[p]
		if len(cs) == 0 {
			continue
		}
		key := cs[0].P.Book + "\x00" + cs[0].P.Section
		if seen[key] {
			rest = append(rest, p)
		} else {
			seen[key] = true
			first = append(first, p)
		}
	}
	return append(first, rest...)
}

type books map[string]bool

func bookFilter(names []string) books {
	if len(names) == 0 {
		return nil
	}
	b := books{}
	for _, n := range names {
		b[strings.ToLower(n)] = true
	}
	return b
}

func (b books) ok(name string) bool { return b == nil || b[strings.ToLower(name)] }

// cosineTop returns the IDs of the n entries most similar to vec (vectors are unit length).
func cosineTop(es []*entry, vec []float32, n int, ok func(*entry) bool) []string {
	type hit struct {
		id string
		s  float32
	}
	hits := make([]hit, 0, len(es))
	for _, e := range es {
		if !ok(e) || len(e.Vec) != len(vec) {
			continue
		}
		var s float32
		for i, v := range e.Vec {
			s += v * vec[i]
		}
		hits = append(hits, hit{e.P.ID, s})
	}
	slices.SortFunc(hits, func(a, b hit) int { return cmp.Compare(b.s, a.s) })
	if len(hits) > n {
		hits = hits[:n]
	}
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.id
	}
	return ids
}

// Mentions returns the terms of the books that a text (a question) names, the most specific
// first, each as a reference to the passage that defines it.
func (x *index) Mentions(_ context.Context, text string) ([]passage.Reference, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.lx.Named(text), nil
}

// Lexicon returns what the books say about their own words (see package lexicon). It is
// replaced, not changed, when the books change.
func (x *index) Lexicon() *lexicon.Lexicon {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.lx
}
