package offline

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/caprag/caprag/passage"
	"github.com/caprag/caprag/rag"
	"github.com/caprag/caprag/words"
)

// Writer answers extractively: it quotes the few whole sentences, list items and table rows of
// the passages that state what the question asks, each with its citation, and what the rules
// they point to say. When the passages leave the question's distinctive words uncovered, it says
// so before quoting the closest passages.
//
// The question's words are weighed by how distinctive they are (inverse document frequency):
// over the books when Vocabulary is set, else over the passages handed to the writer.
type Writer struct {
	Vocabulary Vocabulary
}

// Vocabulary tells how common a word is in the books. The stores implement it.
type Vocabulary interface {
	// Frequency returns how many passages of the books hold the stem (a word as words.Stem
	// leaves it) and how many passages there are.
	Frequency(stem string) (passages, total int)
}

// The answer's size and the thresholds of its choices. They are shares of the question's total
// word weight, so they mean the same for short and long questions.
const (
	// maxSeeds is how many passages are chosen for bearing on the question, each scoring at
	// least seedShare of the passage that bears most.
	maxSeeds  = 4
	seedShare = 0.5
	// maxPicks is how many sentences, items or rows are chosen for the question's words;
	// maxPerDoc how many of them may come from one passage.
	maxPicks  = 6
	maxPerDoc = 3
	// minGain is the share of the question's weight a unit must add to what is quoted to be
	// chosen for it: a sentence that only repeats covered words, or adds a word of little
	// weight, is not.
	minGain = 0.05
	// numberBonus favours a unit that states a number: rules live in their numbers; amountBonus
	// replaces it when the question asks for an amount ("how many", "what does it cost").
	numberBonus = 1.25
	amountBonus = 2
	// maxRuleUnit bounds a rule quoted whole because the question names its run-in heading.
	maxRuleUnit = 400
	// A passage quoted to complete the answer is quoted whole when it has at most maxWholeUnits
	// units of at most maxWholeQuote characters in all.
	maxWholeQuote = 400
	maxWholeUnits = 4
	// maxRows bounds the rows of one table quoted.
	maxRows = 4
	// maxPassages and maxUnits bound the answer: passages cited and units quoted.
	maxPassages = 6
	maxUnits    = 12
	// missedBelow is the share of the question's weight below which the quoted units do not
	// answer it: the answer says the books don't seem to cover it and quotes the closest
	// maxClosest units. Below coveredEnough, the answer names the words it leaves out.
	missedBelow   = 0.3
	maxClosest    = 3
	coveredEnough = 0.5
	// minQuote is the shortest sentence worth quoting, in characters, unless it holds a number.
	minQuote = 20
)

// unit kinds: a sentence (or list item), a table row quoted with its header, a whole rule the
// question names by its run-in heading.
const (
	sentenceUnit = iota
	rowUnit
	ruleUnit
)

// unit is a quotable piece of a passage.
type unit struct {
	doc   int // index of its passage
	pos   int // order within the passage
	block int // paragraph (or table) within the passage
	kind  int
	text  string          // as quoted
	norm  string          // its words normalised (words.Normalize), space-padded
	own   map[string]bool // its words
	terms map[string]bool // its words and its passage's heading's
	num   bool            // holds a number
	named bool            // a table row with a cell the question names
}

// Write implements rag.Writer.
func (w Writer) Write(_ context.Context, question string, docs []rag.Document, _ []rag.Turn) (string, error) {
	if len(docs) == 0 {
		return noPassage, nil
	}
	docTerms := make([]map[string]bool, len(docs))
	for i, d := range docs {
		docTerms[i] = termSet(d.Section + "\n" + d.Text)
	}
	q := newQuery(question, docTerms, w.Vocabulary)
	units := make([][]unit, len(docs))
	for i, d := range docs {
		units[i] = splitUnits(i, d, q.terms)
	}
	a := answer{q: q, docs: docs, docTerms: docTerms, units: units, covered: map[string]bool{}, per: map[int]int{}, numberBonus: numberBonus}
	if asksAmount.MatchString(question) {
		a.numberBonus = amountBonus
	}
	a.choosePassages()
	a.choose()
	a.nameTitles()
	a.continueNumbers()
	a.siblingRows()
	a.complete()
	return a.render(), nil
}

// asksAmount matches a question that asks for an amount, which a number answers.
var asksAmount = regexp.MustCompile(`(?i)\bhow (?:much|many|long|far|often|fast|high|heavy|big|large|deep|wide|old)\b|\b(?:cost|costs|price|prices)\b`)

// noPassage is the answer when no passage was handed to the writer.
const noPassage = "Your books don't seem to cover this: no passage matched the question."

