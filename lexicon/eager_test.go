package lexicon

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// eager is a library's lexicon as a full link computes it: every passage read from its text,
// every count and link found at once, before any question.
type eager struct {
	lx        *Lexicon // numbering and the terms (what Link's rules define)
	tokens    [][]Token
	edges     [][]Edge
	df        map[string]int
	definedBy map[string]map[string]int // stem → term → how many stems its definition holds
}

// linkEager links the parts the way Link did before it read lazily: the passages' words from
// their text (not from the parts' stored words), mentions counted over every passage, every
// passage's links, the word counts and the definitions gathered up front.
func linkEager(parts []Part) eager {
	e := eager{lx: newLexicon(parts), df: map[string]int{}, definedBy: map[string]map[string]int{}}
	lx := e.lx
	counts := map[string]int{}
	for n := range lx.N {
		toks := tokenize(lx.Doc(n).Text)
		e.tokens = append(e.tokens, toks)
		seen := map[string]bool{}
		for _, t := range toks {
			if !seen[t.Stem] {
				seen[t.Stem] = true
				e.df[t.Stem]++
			}
		}
		seen = map[string]bool{}
		for _, m := range findIn(lx.fullFirst, toks) {
			if !seen[m.key] {
				seen[m.key] = true
				counts[m.key]++
			}
		}
	}
	lx.settle(counts)
	for n := range lx.N {
		e.edges = append(e.edges, lx.link(n, e.tokens[n], lx.find(e.tokens[n])))
	}
	for _, key := range slices.Sorted(mapKeys(lx.Terms)) {
		t := lx.Terms[key]
		if t.Kind > RunIn || len(t.Defs) != 1 {
			continue
		}
		def := definition(lx.Doc(t.Defs[0]).Text, t.Kind, t.Name)
		for _, st := range def {
			if e.definedBy[st] == nil {
				e.definedBy[st] = map[string]int{}
			}
			e.definedBy[st][key] = len(def)
		}
	}
	return e
}

// sameAsEager checks that lx, read lazily, says what a full link of its parts says: the same
// terms with the same mentions and specificity, the same words and links of every passage (read
// in a random order, with a cache too small to keep them all), the same word counts and
// definitions.
func sameAsEager(t testing.TB, lx *Lexicon) {
	t.Helper()
	defer func(n int) { edgesCached = n }(edgesCached)
	edgesCached = 7
	want := linkEager(lx.Parts)
	if lx.N != want.lx.N || !reflect.DeepEqual(lx.Docs, want.lx.Docs) || !reflect.DeepEqual(lx.ByID, want.lx.ByID) {
		t.Fatalf("the passages are numbered differently (%d, %d)", lx.N, want.lx.N)
	}
	if len(lx.Terms) != len(want.lx.Terms) {
		t.Errorf("%d terms, a full link has %d", len(lx.Terms), len(want.lx.Terms))
	}
	for k, w := range want.lx.Terms {
		if g := lx.Terms[k]; g == nil || !reflect.DeepEqual(*g, *w) {
			t.Errorf("term %q: %+v, a full link has %+v", k, g, w)
		}
	}
	for _, n := range rand.Perm(lx.N) {
		if g := lx.Edges(n); !reflect.DeepEqual(g, want.edges[n]) {
			t.Errorf("passage %d (%s) links %+v, a full link %+v", n, lx.Docs[n].ID, g, want.edges[n])
		}
		if g := lx.Tokens(n); !reflect.DeepEqual(g, want.tokens[n]) && len(g)+len(want.tokens[n]) > 0 {
			t.Errorf("passage %d: words %v, its text has %v", n, g, want.tokens[n])
		}
		for _, tk := range want.tokens[n] {
			if !lx.Uses(n, tk.Stem) {
				t.Errorf("passage %d does not use %q", n, tk.Stem)
			}
		}
	}
	for st, df := range want.df {
		if g := lx.DF(st); g != df {
			t.Errorf("DF(%q) = %d, want %d", st, g, df)
		}
		if g := lx.defined(st); !reflect.DeepEqual(g, want.definedBy[st]) && len(g)+len(want.definedBy[st]) > 0 {
			t.Errorf("terms defined with %q: %v, want %v", st, g, want.definedBy[st])
		}
	}
	if lx.DF("zzqx") != 0 || lx.N > 0 && lx.Uses(0, "zzqx") {
		t.Error("a word no passage uses is counted")
	}
}

// SameAsEager is sameAsEager for the tests of package lexicon_test (which read the corpora
// through package ingest).
var SameAsEager = sameAsEager

// sameLexicon checks that two lexicons of the same parts say the same.
func sameLexicon(t testing.TB, got, want *Lexicon) {
	t.Helper()
	if got.N != want.N || !reflect.DeepEqual(got.Docs, want.Docs) {
		t.Fatalf("the passages are numbered differently (%d, %d)", got.N, want.N)
	}
	if !reflect.DeepEqual(got.Terms, want.Terms) || !reflect.DeepEqual(got.full, want.full) {
		t.Errorf("terms differ: %d and %d (%d and %d before the weak ones are dropped)", len(got.Terms), len(want.Terms), len(got.full), len(want.full))
		for k, w := range want.full {
			if g := got.full[k]; g == nil || !reflect.DeepEqual(*g, *w) {
				t.Errorf("term %q: %+v, want %+v", k, g, w)
			}
		}
	}
	if !reflect.DeepEqual(got.first, want.first) || !reflect.DeepEqual(got.fullFirst, want.fullFirst) {
		t.Error("the terms are indexed differently")
	}
	// Links follow from the terms and their index: the first passages' are compared too.
	for n := range min(got.N, 300) {
		if g, w := got.Edges(n), want.Edges(n); !reflect.DeepEqual(g, w) {
			t.Errorf("passage %d links %+v, want %+v", n, g, w)
		}
	}
}

// SameLexicon is sameLexicon for package lexicon_test.
var SameLexicon = sameLexicon
