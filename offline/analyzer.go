package offline

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/caprag/caprag/lexicon"
	"github.com/caprag/caprag/rag"
	"github.com/caprag/caprag/words"
)

// Library is what the offline roles read about the books loaded: the lexicon derived from them
// (the store implements it). Its Lexicon may be nil (no books).
type Library interface {
	Lexicon() *lexicon.Lexicon
}

// Analyzer decides, from the books' own reference graph, whether the passages found answer the
// question or which rule is still missing.
//
// It reads the passages the latest hop found that are about the question — those holding at
// least half of what the best of them holds of the question's words, weighted by how rare each
// word is in the books (IDF), with the sections above and below them — and the links the lexicon
// knows from them (package lexicon). Two kinds of link lead to another hop:
//   - an explicit link (a "see X" or page reference, a state the rule puts a creature in —
//     "…or become frightened" —, a rule named in a sentence that names its book) of the passage
//     that holds most of the question, wherever it stands: the authors of the rule asked about
//     point at what it depends on ("on a success the target is grappled (see Conditions)"
//     shares no word with "how does he get loose?");
//   - an explicit link of another passage about the question that stands where the passage
//     speaks of the question: in a window (the sentence's short paragraph, else the sentence
//     and its neighbours) holding at least half of what the passage's best window holds of the
//     question (a passage a link led to may hold none of it: all its explicit links count);
//   - on the first hop, when the best passage does not already hold most of the question, a
//     mention of a defined term whose own passage holds a part of the question that none of the
//     passages about it holds (the coverage gain), ranked by the mention's specificity, the
//     passage's relevance and the gain.
//
// A question that names a part of a rule by its run-in heading ("What does the wyrm's Venom
// Fang do?") asks about that part: links elsewhere in the rule (its Tail, its other passages)
// are not about the question.
//
// Explicit links come first; at most in.Max rules are named. It is sufficient when no link
// qualifies. Without a lexicon it follows the explicit references of the passage found first.
type Analyzer struct {
	Books Library // nil: only the passages' explicit references are followed
}

// The analyzer's few numbers, chosen once (README, "Answers").
const (
	// answeredShare is the share of the question the best passage of the first hop must hold
	// to answer it: then only explicit links are followed.
	answeredShare = 0.6
	// focusShare: a passage of the hop is about the question when it holds at least this share
	// of what the best passage holds.
	focusShare = 0.5
	// explicitWindow: an explicit link is followed when its window holds at least this share
	// of what the passage's best window holds.
	explicitWindow = 0.5
	// minLinkGain is the share of the question a mentioned rule's own passage must add to what the
	// passages about the question hold, for a plain mention to be worth a hop.
	minLinkGain = 0.15
	// paragraphSentences is the longest paragraph read as one window.
	paragraphSentences = 5
)

// Analyze implements rag.Analyzer.
func (a Analyzer) Analyze(_ context.Context, in rag.AnalyzeInput) (rag.Analysis, error) {
	var lx *lexicon.Lexicon
	if a.Books != nil {
		lx = a.Books.Lexicon()
	}
	if lx == nil || lx.N == 0 {
		return explicitOnly(in), nil
	}
	return newView(lx, in).decide(), nil
}

// explicitOnly follows the explicit references ("see X", pages) of the passage found first,
// when no lexicon is at hand.
func explicitOnly(in rag.AnalyzeInput) rag.Analysis {
	var names []string
	for _, d := range in.Documents {
		if d.Rank > 0 || d.Hop > 1 {
			continue
		}
		for _, h := range d.Hints {
			if h.Kind != rag.RefMention && !vagueTarget[strings.ToLower(h.Target)] {
				names = append(names, h.Target)
			}
		}
	}
	return ask(in, names)
}

// ask names the rules to read next, each once and none already asked, at most in.Max.
func ask(in rag.AnalyzeInput, names []string) rag.Analysis {
	var a rag.Analysis
	asked := map[string]bool{}
	for _, q := range in.Asked {
		asked[strings.ToLower(q)] = true
	}
	for _, n := range names {
		if len(a.NewQueries) == max(1, in.Max) {
			break
		}
		if asked[strings.ToLower(n)] {
			continue
		}
		asked[strings.ToLower(n)] = true
		a.NewQueries = append(a.NewQueries, n)
	}
	a.Following = a.NewQueries
	a.Sufficient = len(a.NewQueries) == 0
	return a
}

// vagueTarget are "see" phrases that point nowhere in particular.
var vagueTarget = map[string]bool{"below": true, "above": true, "text": true, "the text": true, "description": true, "table": true, "the table": true}

