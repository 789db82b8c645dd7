package store

import (
	"cmp"
	"container/heap"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/caprag/caprag/ingest"
	"github.com/caprag/caprag/lexicon"
	"github.com/caprag/caprag/passage"
	"github.com/caprag/caprag/rag"
	"github.com/caprag/caprag/words"
)

// A shelf is one book of a view: what the library's manifest says about it, and its segment,
// read on first use and then shared by every later view that keeps the book.
type shelf struct {
	name     string
	id       string // segment id
	passages int
	parents  int
	embedder string // the embedder of its vectors ("" when it has none)

	once sync.Once
	open func() (*segment, error)
	seg  *segment
	err  error

	partOnce sync.Once
	part     lexicon.Part // what the book says about itself (lexicon.Read), read on first use
}

// lexiconPart is the book's part of the lexicon (the segment is loaded): the one its segment
// stores, or read from its text once when the segment has none.
func (b *shelf) lexiconPart() lexicon.Part {
	if b.seg.part != nil {
		return *b.seg.part
	}
	b.partOnce.Do(func() { b.part = lexicon.Read(b.name, b.seg.lexiconDocs()) })
	return b.part
}

func (b *shelf) segment() (*segment, error) {
	b.once.Do(func() {
		if b.seg == nil {
			b.seg, b.err = b.open()
			b.open = nil
		}
	})
	return b.seg, b.err
}

// view is one generation of a library, immutable: its books in name order (the order ties are
// broken in), and what is derived from them on first use (the lexicon linked across them).
// Searches read a view without locks; a change builds a new view and swaps it in.
type view struct {
	shelves    []*shelf
	base       []int // global index of each shelf's first child
	parentBase []int // lexicon number of each shelf's first parent
	n          int   // children
	parents    int
	version    string

	loaded  sync.Once
	loadErr error
	total   uint64 // BM25 token count of all children (after load)

	lex struct {
		once sync.Once
		lx   *lexicon.Lexicon
		done atomic.Pointer[lexicon.Lexicon] // lx, once linked
		// from is the previous view's lexicon, when it was linked: this view's is relinked
		// from it (lexicon.Relink), reading again only what the changed books touch.
		from     *lexicon.Lexicon
		relinked bool
	}
	ids struct {
		once sync.Once
		m    map[string]int // child ID → global index (vector hits from Chroma)
	}
	terms       sync.Map // term → *termEntry
	cachedTerms atomic.Int64
	toc         struct {
		once sync.Once
		list []rag.Heading
	}
}

func newView(shelves []*shelf) *view {
	v := &view{shelves: shelves, base: make([]int, len(shelves)), parentBase: make([]int, len(shelves))}
	h := sha256.New()
	for i, b := range shelves {
		v.base[i] = v.n
		v.parentBase[i] = v.parents
		v.n += b.passages
		v.parents += b.parents
		h.Write([]byte(b.id))
	}
	v.version = hex.EncodeToString(h.Sum(nil)[:8])
	return v
}

// load reads every book's segment (in parallel: they are independent) and, when embedder is
// not empty, the vectors that embedder made.
func (v *view) load(embedder string) error {
	v.loaded.Do(func() {
		errs := make([]error, len(v.shelves))
		var wg sync.WaitGroup
		sem := make(chan struct{}, 4)
		for i, b := range v.shelves {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				seg, err := b.segment()
				if err == nil && embedder != "" && b.embedder == embedder {
					_, err = seg.vecs.get()
				}
				errs[i] = err
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				v.loadErr = err
				return
			}
		}
		for _, b := range v.shelves {
			v.total += b.seg.totalLen
		}
	})
	return v.loadErr
}

// at returns the shelf index and local index of global child g.
func (v *view) at(g int) (int, int) {
	i, ok := slices.BinarySearch(v.base, g)
	if !ok {
		i--
	}
	for i+1 < len(v.base) && v.base[i+1] == g { // skip empty shelves
		i++
	}
	return i, g - v.base[i]
}

// child returns the passage of global child g.
func (v *view) child(g int) *ingest.Passage {
	i, j := v.at(g)
	return &v.shelves[i].seg.ps[j]
}

// filter returns which shelves a book filter admits (nil: all).
func (v *view) filter(names []string) []bool {
	if len(names) == 0 {
		return nil
	}
	f := bookFilter(names)
	ok := make([]bool, len(v.shelves))
	for i, b := range v.shelves {
		ok[i] = f.ok(b.name)
	}
	return ok
}

