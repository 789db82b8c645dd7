package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/caprag/caprag/embed"
	"github.com/caprag/caprag/ingest"
	"github.com/caprag/caprag/lexicon"
	"github.com/caprag/caprag/passage"
	"github.com/caprag/caprag/rag"
	"github.com/caprag/caprag/words"
)

// entry is one child passage with its vector, as a backend stores it.
type entry struct {
	P   ingest.Passage
	Vec []float32
}

// backend is a server that keeps the passages and their vectors (Chroma). The embedded store
// has none: its segments and vector files are the store.
type backend interface {
	// put stores entries (replacing those with the same IDs); del removes IDs.
	put(ctx context.Context, es []entry) error
	del(ctx context.Context, ids []string) error
	// nearest returns up to n children of v most similar to vec, restricted to books when given.
	nearest(ctx context.Context, v *view, vec []float32, n int, books []string) ([]hit, error)
	// replaceAll empties the collection and fills it with es, whose vectors embedder made.
	replaceAll(ctx context.Context, es []entry, embedder string) error
	close() error
}

// built is a book made ready to store: its segment, encoded and decoded, and its vectors.
type built struct {
	seg     *segment
	payload []byte
	vecs    []byte // encoded vectors
	entries []entry
}

// persister writes a library's files (the embedded store); nil for stores kept elsewhere.
type persister interface {
	// book writes a built book's files before the library refers to them.
	book(b *built) error
	// commit makes the new view the library's current generation.
	commit(ctx context.Context, v *view) error
	// vectorsLoader returns how a shelf's vectors are read again.
	vectorsLoader(sh *shelf) func() (*vectors, error)
}

// index is the engine both stores share: a current view swapped on every change, and the write
// path that builds the next one from the books that changed alone.
type index struct {
	emb  embed.Embedder
	mode Mode
	be   backend
	cur  atomic.Pointer[view]
	wmu  sync.Mutex // one change at a time in this process
	// beginWrite, when set, is called before a change: it takes the writer lock of the
	// library's folder and brings the view up to date with changes made by other processes.
	beginWrite func(ctx context.Context) (func(), error)
	// refresh, when set, re-reads the library when files the view refers to are gone (another
	// process changed it).
	refresh func(ctx context.Context) error
	files   persister
}

func newIndex(emb embed.Embedder, mode Mode, be backend) *index {
	x := &index{emb: emb, mode: mode.resolve(emb), be: be}
	x.cur.Store(newView(nil))
	return x
}

// view returns the current view with its books read.
func (x *index) view(ctx context.Context) (*view, error) {
	vecs := ""
	if x.mode != Lexical {
		vecs = x.emb.ID()
	}
	v := x.cur.Load()
	err := v.load(vecs)
	if errors.Is(err, fs.ErrNotExist) && x.refresh != nil {
		// Another process replaced a book since this view was read: read the library again.
		if err := x.refresh(ctx); err != nil {
			return nil, err
		}
		v = x.cur.Load()
		err = v.load(vecs)
	}
	if err != nil {
		return nil, fmt.Errorf("store: reading the books: %w", err)
	}
	return v, nil
}

// write starts a change: one at a time in this process, and under the library's writer lock
// (beginWrite) across processes. The returned function ends it.
func (x *index) write(ctx context.Context) (func(), error) {
	x.wmu.Lock()
	if x.beginWrite == nil {
		return x.wmu.Unlock, nil
	}
	unlock, err := x.beginWrite(ctx)
	if err != nil {
		x.wmu.Unlock()
		return nil, err
	}
	return func() { unlock(); x.wmu.Unlock() }, nil
}

// Load reads every book of the current view now (the lexicon is linked by Lexicon, or by the
// first search that returns references).
func (x *index) Load(ctx context.Context) error {
	_, err := x.view(ctx)
	return err
}

// embedBatch is how many passages are embedded between two progress reports.
const embedBatch = 256

// ReplaceBook stores a book, replacing any earlier version of it.
func (x *index) ReplaceBook(ctx context.Context, b ingest.Book) error {
	return x.ReplaceBooks(ctx, []ingest.Book{b}, nil)
}