// view is the question, the passages found and the library's graph around them.
type view struct {
	lx      *lexicon.Lexicon
	in      rag.AnalyzeInput
	q       map[string]float64 // the question's words the books use, with their IDF
	total   float64
	ctx     map[int]int // library number → index in in.Documents
	stems   map[int]map[string]bool
	covered map[string]bool // what the passages about the question hold
	// parts are the paragraphs of a passage the question names by their run-in heading.
	parts map[int]map[int]bool
}

func newView(lx *lexicon.Lexicon, in rag.AnalyzeInput) *view {
	v := &view{lx: lx, in: in, q: map[string]float64{}, ctx: map[int]int{}, stems: map[int]map[string]bool{}}
	for _, t := range words.Content(in.Question) {
		if lx.DF(t) > 0 {
			v.q[t] = lx.IDF(t)
		}
	}
	for _, w := range v.q {
		v.total += w
	}
	for i, d := range in.Documents {
		if n, ok := lx.ByID[d.ID]; ok {
			v.ctx[n] = i
		}
	}
	v.parts = namedParts(lx, in.Question)
	return v
}

// namedParts finds the parts of passages a question names: the paragraphs that open with a
// run-in heading the question names ("What does the wyrm's Venom Fang do?" asks about the Venom
// Fang paragraph of the Marsh Wyrm, not its Tail), by passage.
func namedParts(lx *lexicon.Lexicon, question string) map[int]map[int]bool {
	var out map[int]map[int]bool
	for _, m := range lx.Mentions(question) {
		if e := lx.Terms[m.Key]; e == nil || e.Kind != lexicon.RunIn {
			continue
		}
		stems := strings.Fields(m.Key)
		for _, d := range m.Defs {
			toks := lx.Tokens(d)
			for i, t := range toks {
				if i > 0 && toks[i-1].Para == t.Para || i+len(stems) > len(toks) {
					continue
				}
				match := true
				for j, s := range stems {
					if toks[i+j].Stem != s {
						match = false
						break
					}
				}
				if match {
					if out == nil {
						out = map[int]map[int]bool{}
					}
					if out[d] == nil {
						out[d] = map[int]bool{}
					}
					out[d][t.Para] = true
				}
			}
		}
	}
	return out
}

// decide names the rules to read next, best first, or says the passages suffice.
func (v *view) decide() rag.Analysis {
	hop := 0
	for _, d := range v.in.Documents {
		hop = max(hop, d.Hop)
	}
	// The passages this hop found are where the next links start.
	best, bestCov := -1, -1.0
	for _, n := range v.sorted() {
		d := v.in.Documents[v.ctx[n]]
		if c := v.cover(v.stemsOf(n)); d.Hop == hop && c > bestCov {
			best, bestCov = n, c
		}
	}
	if best < 0 {
		return rag.Analysis{Sufficient: true}
	}
	answered := hop > 1 || bestCov >= answeredShare
	focus := map[int]bool{}
	for _, n := range v.sorted() {
		if d := v.in.Documents[v.ctx[n]]; d.Hop == hop && v.cover(v.stemsOf(n)) >= focusShare*bestCov {
			focus[n] = true
		}
	}
	// A rule and its subsections are one rule: "Food and Water" says what "Food" leads to.
	for _, n := range v.sorted() {
		for f := range focus {
			if !focus[n] && v.family(n, f) {
				focus[n] = true
			}
		}
	}
	v.covered = map[string]bool{}
	for n := range focus {
		for t := range v.stemsOf(n) {
			v.covered[t] = true
		}
	}
	score := map[int]float64{}
	for _, n := range v.sorted() {
		if !focus[n] {
			continue
		}
		d := v.in.Documents[v.ctx[n]]
		seed := v.cover(v.stemsOf(n)) / float64(1+d.Rank)
		sents, paras := v.sentences(n)
		bestWin := 0.0
		for j := range sents {
			bestWin = max(bestWin, v.window(sents, paras, j))
		}
		part := v.parts[n]
		if part == nil && v.otherPart(n) {
			continue
		}
		for _, e := range v.lx.Edges(n) {
			if _, in := v.ctx[e.To]; in {
				continue
			}
			if part != nil && !inPart(part, paras, e) {
				continue
			}
			win := v.window(sents, paras, e.Sentence)
			for _, j := range e.Also {
				win = max(win, v.window(sents, paras, j))
			}
			var s float64
			switch {
			case e.Weight >= 1 && (n == best || (win > 0 || hop > 1) && win >= explicitWindow*bestWin):
				s = 10 + seed*(0.5+win) // explicit links rank above every mention
			case answered:
				continue
			default:
				gain := v.gain(e.To)
				if gain < minLinkGain {
					continue
				}
				s = seed * e.Weight * (0.5 + win) * (1 + gain)
			}
			score[e.To] = max(score[e.To], s)
		}
	}
	cands := make([]int, 0, len(score))
	for n := range score {
		cands = append(cands, n)
	}
	slices.SortFunc(cands, func(a, b int) int { return cmp.Or(cmp.Compare(score[b], score[a]), cmp.Compare(a, b)) })
	names := make([]string, len(cands))
	for i, n := range cands {
		names[i] = v.target(n)
	}
	return ask(v.in, names)
}