// hit is a scored child.
type hit struct {
	g int
	s float64
}

// topK keeps the n best hits: higher score first, then lower index (a min-heap of the kept).
type topK struct {
	n int
	h []hit
}

func (t *topK) Len() int { return len(t.h) }
func (t *topK) Less(i, j int) bool { // the worse hit is "less": it is evicted first
	a, b := t.h[i], t.h[j]
	return a.s < b.s || a.s == b.s && a.g > b.g
}
func (t *topK) Swap(i, j int) { t.h[i], t.h[j] = t.h[j], t.h[i] }
func (t *topK) Push(x any)    { t.h = append(t.h, x.(hit)) }
func (t *topK) Pop() any {
	x := t.h[len(t.h)-1]
	t.h = t.h[:len(t.h)-1]
	return x
}

func (t *topK) add(g int, s float64) {
	if len(t.h) < t.n {
		heap.Push(t, hit{g, s})
		return
	}
	if w := t.h[0]; s > w.s || s == w.s && g < w.g {
		t.h[0] = hit{g, s}
		heap.Fix(t, 0)
	}
}

// sorted returns the kept hits, best first.
func (t *topK) sorted() []hit {
	slices.SortFunc(t.h, func(a, b hit) int { return cmp.Or(cmp.Compare(b.s, a.s), cmp.Compare(a.g, b.g)) })
	return t.h
}

// accumulators are reused between searches: one score per child, and the children touched.
var accumulators = sync.Pool{New: func() any { return &acc{} }}

type acc struct {
	score   []float64
	touched []int32
}

// bm25 ranks the children for the query tokens with Okapi BM25 (k1 = 1.2, b = 0.75) over the
// whole view (its statistics summed over the books) and returns the best n of the admitted
// shelves, best first, ties to the earlier book and position.
func (v *view) bm25(query []string, n int, ok []bool) []hit {
	const k1, b = 1.2, 0.75
	if v.n == 0 {
		return nil
	}
	N := float64(v.n)
	avg := float64(v.total) / N
	a := accumulators.Get().(*acc)
	defer accumulators.Put(a)
	if len(a.score) < v.n {
		a.score = make([]float64, v.n)
	}
	a.touched = a.touched[:0]
	seen := map[string]bool{}
	for _, t := range query {
		if seen[t] {
			continue
		}
		seen[t] = true
		terms, df := v.term(t)
		if df == 0 {
			continue
		}
		idf := math.Log(1 + (N-float64(df)+0.5)/(float64(df)+0.5))
		for i, sh := range v.shelves {
			if terms[i] < 0 || ok != nil && !ok[i] {
				continue // a book the filter leaves out costs nothing
			}
			seg, base := sh.seg, v.base[i]
			docs, tfs := seg.postings(int(terms[i]))
			score := a.score[base : base+len(seg.ps)]
			for k, doc := range docs {
				tf := float64(tfs[k])
				norm := tf * (k1 + 1) / (tf + k1*(1-b+b*float64(seg.lens[doc])/avg))
				if score[doc] == 0 {
					a.touched = append(a.touched, int32(base+int(doc)))
				}
				score[doc] += idf * norm
			}
		}
	}
	top := topK{n: n, h: make([]hit, 0, n)}
	for _, g := range a.touched {
		top.add(int(g), a.score[g])
		a.score[g] = 0
	}
	return top.sorted()
}

// termsCached bounds the terms a view remembers the dictionary entries of.
const termsCached = 50000

// termEntry is where a term stands in each book's dictionary (-1: absent) and its document
// frequency over the view.
type termEntry struct {
	at []int32
	df int
}

// term looks a term up in every book's dictionary, once per view for the terms searched often.
func (v *view) term(t string) ([]int32, int) {
	if e, ok := v.terms.Load(t); ok {
		te := e.(*termEntry)
		return te.at, te.df
	}
	te := &termEntry{at: make([]int32, len(v.shelves))}
	th := termHash(t)
	for i, sh := range v.shelves {
		te.at[i] = int32(sh.seg.termHashed(t, th))
		if te.at[i] >= 0 {
			te.df += sh.seg.termDF(int(te.at[i]))
		}
	}
	if v.cachedTerms.Add(1) <= termsCached {
		v.terms.Store(t, te)
	}
	return te.at, te.df
}