// query is the question's words with their weights and the words as the question wrote them.
type query struct {
	terms  map[string]bool
	weight map[string]float64
	// total is the weight of the words some passage of the context holds: what quoting can
	// cover, the measure of the shares units are chosen by. all is the weight of every word,
	// the measure of how much of the question the answer covers.
	total, all float64
	order      []string          // the terms in the order the question uses them
	shown      map[string]string // term → the word as the question wrote it
}

// newQuery weighs the question's words — without function words and table talk (package
// words) — by inverse document frequency: over the books
// (v), or, without them, over the passages handed to the writer.
func newQuery(question string, inDocs []map[string]bool, v Vocabulary) query {
	q := query{terms: map[string]bool{}, weight: map[string]float64{}, shown: map[string]string{}}
	for _, w := range words.Split(question) {
		if words.IsStop(w) || words.IsChatter(w) {
			continue
		}
		t := words.Stem(w)
		if !q.terms[t] {
			q.terms[t] = true
			q.order = append(q.order, t)
			q.shown[t] = w
		}
	}
	for _, t := range q.order {
		inContext := 0
		for _, m := range inDocs {
			if m[t] {
				inContext++
			}
		}
		n, total := 0, 0
		if v != nil {
			n, total = v.Frequency(t)
		}
		if total == 0 { // no vocabulary (or an empty one): the passages at hand
			n, total = inContext, len(inDocs)
		}
		w := math.Log((float64(total) + 1) / (float64(n) + 0.5))
		q.weight[t] = w
		q.all += w
		if inContext > 0 {
			q.total += w
		}
	}
	return q
}

// share is the weight of the question's words among terms (those not in skip), as a share of
// the weight the context can cover.
func (q query) share(terms, skip map[string]bool) float64 {
	if q.total == 0 {
		return 0
	}
	s := 0.0
	for _, t := range q.order { // in a fixed order: the same sum every time
		if terms[t] && !skip[t] {
			s += q.weight[t]
		}
	}
	return s / q.total
}

// answer is the writer's work on one question.
type answer struct {
	q        query
	docs     []rag.Document
	docTerms []map[string]bool // each passage's words, section path included
	units    [][]unit
	score    []float64  // how strongly each passage bears on the question (passageScore)
	links    [][][]link // by passage and unit: the passages of the context the unit points to
	chosen   []int      // the passages to quote from, in the order chosen
	picked   []unit     // the units to quote, in the order chosen
	covered  map[string]bool
	per      map[int]int // units picked per passage
	// numberBonus multiplies the score of a unit that states a number.
	numberBonus float64
}

// isPicked reports whether u is already chosen.
func (a *answer) isPicked(u unit) bool {
	return slices.ContainsFunc(a.picked, func(p unit) bool { return p.doc == u.doc && p.pos == u.pos })
}

func (a *answer) pick(u unit) {
	if a.isPicked(u) {
		return
	}
	a.picked = append(a.picked, u)
	a.per[u.doc]++
	for t := range u.terms {
		if a.q.terms[t] {
			a.covered[t] = true
		}
	}
}

// passageScore is how strongly passage i bears on the question: whether a search or link of
// the strategy found it first (Rank 0), the share of the question's weight its section path
// and text hold (relative to the passage holding most), its section path's share, and its best
// unit's share. The headings and the best sentence count double: they say what the passage is
// about, where the whole text may only mention a word.
func (a *answer) passageScore(i int, top float64) float64 {
	d := a.docs[i]
	s := 0.0
	if d.Rank == 0 {
		s++
	}
	if top > 0 {
		s += a.q.share(a.docTerms[i], nil) / top
	}
	s += 2 * a.q.share(termSet(d.Section), nil)
	best := 0.0
	for _, u := range a.units[i] {
		best = max(best, a.q.share(u.own, nil))
	}
	return s + 2*best
}

