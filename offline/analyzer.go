package offline

import (
	"cmp"
	"context"
	"regexp"
	"slices"
	"strings"

	"github.com/caprag/caprag/passage"
	"github.com/caprag/caprag/rag"
	"github.com/caprag/caprag/words"
)

// Analyzer follows the unresolved cross-references of the passages found: it is
// sufficient when no strong one is left. A reference is strong when it is explicit ("see X",
// a page) or names another section's title, comes from a passage that ranked high in the search
// that found it, and — for a plain title mention — is the kind of link rules make (a rule named
// in another book, or a rule the question's words point at).
type Analyzer struct{}

// Analyze implements Analyzer.
func (Analyzer) Analyze(_ context.Context, in rag.AnalyzeInput) (rag.Analysis, error) {
	// The question's words, with the rulebooks' words for the players' words found in it.
	q := termSet(in.Question + " " + rulesPhrasing(in.Question))
	// When the passage found first already holds (nearly) all the question's words, it answers
	// the question: only explicit references are worth following from there.
	covered := coverage(q, in.Documents) >= coveredShare
	type cand struct {
		target string
		score  int
		order  int
	}
	var cands []cand
	var docTerms []map[string]bool // the passages' words, read when first needed
	distinctive := func(target string) bool {
		// target shares with the question a word that at most half the passages found hold
		if docTerms == nil {
			for _, d := range in.Documents {
				docTerms = append(docTerms, termSet(d.Text))
			}
		}
		for t := range termSet(target) {
			if !q[t] {
				continue
			}
			n := 0
			for _, m := range docTerms {
				if m[t] {
					n++
				}
			}
			if 2*n <= len(docTerms) {
				return true
			}
		}
		return false
	}
	sentences := map[int][]scoredSentence{} // by document, split and scored once
	named := map[string]bool{}
	for _, n := range in.Names() {
		named[words.Fold(n)] = true
	}
	i := -1 // the hint's position among all the hints, in context order
	for from, d := range in.Documents {
		rank, hop := d.Rank, max(1, d.Hop)
		for _, h := range d.Hints {
			i++
			overlap, full := false, true
			for t := range termSet(h.Target) {
				if q[t] {
					overlap = true
				} else {
					full = false
				}
			}
			if h.Kind == rag.RefMention {
				overlap = overlap && full
			}
			score := 0
			switch h.Kind {
			case rag.RefSee, rag.RefPage:
				// An explicit reference is followed from the top passages, or from any passage of
				// the first few when it names what the question asks about.
				if vagueTarget[strings.ToLower(h.Target)] || rank > 2 && !(overlap && rank <= 4) {
					continue
				}
				score = 6 - rank
			case rag.RefMention:
				// Even when the best passage answers the question, a rule of another book that it
				// names and the question speaks of is worth reading ("find familiar" for a familiar).
				if covered && !(rank == 0 && elsewhere(h, d.Book, d.Section) && distinctive(h.Target)) {
					continue
				}
				if _, ok := sentences[from]; !ok {
					sentences[from] = scoreSentences(q, named, d.Text)
				}
				rel, inNamed := sentenceOverlap(sentences[from], h.Target)
				switch {
				case inNamed && hop == 1 && rank <= 3:
					// The rule the question names ("a puff of malice") says what it does with this
					// one ("…poisoned for 1 hour. The poisoned creature is blinded.").
					score = 4 - rank/2
				case overlap && rank <= 2:
					score = 5 - rank
				case hop == 1 && elsewhere(h, d.Book, d.Section) && (rank <= 1 && rel >= minSentenceOverlap || rank <= 3 && rel >= minSentenceOverlap+1):
					score = max(1, rel-rank)
				case hop == 1 && rank <= 0 && rel >= 1 && elsewhere(h, d.Book, d.Section):
					// The best passage names a rule of another book in a sentence about the question.
					score = 1
				default:
					continue
				}
			}
			if overlap {
				score += 2
			}
			cands = append(cands, cand{h.Target, score, i})
		}
	}
	slices.SortStableFunc(cands, func(a, b cand) int { return cmp.Compare(b.score, a.score) })
	var a rag.Analysis
	limit := max(1, in.Max)
	asked := map[string]bool{}
	for _, q := range in.Asked {
		asked[strings.ToLower(q)] = true
	}
	for _, c := range cands {
		if c.score < analyzerThreshold || len(a.NewQueries) == limit || asked[strings.ToLower(c.target)] {
			continue
		}
		a.NewQueries = append(a.NewQueries, c.target)
		asked[strings.ToLower(c.target)] = true // two passages may name the same rule
	}
	// First decision, question not answered by the best passage: also search the question in
	// the rulebooks' words when players' words were recognised in it.
	if !covered && len(in.Asked) <= 1 {
		if r := rulesPhrasing(in.Question); r != "" && !asked[strings.ToLower(r)] {
			a.NewQueries = append(a.NewQueries, r)
		}
	}
	a.Following = a.NewQueries
	a.Sufficient = len(a.NewQueries) == 0
	return a, nil
}