// nearest ranks the children by the dot product of their vectors with q (unit vectors: cosine
// similarity) and returns the best n of the admitted shelves. A book whose vectors another
// embedder made is an error that says how to re-embed.
func (v *view) nearest(q []float32, embedder string, n int, ok []bool) ([]hit, error) {
	top := topK{n: n, h: make([]hit, 0, n)}
	var buf []float32
	for i, sh := range v.shelves {
		if ok != nil && !ok[i] {
			continue
		}
		if sh.embedder != embedder {
			return nil, fmt.Errorf("the book %q was embedded with %s, the settings ask for %s (run `caprag ingest --reindex`): %w", sh.name, cmp.Or(sh.embedder, "no embedder"), embedder, rag.ErrEmbedderMismatch)
		}
		vs, err := sh.seg.vecs.get()
		if err != nil {
			return nil, err
		}
		if vs == nil || vs.dims != len(q) {
			continue
		}
		if cap(buf) < vs.n {
			buf = make([]float32, vs.n)
		}
		buf = buf[:vs.n]
		vs.scores(q, buf)
		for j, s := range buf {
			top.add(v.base[i]+j, float64(s))
		}
	}
	return top.sorted(), nil
}

// byID returns the global index of a child ID.
func (v *view) byID(id string) (int, bool) {
	v.ids.once.Do(func() {
		v.ids.m = make(map[string]int, v.n)
		for i, sh := range v.shelves {
			for j := range sh.seg.ps {
				v.ids.m[sh.seg.ps[j].ID] = v.base[i] + j
			}
		}
	})
	g, ok := v.ids.m[id]
	return g, ok
}

// lexicon links the books' parts on first use: the terms of the library and the reference
// graph between its parents (numbered in shelf order, parents in reading order). A view that
// follows a linked one is relinked from its lexicon: adding a book costs what the book touches.
func (v *view) lexicon() *lexicon.Lexicon {
	v.lex.once.Do(func() {
		parts := make([]lexicon.Part, len(v.shelves))
		var wg sync.WaitGroup
		sem := make(chan struct{}, runtime.GOMAXPROCS(0))
		for i, sh := range v.shelves {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				parts[i] = sh.lexiconPart()
			}()
		}
		wg.Wait()
		v.lex.lx, v.lex.relinked = lexicon.Relink(v.lex.from, parts), v.lex.from != nil
		v.lex.from = nil
		v.lex.done.Store(v.lex.lx)
	})
	return v.lex.lx
}

// next makes the view of a library changed from v: its lexicon, when linked, is relinked from
// v's when v's was linked.
func (v *view) next(shelves []*shelf) *view {
	nv := newView(shelves)
	nv.lex.from = v.lex.done.Load()
	return nv
}

// pnum is the lexicon number of a parent.
func (v *view) pnum(p pref) int { return v.parentBase[p.shelf] + p.parent }

// pref returns the parent of a lexicon number.
func (v *view) prefOf(n int) pref {
	i, ok := slices.BinarySearch(v.parentBase, n)
	if !ok {
		i--
	}
	for i+1 < len(v.parentBase) && v.parentBase[i+1] == n {
		i++
	}
	return pref{i, n - v.parentBase[i]}
}

// pref is a parent of a view: shelf and parent index.
type pref struct{ shelf, parent int }

// doc is the document of a child: its parent's text, the child as the match, and the parent's
// references — the explicit ones stored at ingest and its mentions of the library's titles. The
// strings are copied out of the segment, so a document outlives its view.
func (v *view) doc(i, j int, match, withRefs bool, score float64) rag.Document {
	seg := v.shelves[i].seg
	p := &seg.ps[j]
	pi := int(seg.parentOf[j])
	var refs []passage.Reference
	if withRefs {
		refs = v.lexicon().Refs(v.pnum(pref{i, pi}))
	}
	d := rag.Document{
		ID: strings.Clone(p.ParentID), Book: strings.Clone(p.Book), Section: strings.Clone(p.Section), Page: p.Page,
		Source: strings.Clone(p.Source), Text: strings.Clone(p.Parent), Score: score, Refs: cloneRefs(refs),
	}
	if match {
		d.Match = strings.Clone(p.Text)
	}
	return d
}