// choosePassages decides which passages to quote from:
//   - the passages that bear most on the question (passageScore, which counts a first hit of
//     the strategy's searches and links): at most maxSeeds, each scoring at least seedShare of
//     the best;
//   - the passages of the context these point to: a rule the chain of references leads to — the
//     chain the strategy follows — is part of the answer even when it shares no word with the
//     question ("…you suffer one level of exhaustion" → Exhaustion).
//
// (Also choosing every first hit of the strategy that some sentence points to added nothing on
// the SRD dev set and cost precision on the Fate one: 39% → 42% without it.)
func (a *answer) choosePassages() {
	a.links = make([][][]link, len(a.docs))
	l := newLinker(a.docs)
	hasUnits := func(j int) bool { return len(a.units[j]) > 0 }
	for i := range a.docs {
		a.links[i] = make([][]link, len(a.units[i]))
		for k, u := range a.units[i] {
			a.links[i][k] = l.linksOf(u, hasUnits)
		}
	}
	top := 0.0
	for _, m := range a.docTerms {
		top = max(top, a.q.share(m, nil))
	}
	a.score = make([]float64, len(a.docs))
	order := make([]int, len(a.docs))
	for i := range a.docs {
		a.score[i] = a.passageScore(i, top)
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(a.score[y], a.score[x]) })
	add := func(i int) {
		if !slices.Contains(a.chosen, i) && len(a.units[i]) > 0 {
			a.chosen = append(a.chosen, i)
		}
	}
	for _, i := range order[:min(maxSeeds, len(order))] {
		if a.score[i] >= seedShare*a.score[order[0]] {
			add(i)
		}
	}
	for _, i := range slices.Clone(a.chosen) {
		for _, ls := range a.links[i] {
			for _, l := range ls {
				add(l.doc)
			}
		}
	}
}

// choose picks, greedily, among the chosen passages' units, those that add most of the
// question's still uncovered weight: a set of sentences that together cover the question, not
// six saying the same. Units of the passages that bear more on the question, and units that
// state numbers, are preferred.
func (a *answer) choose() {
	top := 0.0
	for _, i := range a.chosen {
		top = max(top, a.score[i])
	}
	for len(a.picked) < maxPicks {
		var (
			best      unit
			bestScore float64
			found     bool
		)
		for _, i := range a.chosen {
			if a.per[i] >= maxPerDoc {
				continue
			}
			prior := 0.5 + 0.5*a.score[i]/top
			for _, u := range a.units[i] {
				// The heading's words count half: the sentence that says them itself is the one
				// that states the rule ("… are called the Transitive Planes").
				gain := (a.q.share(u.own, a.covered) + a.q.share(u.terms, a.covered)) / 2
				if gain < minGain || a.isPicked(u) {
					continue
				}
				score := (gain + 0.5*(a.q.share(u.own, nil)+a.q.share(u.terms, nil))/2) * prior
				if u.num {
					score *= a.numberBonus
				}
				if !found || score > bestScore {
					best, bestScore, found = u, score, true
				}
			}
		}
		if !found {
			return
		}
		a.pick(best)
	}
}

// complete quotes something of the chosen passages nothing is quoted from yet, at most
// maxPassages passages and maxUnits units in all. The chain from what is quoted comes first: a
// passage a quoted unit sends the reader to explicitly ("see X"), then one a quoted unit names,
// then the others in the order chosen, each with the unit that points to it when one does
// (the chain the strategy followed). Of the passage itself, its unit holding most of the
// question is quoted, or its opening when none holds enough.
func (a *answer) complete() {
	for len(a.per) < maxPassages && len(a.picked) < maxUnits {
		next, nextPriority := -1, -1.0
		for _, j := range a.chosen {
			if a.per[j] > 0 {
				continue
			}
			// 2 for an explicit reference, 1 for a mention, plus the share of the question the
			// unit that points holds: the sentence about the question leads first.
			p := 0.0
			for _, u := range a.picked {
				for _, l := range a.links[u.doc][a.index(u)] {
					if l.doc == j {
						k := 1.0
						if l.explicit {
							k = 2
						}
						p = max(p, k+a.q.share(u.own, nil))
					}
				}
			}
			if p > nextPriority {
				next, nextPriority = j, p
			}
		}
		if next < 0 {
			return
		}
		if nextPriority == 0 {
			if from, ok := a.pointer(next); ok {
				if a.per[from.doc] == 0 && len(a.per)+2 > maxPassages {
					// no room for the chain: leave the passage out
					a.chosen = slices.DeleteFunc(a.chosen, func(j int) bool { return j == next })
					continue
				}
				a.pick(from)
			}
		}
		a.quote(next)
	}
}

// quote quotes passage j: whole when it is short (a rule of a few sentences, such as a
// condition's list of effects), else its best unit (bestUnit).
func (a *answer) quote(j int) {
	n := 0
	for _, u := range a.units[j] {
		n += utf8.RuneCountInString(u.text)
	}
	if n > maxWholeQuote || len(a.units[j]) > maxWholeUnits {
		a.pick(a.bestUnit(j))
		return
	}
	for _, u := range a.units[j] {
		if len(a.picked) < maxUnits {
			a.pick(u)
		}
	}
}

// index is the position of u among its passage's units.
func (a *answer) index(u unit) int {
	return slices.IndexFunc(a.units[u.doc], func(v unit) bool { return v.pos == u.pos })
}

