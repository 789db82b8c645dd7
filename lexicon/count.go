package lexicon

import (
	"maps"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// Link resolves the parts of a library against each other: it finds the library's terms and
// counts the passages that mention each; links and word counts are read on demand.
func Link(parts []Part) *Lexicon {
	lx := newLexicon(parts)
	counts := map[string]int{}
	countParts(parts, func(int) bool { return true }, func(p Part, c map[string]int) {
		for d := range p.Docs {
			for _, k := range mentioned(lx.fullFirst, p, d) {
				c[k]++
			}
		}
	}, counts)
	lx.settle(counts)
	return lx
}

// Relink links parts as Link does, starting from base, a lexicon of some of the same parts
// (a library before a book was added, replaced or removed; the shared books of a server's
// view): only the passages of base's parts that hold the first word of a term whose definition
// changed are read again, with the parts base did not have. The result is Link's.
func Relink(base *Lexicon, parts []Part) *Lexicon {
	if base == nil || base.full == nil {
		return Link(parts)
	}
	lx := newLexicon(parts)
	// The terms whose matching changed: added, gone, or written differently. A passage that
	// holds none of their first words reads as it did.
	changed := map[string]bool{}
	for k, e := range lx.full {
		if o := base.full[k]; o == nil || !slices.Equal(o.Exact, e.Exact) {
			changed[e.indexStem()] = true
			if o != nil {
				changed[o.indexStem()] = true
			}
		}
	}
	for k, o := range base.full {
		if lx.full[k] == nil {
			changed[o.indexStem()] = true
		}
	}
	had, has := map[*stream]bool{}, map[*stream]bool{}
	for _, p := range base.Parts {
		had[p.words()] = true
	}
	for _, p := range parts {
		has[p.words()] = true
	}
	counts := map[string]int{}
	for k := range lx.full {
		if o := base.full[k]; o != nil {
			counts[k] = o.Mentions
		}
	}
	stems := slices.Collect(maps.Keys(changed))
	all := append(slices.Clone(parts), base.Parts...)
	countParts(all, func(i int) bool { return i < len(parts) || !has[all[i].words()] }, func(p Part, c map[string]int) {
		s := p.words()
		switch {
		case !had[s]: // a new book: every passage counts
			for d := range p.Docs {
				for _, k := range mentioned(lx.fullFirst, p, d) {
					c[k]++
				}
			}
		case !has[s]: // a book gone: none does
			for d := range p.Docs {
				for _, k := range mentioned(base.fullFirst, p, d) {
					c[k]--
				}
			}
		default: // a book kept: the passages that hold a changed term's first word
			hit := make([]bool, len(s.stemDF))
			any := false
			for _, st := range stems {
				if si := s.stemIndex(st); si != noStem {
					hit[si], any = true, true
				}
			}
			if !any {
				return
			}
			for d := range p.Docs {
				if !s.holds(d, hit) {
					continue
				}
				for _, k := range mentioned(base.fullFirst, p, d) {
					c[k]--
				}
				for _, k := range mentioned(lx.fullFirst, p, d) {
					c[k]++
				}
			}
		}
	}, counts)
	for k := range counts {
		if lx.full[k] == nil {
			delete(counts, k)
		}
	}
	lx.settle(counts)
	return lx
}

// newLexicon numbers the parts' passages and gathers their terms.
func newLexicon(parts []Part) *Lexicon {
	lx := &Lexicon{Parts: parts, Terms: map[string]*Entry{}, first: map[string][]*Entry{}, base: make([]int, len(parts))}
	for pi, p := range parts {
		lx.base[pi] = lx.N
		lx.N += len(p.Docs)
	}
	lx.Docs = make([]DocRef, 0, lx.N)
	lx.ByID = make(map[string]int, lx.N)
	for pi, p := range parts {
		for di, d := range p.Docs {
			lx.ByID[d.ID] = len(lx.Docs)
			lx.Docs = append(lx.Docs, DocRef{Part: pi, Doc: di, Book: p.Book, ID: d.ID})
		}
	}
	lx.indexBookNames()
	lx.defineTerms()
	lx.full, lx.fullFirst = maps.Clone(lx.Terms), lx.first
	return lx
}

// settle sets each term's mentions and specificity from the counts, and drops the weak ones.
func (lx *Lexicon) settle(counts map[string]int) {
	norm := math.Log(float64(lx.N) + 1)
	weak := false
	for key, e := range lx.full {
		e.Mentions = counts[key]
		e.Spec = math.Log(float64(lx.N+1)/float64(e.Mentions+1)) / norm
		// A name given in passing — a run-in heading, the verb of a heading — names its rule only
		// when it is at least as specific as the geometric middle of the library: used by fewer
		// than √(N+1) passages ("concede" for Conceding the Conflict, not "create" for Creating
		// Spell Slots, nor "Gem" for a card of a deck).
		if e.Kind >= RunIn && e.Spec < 0.5 {
			delete(lx.Terms, key)
			weak = true
		}
	}
	if weak {
		lx.first = map[string][]*Entry{}
		for _, key := range slices.Sorted(mapKeys(lx.Terms)) {
			lx.index(key)
		}
	}
}

// countParts runs count over the parts that want admits, on every core, each into counts of
// its own, and adds them into counts.
func countParts(parts []Part, want func(int) bool, count func(Part, map[string]int), counts map[string]int) {
	var next atomic.Int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(parts)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := map[string]int{}
			for {
				i := int(next.Add(1) - 1)
				if i >= len(parts) {
					break
				}
				if want(i) {
					count(parts[i], c)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			for k, n := range c {
				counts[k] += n
			}
		}()
	}
	wg.Wait()
}

// tokenBufs are reused by mentioned.
var tokenBufs = sync.Pool{New: func() any { return new([]Token) }}

// mentioned returns the terms of an index that a part's passage d mentions, each once.
func mentioned(first map[string][]*Entry, p Part, d int) []string {
	buf := tokenBufs.Get().(*[]Token)
	defer tokenBufs.Put(buf)
	*buf = p.words().tokens(d, (*buf)[:0])
	var keys []string
	for _, m := range findIn(first, *buf) {
		if !slices.Contains(keys, m.key) {
			keys = append(keys, m.key)
		}
	}
	return keys
}