// elsewhere reports whether a mention names a rule of another book — or of another part (top-level
// heading) of the same book, so that a book holding a whole rules corpus, such as the SRD as one
// PDF, links between its chapters as a corpus of several books links between its books.
func elsewhere(h rag.Reference, book, section string) bool {
	if h.Book == "" {
		return false
	}
	return h.Book != book || h.Part != "" && h.Part != passage.TopHeading(section)
}

// minSentenceOverlap is how many question words the sentence naming a cross-book rule must share
// with the question for the link to be followed.
var minSentenceOverlap = 2

// coveredShare is the share of the question's words the first passage must hold to answer it.
var coveredShare = 0.65

// analyzerThreshold is the score a reference needs to be followed.
var analyzerThreshold = 1

// vagueTarget are "see" phrases that point nowhere in particular.
var vagueTarget = map[string]bool{"below": true, "above": true, "text": true, "the text": true, "description": true, "table": true, "the table": true}

// sentencesOf splits a passage into sentences, joining lines that a hard wrap broke.
func sentencesOf(text string) []string {
	return sentenceSplit.Split(softBreak.ReplaceAllString(text, "$1 $2"), -1)
}

// scoredSentence is a sentence, folded for title matching, with how many question words it holds
// and whether the question names the rule it belongs to: the run-in heading its paragraph opens
// with ("Malice (Inhaled). … or become poisoned for 1 hour. The poisoned creature is blinded."
// belongs to Malice).
type scoredSentence struct {
	folded  string
	plain   string // lowercased words, unfolded
	overlap int
	named   bool
}

var paragraphBreak = regexp.MustCompile(`\n\s*\n`)

// A rule the question names by its run-in heading is quoted whole, heading included, when it is
// at most maxRuleQuote bytes long, and ranks with a sentence holding namedRuleScore question words.
const (
	maxRuleQuote   = 600
	namedRuleScore = 5
)

// subset reports whether every word of a (at least one) is in b.
func subset(a, b map[string]bool) bool {
	for t := range a {
		if !b[t] {
			return false
		}
	}
	return len(a) > 0
}

// scoreSentences scores each sentence of a passage against the question's words; named holds
// the folded names of the rules the question names.
func scoreSentences(q, named map[string]bool, text string) []scoredSentence {
	var out []scoredSentence
	for _, para := range paragraphBreak.Split(text, -1) {
		h := passage.RunInHeading(para)
		inNamed := h != "" && named[words.Fold(h)]
		for _, p := range sentencesOf(para) {
			n := 0
			for t := range termSet(p) {
				if q[t] {
					n++
				}
			}
			out = append(out, scoredSentence{" " + words.Fold(p) + " ", " " + words.Normalize(p) + " ", n, inNamed})
		}
	}
	return out
}

// sentenceOverlap is the most question words any sentence that names target shares with the
// question, and whether target is named inside a rule the question names.
func sentenceOverlap(sentences []scoredSentence, target string) (best int, named bool) {
	for _, name := range passage.TitleNames(target) {
		// A participle title ("Poisoned") is named as written: "a dose of poison" is no mention.
		t, exact := words.Fold(name), words.HasParticiple(name)
		if exact {
			t = words.Normalize(name)
		}
		for _, s := range sentences {
			in := s.folded
			if exact {
				in = s.plain
			}
			if t != "" && strings.Contains(in, " "+t+" ") {
				best = max(best, s.overlap)
				named = named || s.named
			}
		}
	}
	return best, named
}

// coverage is the share of the question's terms found in the documents the first search ranked
// first.
func coverage(q map[string]bool, docs []rag.DocFacts) float64 {
	if len(q) == 0 {
		return 1
	}
	have := map[string]bool{}
	for _, d := range docs {
		if d.Rank > 0 || d.Hop > 1 {
			continue
		}
		for t := range termSet(d.Section + " " + d.Text) {
			have[t] = true
		}
	}
	n := 0
	for t := range q {
		if have[t] {
			n++
		}
	}
	return float64(n) / float64(len(q))
}

// rulesPhrasing is the question's content words preceded by the rulebooks' words for the