// pointer is the unit that points to passage j: a quoted one if any, else the one holding
// most of the question, of the passage that bears most on it.
func (a *answer) pointer(j int) (unit, bool) {
	var (
		best      unit
		bestScore = -1.0
	)
	for i := range a.docs {
		if i == j {
			continue
		}
		for k, u := range a.units[i] {
			if !slices.ContainsFunc(a.links[i][k], func(l link) bool { return l.doc == j }) {
				continue
			}
			s := a.q.share(u.terms, nil) + a.score[i]
			if a.isPicked(u) {
				s += 100
			}
			if s > bestScore {
				best, bestScore = u, s
			}
		}
	}
	return best, bestScore >= 0
}

// continueNumbers adds, after a chosen sentence, the next sentence of its paragraph when that
// one carries the rule's numbers on and leans on it ("…fires a beam at one creature within 60
// feet. The creature must succeed on a DC 15 Constitution saving throw or be blinded for 1
// minute."): it holds a number and opens with a pronoun or with "the" and a word of the chosen
// sentence.
func (a *answer) continueNumbers() {
	n := len(a.picked)
	for _, p := range a.picked[:n] {
		if p.kind != sentenceUnit {
			continue
		}
		us := a.units[p.doc]
		k := a.index(p)
		if k < 0 || k+1 >= len(us) {
			continue
		}
		if next := us[k+1]; next.block == p.block && next.kind == sentenceUnit && next.num && leansOn(next.text, p.own) {
			a.pick(next)
		}
	}
}

// nameTitles adds, for a passage quoted from whose title the question names, the first unit
// that says the title's words of the question when no quoted unit does: the sentence that
// names its section's subject states what it is ("The Ethereal Plane and the Astral Plane are
// called the Transitive Planes."), where the chosen ones may only have inherited the words from
// the heading.
func (a *answer) nameTitles() {
	for _, i := range slices.Clone(a.chosen) {
		if a.per[i] == 0 || len(a.picked) >= maxUnits {
			continue
		}
		title := map[string]bool{}
		for t := range termSet(passage.LastHeading(a.docs[i].Section)) {
			if a.q.terms[t] {
				title[t] = true
			}
		}
		says := func(u unit) bool { return len(title) > 0 && subset(title, u.own) }
		if len(title) == 0 || slices.ContainsFunc(a.picked, func(u unit) bool { return u.doc == i && says(u) }) {
			continue
		}
		if k := slices.IndexFunc(a.units[i], says); k >= 0 {
			a.pick(a.units[i][k])
		}
	}
}

// siblingRows adds, after a chosen table row, the other rows of its table that the question
// names by a cell: rows are parallel facts, and a question that names several ("modest,
// comfortable and wealthy", "a win or a win with flair") wants each (at most maxRows rows of a
// table), even when their words are quoted already.
func (a *answer) siblingRows() {
	n := len(a.picked)
	for _, p := range a.picked[:n] {
		if p.kind != rowUnit {
			continue
		}
		rows := 0
		for _, u := range a.picked {
			if u.doc == p.doc && u.block == p.block && u.kind == rowUnit {
				rows++
			}
		}
		for _, u := range a.units[p.doc] {
			if rows >= maxRows || len(a.picked) >= maxUnits {
				break
			}
			if u.block == p.block && u.kind == rowUnit && u.named && !a.isPicked(u) {
				a.pick(u)
				rows++
			}
		}
	}
}

// pronounOpening: a sentence opening with a pronoun leans on the one before it.
var pronounOpening = regexp.MustCompile(`^(?:It|Its|This|That|These|Those|They|Their|Such)\b`)

// leansOn reports whether a sentence refers back to the one before, whose words are prev: it
// opens with a pronoun, or with "The" and a word of prev ("The creature must…").
func leansOn(s string, prev map[string]bool) bool {
	if pronounOpening.MatchString(s) {
		return true
	}
	w := strings.Fields(s)
	return len(w) > 1 && w[0] == "The" && prev[words.Stem(strings.ToLower(strings.Trim(w[1], ",;:’'")))]
}

// link is a reference from a unit to a passage of the context.
type link struct {
	doc int
	// explicit: "see X", "as described in X", a page: the book sends the reader there.
	explicit bool
}

// linker finds the passages of the context a unit points to. It reads each passage's titles
// and references once.
type linker struct {
	docs []rag.Document
	// byTitle: a title's folded words (a participle title: its words as written, marked) →
	// the passages it names.
	byTitle map[string][]int
	// refs: by passage, its references with their text and target normalised.
	refs [][]normalRef
}