// ReplaceBooks stores books, each replacing any earlier version of it. Each book is indexed on
// its own (its segment and vectors); what crosses books is updated from the changed books alone,
// and the library switches to the new books at once at the end. progress (may be nil) hears how
// many passages are embedded so far. Every book is embedded before the library changes, so an
// embedding failure leaves it as it was.
func (x *index) ReplaceBooks(ctx context.Context, books []ingest.Book, progress func(embedded, total int)) error {
	byName := map[string]ingest.Book{}
	var order []string
	total := 0
	for _, b := range books {
		if len(b.Passages) == 0 {
			return fmt.Errorf("book %q has no passages", b.Name)
		}
		if _, ok := byName[b.Name]; !ok {
			order = append(order, b.Name)
		} else {
			total -= len(byName[b.Name].Passages)
		}
		byName[b.Name] = b
		total += len(b.Passages)
	}
	if len(order) == 0 {
		return nil
	}
	unlock, err := x.write(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	// Books are indexed and embedded side by side, one per core.
	var (
		pmu  sync.Mutex
		done int
	)
	ready := make([]*built, len(order))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, name := range order {
		g.Go(func() error {
			last := 0
			b, err := x.build(gctx, byName[name], func(n int) {
				pmu.Lock()
				defer pmu.Unlock()
				done += n - last
				last = n
				if progress != nil {
					progress(done, total)
				}
			})
			ready[i] = b
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	// Once the books are built, the change runs to its end: an interrupt must not leave half of
	// it written (the files, or a Chroma collection's records).
	return x.apply(context.WithoutCancel(ctx), ready, nil, true)
}

// build indexes and embeds one book; with files, its files are written (not yet referred to).
func (x *index) build(ctx context.Context, b ingest.Book, progress func(int)) (*built, error) {
	ps := make([]ingest.Passage, len(b.Passages))
	for i, p := range b.Passages {
		p.Book, p.Refs = b.Name, nil
		ps[i] = p
	}
	slices.SortStableFunc(ps, func(a, b ingest.Passage) int { return cmp.Compare(a.Position, b.Position) })
	id, payload := encodeSegment(b.Name, ps, x.files != nil)
	seg, err := decodeSegment(id, payload)
	if err != nil {
		return nil, fmt.Errorf("store: indexing %s: %w", b.Name, err)
	}
	vecs, err := x.embedAll(ctx, seg, progress)
	if err != nil {
		return nil, err
	}
	out := &built{seg: seg, payload: payload}
	if x.be != nil {
		out.entries = make([]entry, len(seg.ps))
		for i := range seg.ps {
			out.entries[i] = entry{P: seg.ps[i], Vec: vecs[i]}
		}
		return out, nil
	}
	out.vecs = encodeVectors(x.emb.ID(), vecs)
	if x.mode != Lexical {
		// A mode that reads vectors keeps them from the start, not from a file a later change
		// may remove.
		v, err := decodeVectors(out.vecs)
		if err != nil {
			return nil, err
		}
		seg.vecs.set(v)
	}
	if x.files != nil {
		if err := x.files.book(out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// embedAll embeds the children of a segment in batches.
func (x *index) embedAll(ctx context.Context, seg *segment, progress func(int)) ([][]float32, error) {
	out := make([][]float32, 0, len(seg.ps))
	for lo := 0; lo < len(seg.ps); lo += embedBatch {
		batch := seg.ps[lo:min(lo+embedBatch, len(seg.ps))]
		texts := make([]string, len(batch))
		for i, p := range batch {
			texts[i] = passage.LastHeading(p.Section) + "\n" + p.Text
		}
		vecs, err := x.emb.EmbedDocuments(ctx, texts)
		if err != nil {
			return nil, fmt.Errorf("embedding %s: %w", seg.book, err)
		}
		if len(vecs) != len(texts) {
			return nil, fmt.Errorf("embedding %s: got %d vectors for %d passages", seg.book, len(vecs), len(texts))
		}
		out = append(out, vecs...)
		if progress != nil {
			progress(lo + len(batch))
		}
	}
	return out, nil
}

// apply switches the library to a view with the built books added (replacing books of the same
// names) and the named books removed, storing the change in the backend when store is set (not
// when the view is being read from it); x.wmu is held.
func (x *index) apply(ctx context.Context, ready []*built, remove []string, store bool) error {
	old := x.cur.Load()
	gone := map[string]bool{}
	for _, n := range remove {
		gone[n] = true
	}
	changed := map[string]*segment{}
	for _, b := range ready {
		changed[b.seg.book] = b.seg
		gone[b.seg.book] = true
	}
	var shelves []*shelf
	var stale []string // child IDs the backend must drop
	keep := map[string]bool{}
	for _, b := range ready {
		for i := range b.seg.ps {
			keep[b.seg.ps[i].ID] = true
		}
	}
	for _, sh := range old.shelves {
		if !gone[sh.name] {
			shelves = append(shelves, sh)
			continue
		}
		if x.be != nil && store {
			seg, err := sh.segment()
			if err != nil {
				return err
			}
			for i := range seg.ps {
				if !keep[seg.ps[i].ID] {
					stale = append(stale, seg.ps[i].ID)
				}
			}
		}
	}
	for _, b := range ready {
		sh := &shelf{name: b.seg.book, id: b.seg.id, passages: len(b.seg.ps), parents: len(b.seg.parents), embedder: x.emb.ID(), seg: b.seg}
		if b.vecs != nil {
			vecs := b.vecs
			sh.seg.vecs.load = func() (*vectors, error) { return decodeVectors(vecs) }
			if x.files != nil {
				sh.seg.vecs.load = x.files.vectorsLoader(sh)
			}
		}
		shelves = append(shelves, sh)
	}
	slices.SortFunc(shelves, func(a, b *shelf) int { return cmp.Compare(a.name, b.name) })
	nv := old.next(shelves)
	if x.be != nil && store {
		for _, b := range ready {
			if err := x.be.put(ctx, b.entries); err != nil {
				return err
			}
		}
		if len(stale) > 0 {
			if err := x.be.del(ctx, stale); err != nil {
				return err
			}
		}
	}
	if x.files != nil {
		if err := x.files.commit(ctx, nv); err != nil {
			return err
		}
	}
	x.cur.Store(nv)
	return nil
}

// RemoveBook deletes a book; ErrNoBook when there is none of that name (case-insensitive).
func (x *index) RemoveBook(ctx context.Context, name string) error {
	unlock, err := x.write(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	var names []string
	for _, sh := range x.cur.Load().shelves {
		if strings.EqualFold(sh.name, name) {
			names = append(names, sh.name)
		}
	}
	if len(names) == 0 {
		return fmt.Errorf("%q: %w", name, ErrNoBook)
	}
	return x.apply(context.WithoutCancel(ctx), nil, names, true)
}

// Reindex embeds again, with the configured embedder, the books whose vectors another embedder
// made (every book when force is set, or when one collection on a server holds them all).
// progress hears passages embedded so far. It returns how many books were embedded again.
func (x *index) Reindex(ctx context.Context, force bool, progress func(embedded, total int)) (int, error) {
	unlock, err := x.write(ctx)
	if err != nil {
		return 0, err
	}
	defer unlock()
	old := x.cur.Load()
	var todo []*shelf
	total := 0
	for _, sh := range old.shelves {
		if force || sh.embedder != x.emb.ID() {
			todo = append(todo, sh)
			total += sh.passages
		}
	}
	if len(todo) == 0 {
		return 0, nil
	}
	if x.be != nil && len(todo) < len(old.shelves) {
		todo, total = old.shelves, 0
		for _, sh := range todo {
			total += sh.passages
		}
	}
	redone := map[string]*shelf{}
	var all []entry // a server's collection is filled again as a whole
	done := 0
	for _, sh := range todo {
		seg, err := sh.segment()
		if err != nil {
			return 0, err
		}
		vecs, err := x.embedAll(ctx, seg, func(n int) {
			if progress != nil {
				progress(done+n, total)
			}
		})
		if err != nil {
			return 0, err
		}
		done += len(seg.ps)
		// The same passages with new vectors: a new shelf over the same segment text (a
		// segment of the former format written again, with its lexicon part).
		id, data := seg.id, seg.data
		if x.files != nil && seg.format < segFormat {
			id, data = encodeSegment(seg.book, seg.ps, true)
		}
		nseg, err := decodeSegment(id, data)
		if err != nil {
			return 0, err
		}
		nsh := &shelf{name: sh.name, id: id, passages: sh.passages, parents: sh.parents, embedder: x.emb.ID(), seg: nseg}
		if x.be != nil {
			for i := range seg.ps {
				all = append(all, entry{P: seg.ps[i], Vec: vecs[i]})
			}
		} else {
			b := &built{seg: nseg, payload: data, vecs: encodeVectors(x.emb.ID(), vecs)}
			enc := b.vecs
			nseg.vecs.load = func() (*vectors, error) { return decodeVectors(enc) }
			if x.files != nil {
				if err := x.files.book(b); err != nil {
					return 0, err
				}
				nseg.vecs.load = x.files.vectorsLoader(nsh)
			}
		}
		redone[sh.name] = nsh
	}
	ctx = context.WithoutCancel(ctx) // every vector is made: the change runs to its end
	if x.be != nil {
		if err := x.be.replaceAll(ctx, all, x.emb.ID()); err != nil {
			return 0, err
		}
	}
	shelves := make([]*shelf, len(old.shelves))
	for i, sh := range old.shelves {
		shelves[i] = cmp.Or(redone[sh.name], sh)
	}
	nv := old.next(shelves)
	if x.files != nil {
		if err := x.files.commit(ctx, nv); err != nil {
			return 0, err
		}
	}
	x.cur.Store(nv)
	return len(todo), nil
}

// Books lists the books with their passage counts, by name. It reads no book.
func (x *index) Books(context.Context) ([]rag.BookInfo, error) {
	v := x.cur.Load()
	out := make([]rag.BookInfo, len(v.shelves))
	for i, sh := range v.shelves {
		out[i] = rag.BookInfo{Name: sh.name, Passages: sh.passages}
	}
	return out, nil
}

// Version identifies the current set of passages.
func (x *index) Version(context.Context) (string, error) { return x.cur.Load().version, nil }

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
	v, err := x.view(ctx)
	if err != nil {
		return nil, err
	}
	if v.n == 0 {
		return nil, nil
	}
	depth := max(50, 4*k)
	ok := v.filter(opts.Books)
	scores := map[int]float64{}
	if x.mode != Vector {
		for rank, h := range v.bm25(words.Tokens(query), depth, ok) {
			scores[h.g] += 1 / float64(rrfK+rank+1)
		}
	}
	if x.mode != Lexical {
		qvec, err := x.emb.EmbedQuery(ctx, query)
		if err != nil {
			return nil, fmt.Errorf("embedding the question: %w", err)
		}
		var hits []hit
		if x.be != nil {
			hits, err = x.be.nearest(ctx, v, qvec, depth, opts.Books)
		} else {
			hits, err = v.nearest(qvec, x.emb.ID(), depth, ok)
		}
		if err != nil {
			return nil, err
		}
		for rank, h := range hits {
			if i, _ := v.at(h.g); ok == nil || ok[i] {
				scores[h.g] += 1 / float64(rrfK+rank+1)
			}
		}
	}
	best := map[pref]int{}
	for g, s := range scores {
		i, j := v.at(g)
		p := pref{i, int(v.shelves[i].seg.parentOf[j])}
		if b, seen := best[p]; !seen || s > scores[b] || (s == scores[b] && g < b) {
			best[p] = g
		}
	}
	ranked := make([]int, 0, len(best))
	for _, g := range best {
		ranked = append(ranked, g)
	}
	slices.SortFunc(ranked, func(a, b int) int { return cmp.Or(cmp.Compare(scores[b], scores[a]), cmp.Compare(a, b)) })
	if len(ranked) > k {
		ranked = ranked[:k]
	}
	out := make([]rag.Document, len(ranked))
	for n, g := range ranked {
		i, j := v.at(g)
		out[n] = v.doc(i, j, true, !opts.NoRefs, scores[g])
	}
	return out, nil
}

// Resolve returns the passages a reference points to: the passages of a page for a page
// reference, the start of the section whose title the reference names otherwise.
func (x *index) Resolve(ctx context.Context, from rag.Document, ref passage.Reference, opts rag.SearchOptions) ([]rag.Document, error) {
	k := opts.K
	if k <= 0 {
		k = 3
	}
	v, err := x.view(ctx)
	if err != nil {
		return nil, err
	}
	ok := v.filter(opts.Books)
	var out []rag.Document
	seen := map[pref]bool{}
	for _, p := range v.resolve(from, ref) {
		if seen[p] || ok != nil && !ok[p.shelf] || v.shelves[p.shelf].seg.parents[p.parent].id == from.ID {
			continue
		}
		seen[p] = true
		out = append(out, v.parentDoc(p))
		if len(out) == k {
			break
		}
	}
	return out, nil
}

// Mentions returns the section titles of the books that a text (a question) names.
func (x *index) Mentions(ctx context.Context, text string) ([]passage.Reference, error) {
	v, err := x.view(ctx)
	if err != nil {
		return nil, err
	}
	return v.mentions(text), nil
}

// Lexicon returns what the books say about their own words (see package lexicon), linked on
// first use; nil when the books cannot be read. It is replaced, not changed, when the books
// change.
func (x *index) Lexicon() *lexicon.Lexicon {
	v, err := x.view(context.Background())
	if err != nil {
		return nil
	}
	return v.lexicon()
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