func cloneRefs(rs []passage.Reference) []passage.Reference {
	for i := range rs {
		r := &rs[i]
		r.Kind = passage.RefKind(strings.Clone(string(r.Kind)))
		r.Text, r.Target, r.Book = strings.Clone(r.Text), strings.Clone(r.Target), strings.Clone(r.Book)
	}
	return rs
}

// parentDoc is the document of a parent (its first child, unmatched).
func (v *view) parentDoc(p pref) rag.Document {
	seg := v.shelves[p.shelf].seg
	return v.doc(p.shelf, int(seg.parents[p.parent].first), false, true, 0)
}

// titled returns the parents whose section's last heading has key k, in book order; when no
// heading has it, the parent that defines a rule of that name.
func (v *view) titled(k string) []pref {
	var out []pref
	for i, sh := range v.shelves {
		for _, p := range sh.seg.headings(k) {
			out = append(out, pref{i, int(p)})
		}
	}
	if len(out) > 0 {
		return out
	}
	// Terms are found by name too: a rule defined under a run-in heading ("Malice (Inhaled). A
	// creature…"), a heading's parts ("Bronze Rule" of "THE BRONZE RULE, AKA THE FATE FRACTAL").
	lx := v.lexicon()
	if e := lx.Terms[k]; e != nil {
		for _, d := range e.Defs {
			out = append(out, v.prefOf(d))
		}
	}
	return out
}

// titleKeysWithPrefix lists, sorted, the lookup keys that start with prefix.
func (v *view) titleKeysWithPrefix(prefix string) []string {
	set := map[string]bool{}
	for _, sh := range v.shelves {
		for k := range sh.seg.headingKeySet() {
			if strings.HasPrefix(k, prefix) {
				set[k] = true
			}
		}
	}
	for k := range v.lexicon().Terms {
		if strings.HasPrefix(k, prefix) {
			set[k] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// titleParents finds the parents of the sections a title names: exact heading first, then the
// stemmed heading, then a heading that starts with the target ("appendix PH-A" → "Appendix PH-A:
// Conditions"). The first parent of each section comes first.
func (v *view) titleParents(target, book string) []pref {
	if strings.Contains(target, " > ") {
		if p := v.pathParents(target, book); len(p) > 0 {
			return p
		}
	}
	n := words.Normalize(target)
	s := strings.Join(words.Tokens(target), " ")
	pick := func(ps []pref) []pref {
		if book == "" {
			return ps
		}
		var out []pref
		for _, p := range ps {
			if v.shelves[p.shelf].name == book {
				out = append(out, p)
			}
		}
		return out
	}
	for _, key := range []string{n, s} {
		if key == "" {
			continue
		}
		if p := pick(v.titled(key)); len(p) > 0 {
			return v.firstOfSections(p)
		}
	}
	if len(n) >= 4 {
		var out []pref
		for _, k := range v.titleKeysWithPrefix(n + " ") {
			out = append(out, pick(v.titled(k))...)
		}
		return v.firstOfSections(out)
	}
	return nil
}

// firstOfSections orders parents so the first parent of each section comes before the rest.
func (v *view) firstOfSections(ps []pref) []pref {
	seen := map[string]bool{}
	var first, rest []pref
	for _, p := range ps {
		sh := v.shelves[p.shelf]
		key := sh.name + "\x00" + sh.seg.parents[p.parent].section
		if seen[key] {
			rest = append(rest, p)
		} else {
			seen[key] = true
			first = append(first, p)
		}
	}
	return append(first, rest...)
}

// resolve returns the parents a reference points to.
func (v *view) resolve(from rag.Document, ref passage.Reference) []pref {
	if ref.ID != "" {
		if n, ok := v.lexicon().ByID[ref.ID]; ok {
			return []pref{v.prefOf(n)}
		}
		return nil
	}
	if ref.Kind == passage.RefPage {
		book := cmp.Or(ref.Book, from.Book)
		page := strings.TrimLeft(ref.Target, "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
		var out []pref
		for i, sh := range v.shelves {
			if sh.name == book {
				for _, p := range sh.seg.page(page) {
					out = append(out, pref{i, int(p)})
				}
			}
		}
		return out
	}
	return v.titleParents(ref.Target, ref.Book)
}

// mentions returns the terms of the books that a text (a question) names, the most specific
// first, each as a reference to the passage that defines it.
func (v *view) mentions(text string) []passage.Reference {
	return cloneRefs(v.lexicon().Named(text))
}