type normalRef struct {
	ref          rag.Reference
	text, target string // normalised, space-padded
}

// titleKey is how a title or a reference's target is looked up: its folded words, or, when it
// holds a participle ("Grappled"), its words as written, so that it names only itself and not
// the rule of its verb ("Grappling").
func titleKey(name string) string {
	if words.HasParticiple(name) {
		return "=" + words.Normalize(name)
	}
	return words.Fold(name)
}

func newLinker(docs []rag.Document) *linker {
	l := &linker{docs: docs, byTitle: map[string][]int{}, refs: make([][]normalRef, len(docs))}
	for j, d := range docs {
		for _, t := range passage.TitleNames(passage.LastHeading(d.Section)) {
			if k := titleKey(t); k != "" && k != "=" && !slices.Contains(l.byTitle[k], j) {
				l.byTitle[k] = append(l.byTitle[k], j)
			}
		}
		for _, r := range d.Refs {
			l.refs[j] = append(l.refs[j], normalRef{r, " " + words.Normalize(r.Text) + " ", " " + words.Normalize(r.Target) + " "})
		}
	}
	return l
}

// linksOf returns the passages of the context that unit u points to, in context order: by the
// references of its passage (package passage) written in the unit — a title, or a page of a
// book with pages —, or, for a passage without reference data, by the unit naming another
// passage's title.
func (l *linker) linksOf(u unit, hasUnits func(int) bool) []link {
	from := l.docs[u.doc]
	text := u.norm
	found := map[int]bool{} // passage → explicit
	ok := func(j int) bool { return j != u.doc && hasUnits(j) && l.docs[j].Key() != from.Key() }
	if len(from.Refs) == 0 {
		folded := " " + words.Fold(u.text) + " "
		for k, js := range l.byTitle {
			in := folded
			if strings.HasPrefix(k, "=") {
				k, in = k[1:], text
			}
			if strings.Contains(in, " "+k+" ") {
				for _, j := range js {
					if _, seen := found[j]; ok(j) && !seen {
						found[j] = false
					}
				}
			}
		}
	}
	for _, r := range l.refs[u.doc] {
		if !strings.Contains(text, r.text) && (r.ref.Kind == rag.RefPage || !strings.Contains(text, r.target)) {
			continue
		}
		explicit := r.ref.Kind != rag.RefMention
		if r.ref.Kind == rag.RefPage {
			// a page of a book with pages, or the rule the books resolved it to by the words
			// around it ("page 256 of Fate Core for more info on milestones")
			for j, d := range l.docs {
				if ok(j) && (pointsToPage(r.ref, from, d) || r.ref.ID != "" && d.ID == r.ref.ID) {
					found[j] = found[j] || explicit
				}
			}
			continue
		}
		for _, j := range l.byTitle[titleKey(r.ref.Target)] {
			if ok(j) {
				found[j] = found[j] || explicit
			}
		}
	}
	out := make([]link, 0, len(found))
	for j, e := range found {
		out = append(out, link{j, e})
	}
	slices.SortFunc(out, func(x, y link) int { return cmp.Compare(x.doc, y.doc) })
	return out
}