// otherPart reports whether a passage is another part of a rule the question names a part of:
// its links are not about the question.
func (v *view) otherPart(n int) bool {
	for m := range v.parts {
		if m != n && v.family(m, n) {
			return true
		}
	}
	return false
}

// inPart reports whether a link stands in a part of its passage (paragraphs, by number).
func inPart(part map[int]bool, paras []int, e lexicon.Edge) bool {
	for _, j := range append([]int{e.Sentence}, e.Also...) {
		if j < len(paras) && part[paras[j]] {
			return true
		}
	}
	return false
}

// sorted returns the library numbers of the passages found, in order (deterministic loops).
func (v *view) sorted() []int {
	out := make([]int, 0, len(v.ctx))
	for n := range v.ctx {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// target is the name by which a passage is asked for: the target of the references to it.
func (v *view) target(n int) string {
	id := v.lx.Docs[n].ID
	for _, d := range v.in.Documents {
		for _, h := range d.Hints {
			if h.ID == id {
				return h.Target
			}
		}
	}
	return v.lx.Title(n)
}

// family reports whether two passages are of one rule: the same book, and one's section is the
// other's or holds it.
func (v *view) family(a, b int) bool {
	if v.lx.Docs[a].Book != v.lx.Docs[b].Book {
		return false
	}
	sa, sb := v.lx.Doc(a).Section, v.lx.Doc(b).Section
	return sa == sb || strings.HasPrefix(sa, sb+" > ") || strings.HasPrefix(sb, sa+" > ")
}

// stemsOf returns the stems of a library passage and of its section path.
func (v *view) stemsOf(n int) map[string]bool {
	if s, ok := v.stems[n]; ok {
		return s
	}
	s := map[string]bool{}
	for _, t := range v.lx.Tokens(n) {
		s[t.Stem] = true
	}
	for _, t := range words.Tokens(v.lx.Doc(n).Section) {
		s[t] = true
	}
	v.stems[n] = s
	return s
}

// cover is the IDF-weighted share of the question's words that a set of stems holds.
func (v *view) cover(s map[string]bool) float64 {
	if v.total == 0 {
		return 1
	}
	var c float64
	for t, w := range v.q {
		if s[t] {
			c += w
		}
	}
	return c / v.total
}

// gain is the share of the question a passage's text holds that the passages about the
// question do not.
func (v *view) gain(n int) float64 {
	var c float64
	for t, w := range v.q {
		if !v.covered[t] && v.lx.Uses(n, t) {
			c += w
		}
	}
	if v.total == 0 {
		return 0
	}
	return c / v.total
}

// sentences returns the stems of each sentence of a library passage, and each one's paragraph.
func (v *view) sentences(n int) (stems []map[string]bool, paras []int) {
	for _, t := range v.lx.Tokens(n) {
		for len(stems) <= t.Sentence {
			stems = append(stems, map[string]bool{})
			paras = append(paras, t.Para)
		}
		stems[t.Sentence][t.Stem] = true
		paras[t.Sentence] = t.Para
	}
	return stems, paras
}

// window is the share of the question held where a sentence stands: its paragraph when that is
// short (a rule under a run-in heading: "Malice (Inhaled). … become poisoned for 1 hour. The
// poisoned creature is blinded."), else the sentence and its neighbours.
func (v *view) window(sents []map[string]bool, paras []int, i int) float64 {
	if i >= len(sents) {
		return 0
	}
	lo, hi := i, i
	for lo > 0 && paras[lo-1] == paras[i] {
		lo--
	}
	for hi < len(sents)-1 && paras[hi+1] == paras[i] {
		hi++
	}
	if hi-lo+1 > paragraphSentences {
		lo, hi = max(0, i-1), min(len(sents)-1, i+1)
	}
	var c float64
	for t, w := range v.q {
		for j := lo; j <= hi; j++ {
			if sents[j][t] {
				c += w
				break
			}
		}
	}
	if v.total == 0 {
		return 1
	}
	return c / v.total
}