// pointsToPage reports whether page reference r of passage from names passage d: its book
// (from's when the reference names none) and page.
func pointsToPage(r rag.Reference, from, d rag.Document) bool {
	book := cmp.Or(r.Book, from.Book)
	return d.Page > 0 && strings.EqualFold(d.Book, book) && strconv.Itoa(d.Page) == strings.TrimLeft(r.Target, "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
}

// bestUnit is what to quote of passage j: its unit holding most of the question's weight when
// that is at least minGain, else its opening (a section states its rule first): its first unit
// of at least six words, past labels such as "1st-level divination".
func (a *answer) bestUnit(j int) unit {
	us := a.units[j]
	best, bestShare := 0, 0.0
	for k, u := range us {
		if share := a.q.share(u.terms, nil); share > bestShare {
			best, bestShare = k, share
		}
	}
	if bestShare >= minGain {
		return us[best]
	}
	for _, u := range us {
		if len(strings.Fields(u.text)) >= 6 {
			return u
		}
	}
	return us[0]
}

// render writes the answer. When the quoted units cover less than missedBelow of the question's
// weight, what was found does not answer it: the answer says so, naming the question's most
// distinctive words that nothing quoted holds, and quotes only the closest few units. Otherwise
// it quotes the chosen units, grouped by passage in the order the passages were first chosen,
// each passage's units in their order, each with its citation; when they cover less than
// coveredEnough, a last line names the question's words they leave out.
func (a *answer) render() string {
	if len(a.picked) == 0 {
		return a.notCovered() + "\n- " + a.opening() + " [1]"
	}
	var b strings.Builder
	picked := a.picked
	cov := a.coverage()
	if cov < missedBelow {
		b.WriteString(a.notCovered())
		picked = picked[:min(len(picked), maxClosest)]
	} else {
		b.WriteString("From the books (quoted):")
	}
	var order []int
	for _, u := range picked {
		if !slices.Contains(order, u.doc) {
			order = append(order, u.doc)
		}
	}
	for _, i := range order {
		var us []unit
		for _, u := range picked {
			if u.doc == i {
				us = append(us, u)
			}
		}
		slices.SortFunc(us, func(x, y unit) int { return cmp.Compare(x.pos, y.pos) })
		for _, u := range us {
			fmt.Fprintf(&b, "\n- %s [%d]", u.text, i+1)
		}
	}
	if missing := a.uncovered(); cov >= missedBelow && cov < coveredEnough && len(missing) > 0 {
		fmt.Fprintf(&b, "\n(Nothing quoted mentions %s.)", orList(missing))
	}
	return b.String()
}

// opening is the first quotable unit of the first passage (the closest the search found).
func (a *answer) opening() string {
	for _, us := range a.units {
		if len(us) > 0 {
			return us[0].text
		}
	}
	return strings.Join(strings.Fields(a.docs[0].Text), " ")
}

// coverage is the share of the question's whole weight that the quoted units and the section
// paths of their passages hold.
func (a *answer) coverage() float64 {
	if a.q.all == 0 {
		return 1
	}
	have := map[string]bool{}
	for t := range a.covered {
		have[t] = true
	}
	for _, u := range a.picked {
		for t := range termSet(a.docs[u.doc].Section) {
			have[t] = true
		}
	}
	return a.q.share(have, nil) * a.q.total / a.q.all
}

// uncovered are the question's most distinctive words that nothing quoted holds, as the question
// wrote them, most distinctive first (at most three).
func (a *answer) uncovered() []string {
	have := map[string]bool{}
	for _, u := range a.picked {
		for t := range u.terms {
			have[t] = true
		}
		for t := range termSet(a.docs[u.doc].Section) {
			have[t] = true
		}
	}
	var out []string
	for _, t := range a.q.order {
		if !have[t] {
			out = append(out, t)
		}
	}
	slices.SortStableFunc(out, func(x, y string) int { return cmp.Compare(a.q.weight[y], a.q.weight[x]) })
	if len(out) > 3 {
		out = out[:3]
	}
	for i, t := range out {
		out[i] = "“" + a.q.shown[t] + "”"
	}
	return out
}

// notCovered is the opening of an answer whose passages miss the question.
func (a *answer) notCovered() string {
	what := "what you asked"
	if missing := a.uncovered(); len(missing) > 0 {
		what = orList(missing)
	}
	return "Your books don't seem to cover " + what + ". The closest passages found say (quoted):"
}

// orList joins words as "a", "a or b", "a, b or c".
func orList(ws []string) string {
	if len(ws) < 2 {
		return strings.Join(ws, "")
	}
	return strings.Join(ws[:len(ws)-1], ", ") + " or " + ws[len(ws)-1]
}

// Splitting passages into units.

// The sentence split: a full stop and a space, a blank line or a list
// line; hard-wrapped lines joined first.
var (
	sentenceSplit = regexp.MustCompile(`(?:[.!?])\s+|\n\s*\n|\n(?:\s*[-*|]|\s*\d+\.)`)
	softBreak     = regexp.MustCompile(`([^\n])\n([^\n\s*|#-])`)
)

var (
	htmlTable    = regexp.MustCompile(`(?is)<table\b.*?</table>`)
	htmlRow      = regexp.MustCompile(`(?is)<tr\b.*?</tr>`)
	htmlCell     = regexp.MustCompile(`(?is)<t[dh]\b[^>]*>(.*?)</t[dh]>`)
	blockquote   = regexp.MustCompile(`(?m)^[ \t]*>[ \t]?`)
	htmlTag      = regexp.MustCompile(`</?[a-zA-Z][^<>]*>`)
	emphasis     = strings.NewReplacer("**", "", "__", "")
	listMarker   = regexp.MustCompile(`^\s*(?:[-*+•]\s+|\d{1,2}[.)]\s+)+`)
	tableDivider = regexp.MustCompile(`^:?-{2,}:?$`)
	blankLines   = regexp.MustCompile(`\n[ \t]*\n`)
)

// splitUnits cuts a passage's text into units: table rows (with their header), list items and
// sentences, and — when the question names it — a rule under a run-in heading whole.
func splitUnits(doc int, d rag.Document, q map[string]bool) []unit {
	text := htmlTables(d.Text)
	if strings.Contains(text, "<") {
		text = htmlTag.ReplaceAllString(text, "")
	}
	text = emphasis.Replace(text)
	// The heading names what every sentence under it is about ("Fog Cloud": "You create a
	// 20-foot-radius sphere…"): its words count as each unit's own.
	about := termSet(passage.LastHeading(d.Section))
	var out []unit
	add := func(block, kind int, s string) {
		s = strings.TrimSpace(s)
		if kind == sentenceUnit && !quotable(s) {
			return
		}
		ws := words.Split(s)
		own := map[string]bool{}
		for _, w := range ws {
			if !words.IsStop(w) && !words.IsAsking(w) { // termSet's words, from the one split
				own[words.Stem(w)] = true
			}
		}
		terms := maps.Clone(own)
		maps.Copy(terms, about)
		out = append(out, unit{doc: doc, pos: len(out), block: block, kind: kind, text: s, norm: " " + strings.Join(ws, " ") + " ", own: own, terms: terms, num: hasDigit(s)})
	}
	for block, para := range blankLines.Split(text, -1) {
		lines := strings.Split(strings.TrimSpace(para), "\n")
		var table []string
		var item strings.Builder
		flushItem := func() {
			s := strings.Join(strings.Fields(item.String()), " ")
			item.Reset()
			if s == "" {
				return
			}
			// The question names the rule this item defines ("a puff of malice" and "Malice
			// (Inhaled). … The poisoned creature is blinded."): quote all of it.
			if len(s) <= maxRuleUnit && firstWordIn(s, q) {
				if h := passage.RunInHeading(s); h != "" && subset(termSet(h), q) {
					add(block, ruleUnit, withStop(s))
					return
				}
			}
			for _, sent := range sentences(s) {
				add(block, sentenceUnit, withStop(sent))
			}
		}
		flushTable := func() {
			for _, r := range tableRows(table) {
				add(block, rowUnit, r.text)
				if len(out) > 0 && out[len(out)-1].text == strings.TrimSpace(r.text) {
					out[len(out)-1].named = namesCell(r.cells, q)
				}
			}
			table = nil
		}
		for _, line := range lines {
			trimmed := strings.TrimSpace(line)
			switch {
			case strings.HasPrefix(trimmed, "|"):
				flushItem()
				table = append(table, trimmed)
			case strings.HasPrefix(trimmed, "#"):
				flushItem()
				flushTable()
			case startsList(trimmed) && listMarker.MatchString(line):
				flushItem()
				flushTable()
				item.WriteString(listMarker.ReplaceAllString(line, ""))
			default:
				flushTable()
				item.WriteString(" " + trimmed)
			}
		}
		flushItem()
		flushTable()
	}
	return out
}

// htmlTables rewrites the HTML tables of a text (books converted from HTML keep them) as
// Markdown tables, one line a row, so that their rows are quoted with their header like any
// other table's; it also drops blockquote marks.
func htmlTables(text string) string {
	if strings.Contains(text, ">") {
		text = blockquote.ReplaceAllString(text, "")
	}
	if !strings.Contains(text, "<t") && !strings.Contains(text, "<T") {
		return text
	}
	return htmlTable.ReplaceAllStringFunc(text, func(t string) string {
		var b strings.Builder
		b.WriteString("\n\n")
		for _, row := range htmlRow.FindAllString(t, -1) {
			b.WriteString("|")
			for _, c := range htmlCell.FindAllStringSubmatch(row, -1) {
				cell := strings.Join(strings.Fields(htmlTag.ReplaceAllString(c[1], " ")), " ")
				b.WriteString(" " + strings.ReplaceAll(cell, "|", "/") + " |")
			}
			b.WriteString("\n")
		}
		return b.String() + "\n"
	})
}

// firstWordIn reports whether the first word of s is, stemmed, one of q: a run-in heading the
// question names starts with a word of the question.
func firstWordIn(s string, q map[string]bool) bool {
	end := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	if end < 0 {
		end = len(s)
	}
	return end > 0 && q[words.Stem(strings.ToLower(s[:end]))]
}

// startsList reports whether a (trimmed) line may open a list item: a bullet or a digit.
func startsList(line string) bool {
	return line != "" && strings.ContainsRune("-*+•0123456789", []rune(line)[0])
}

// quotable reports whether a sentence says enough to quote: a few words, or a number.
func quotable(s string) bool {
	return utf8.RuneCountInString(s) >= minQuote || hasDigit(s) && len(strings.Fields(s)) >= 3
}

func hasDigit(s string) bool { return strings.ContainsFunc(s, unicode.IsDigit) }

// withStop ends a sentence with a full stop unless it ends with punctuation already.
func withStop(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return s
	}
	r, _ := utf8.DecodeLastRuneInString(s)
	if strings.ContainsRune(".!?:;…)”\"'’", r) {
		return s
	}
	return s + "."
}

// row is a table row as quoted, "Armor: Chain mail; Cost: 75 gp", with the cells it holds.
type row struct {
	text  string
	cells []string
}

// tableRows turns a Markdown table into rows quoted with their header: "Armor: Chain mail; Cost:
// 75 gp". The header and divider lines are never quoted alone.
func tableRows(lines []string) []row {
	var header []string
	var out []row
	for _, l := range lines {
		cells := tableCells(l)
		if isDivider(cells) {
			continue
		}
		if header == nil {
			header = cells
			continue
		}
		var parts, kept []string
		for k, c := range cells {
			if c == "" || c == "—" || c == "-" {
				continue
			}
			kept = append(kept, c)
			if k < len(header) && header[k] != "" && !strings.EqualFold(header[k], c) {
				parts = append(parts, header[k]+": "+c)
			} else {
				parts = append(parts, c)
			}
		}
		if len(parts) > 0 {
			out = append(out, row{withStop(strings.Join(parts, "; ")), kept})
		}
	}
	return out
}

// namesCell reports whether the question's words q hold every word of one of a row's cells that
// has a word (not only a number): the question asks about that row ("modest" → Modest | 1 gp).
func namesCell(cells []string, q map[string]bool) bool {
	for _, c := range cells {
		ws := termSet(c)
		named := len(ws) > 0
		digits := true
		for w := range ws {
			named = named && q[w]
			digits = digits && strings.IndexFunc(w, unicode.IsLetter) < 0
		}
		if named && !digits {
			return true
		}
	}
	return false
}

func tableCells(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	line = strings.TrimSuffix(line, "|")
	cells := strings.Split(line, "|")
	for i, c := range cells {
		cells[i] = strings.Join(strings.Fields(c), " ")
	}
	return cells
}

func isDivider(cells []string) bool {
	for _, c := range cells {
		if c != "" && !tableDivider.MatchString(c) {
			return false
		}
	}
	return true
}

// abbreviations are English abbreviations after which a full stop does not end a sentence.
var abbreviations = map[string]bool{
	"ft": true, "lb": true, "lbs": true, "oz": true, "p": true, "pp": true, "e.g": true, "i.e": true,
	"vs": true, "cf": true, "mr": true, "mrs": true, "ms": true, "dr": true, "st": true,
	"approx": true, "fig": true, "vol": true, "ch": true, "sq": true, "cu": true,
}

// sentences splits a paragraph into sentences: a full stop, question or exclamation mark
// (perhaps with closing quotes or brackets) followed by a space and a capital, a digit or an
// opening quote ends one, except after an abbreviation.
func sentences(p string) []string {
	var out []string
	rs := []rune(p)
	start := 0
	for i := 0; i < len(rs); i++ {
		if rs[i] != '.' && rs[i] != '!' && rs[i] != '?' {
			continue
		}
		end := i + 1
		for end < len(rs) && strings.ContainsRune("\"'”’)]", rs[end]) {
			end++
		}
		if end >= len(rs) || !unicode.IsSpace(rs[end]) {
			continue
		}
		next := end
		for next < len(rs) && unicode.IsSpace(rs[next]) {
			next++
		}
		if next >= len(rs) {
			break
		}
		if n := rs[next]; !unicode.IsUpper(n) && !unicode.IsDigit(n) && !strings.ContainsRune("\"“‘'(•", n) {
			continue
		}
		if rs[i] == '.' && abbreviated(rs[start:i]) {
			continue
		}
		out = append(out, strings.TrimSpace(string(rs[start:end])))
		start = next
		i = next - 1
	}
	if rest := strings.TrimSpace(string(rs[start:])); rest != "" {
		out = append(out, rest)
	}
	return out
}

// abbreviated reports whether the text before a full stop ends with an abbreviation or a single
// letter (an initial).
func abbreviated(before []rune) bool {
	k := len(before)
	for k > 0 && !unicode.IsSpace(before[k-1]) && before[k-1] != '(' {
		k--
	}
	w := strings.ToLower(string(before[k:]))
	return abbreviations[w] || utf8.RuneCountInString(w) == 1 && unicode.IsLetter([]rune(w)[0])
}
