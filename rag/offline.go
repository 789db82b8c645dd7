package rag

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/caprag/caprag/passage"
	"github.com/caprag/caprag/words"
)

// Offline returns the rule-based roles: a useful product without any model (a rules lookup that
// quotes the book), deterministic, and the default when no model is configured.
func Offline() Models {
	return Models{Expander: OfflineExpander{}, Analyzer: OfflineAnalyzer{}, Writer: OfflineWriter{}, Rewriter: OfflineRewriter{}}
}

// termSet is the stems of a text's content words (no stop or chatter words).
func termSet(s string) map[string]bool { return words.ContentSet(s) }

// OfflineExpander rewrites a question into keyword and phrasing variants.
type OfflineExpander struct{}

// players' words → the rulebooks' words
var rulesWords = [][2]string{
	{"grab", "grapple"}, {"grabbed", "grappled"}, {"hold on to", "grapple"}, {"wrestle", "grapple"},
	{"lying on the ground", "prone"}, {"knocked down", "prone"}, {"knock down", "prone"}, {"on the ground", "prone"},
	{"push", "shove"}, {"shoving", "shove"}, {"hit", "attack"}, {"hurt", "damage"}, {"hp", "hit points"},
	{"sneak", "stealth"}, {"hide", "hiding stealth"}, {"scared", "frightened"}, {"afraid", "frightened"},
	{"can't see", "blinded"}, {"blind", "blinded"}, {"asleep", "unconscious"}, {"knocked out", "unconscious"},
	{"dying", "death saving throws"}, {"heal", "healing hit points"}, {"rest", "resting"},
	{"sell", "selling treasure"}, {"buy", "equipment cost"}, {"jump", "jumping"}, {"fall", "falling"},
	{"drown", "suffocating"}, {"hold breath", "suffocating"}, {"armor on", "don armor"}, {"armor off", "doff armor"},
	{"help", "help action working together"}, {"crit", "critical hit"}, {"cast", "casting a spell"},
	{"two weapons", "two-weapon fighting"}, {"dual wield", "two-weapon fighting"}, {"run away", "disengage"},
	{"flee", "disengage opportunity attack"}, {"free attack", "opportunity attack"}, {"concentrating", "concentration"},
	{"invisible", "invisible condition"}, {"poison", "poisoned"}, {"stun", "stunned"}, {"frozen", "paralyzed"},
	{"venom", "poison poisoned"}, {"terrifying", "frightful frightened"}, {"terrified", "frightened"},
	{"fog", "fog heavily obscured"}, {"helmet", "helm"}, {"float", "levitate"}, {"hover", "levitate"},
	{"free swing", "opportunity attack"}, {"in place", "paralyzed restrained"}, {"stuck", "adhesive grappled restrained"},
	{"tired", "exhaustion"}, {"slept", "exhaustion long rest"},
}

// Expand returns up to max variants: the content words alone, the question in the rulebooks'
// words, and each quoted or capitalised name on its own.
func (OfflineExpander) Expand(_ context.Context, question string, max int) ([]string, error) {
	var out []string
	kw := strings.Join(contentWords(question), " ")
	if kw != "" && !strings.EqualFold(kw, question) {
		out = append(out, kw)
	}
	low := strings.ToLower(question)
	var mapped []string
	for _, p := range rulesWords {
		if containsWord(low, p[0]) {
			mapped = append(mapped, p[1])
		}
	}
	if len(mapped) > 0 {
		out = append(out, strings.Join(append(mapped, contentWords(question)...), " "))
	}
	out = append(out, names(question)...)
	if len(out) > max {
		out = out[:max]
	}
	return out, nil
}

func containsWord(s, phrase string) bool {
	i := strings.Index(s, phrase)
	for i >= 0 {
		before := i == 0 || !unicode.IsLetter(rune(s[i-1]))
		end := i + len(phrase)
		after := end >= len(s) || !unicode.IsLetter(rune(s[end]))
		if before && after {
			return true
		}
		j := strings.Index(s[i+1:], phrase)
		if j < 0 {
			break
		}
		i += j + 1
	}
	return false
}

func contentWords(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' && r != '-' }) {
		// "can't" and "he's" are stop words too: every word of theirs is one
		if !slices.ContainsFunc(words.Split(w), func(w string) bool { return !words.IsStop(w) && !words.IsAsking(w) }) {
			continue
		}
		out = append(out, w)
	}
	return out
}

var (
	quoted      = regexp.MustCompile(`["“”']([^"“”']{3,40})["“”']`)
	capitalised = regexp.MustCompile(`\b[A-Z][a-z]+(?:\s+(?:of\s+|the\s+)?[A-Z][a-z]+)+\b`)
)

// names are quoted phrases and runs of capitalised words ("Rapid Strike"), not at the start.
func names(q string) []string {
	var out []string
	for _, m := range quoted.FindAllStringSubmatch(q, -1) {
		out = append(out, m[1])
	}
	for _, m := range capitalised.FindAllStringIndex(q, -1) {
		if m[0] > 0 {
			out = append(out, q[m[0]:m[1]])
		}
	}
	return out
}

// OfflineAnalyzer follows the unresolved cross-references of the passages found: it is
// sufficient when no strong one is left. A reference is strong when it is explicit ("see X",
// a page) or names another section's title, comes from a passage that ranked high in the search
// that found it, and — for a plain title mention — is the kind of link rules make (a rule named
// in another book, or a rule the question's words point at).
type OfflineAnalyzer struct{}

// Analyze implements Analyzer.
func (OfflineAnalyzer) Analyze(_ context.Context, in AnalyzeInput) (Analysis, error) {
	// The question's words, with the rulebooks' words for the players' words found in it.
	q := termSet(in.Question + " " + rulesPhrasing(in.Question))
	// When the passage found first already holds (nearly) all the question's words, it answers
	// the question: only explicit references are worth following from there.
	covered := coverage(q, in.Documents, in.DocRank, in.DocHop) >= coveredShare
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
	for _, n := range in.Named {
		named[words.Fold(n)] = true
	}
	for i, h := range in.Hints {
		from := 0
		if i < len(in.HintFrom) {
			from = in.HintFrom[i]
		}
		rank, hop := 0, 1
		if from < len(in.DocRank) {
			rank = in.DocRank[from]
		}
		if from < len(in.DocHop) {
			hop = in.DocHop[from]
		}
		var d Document
		if from < len(in.Documents) {
			d = in.Documents[from]
		}
		overlap, full := false, true
		for t := range termSet(h.Target) {
			if q[t] {
				overlap = true
			} else {
				full = false
			}
		}
		if h.Kind == RefMention {
			overlap = overlap && full
		}
		score := 0
		switch h.Kind {
		case RefSee, RefPage:
			// An explicit reference is followed from the top passages, or from any passage of
			// the first few when it names what the question asks about.
			if vagueTarget[strings.ToLower(h.Target)] || rank > 2 && !(overlap && rank <= 4) {
				continue
			}
			score = 6 - rank
		case RefMention:
			// Even when the best passage answers the question, a rule of another book that it
			// names and the question speaks of is worth reading ("find familiar" for a familiar).
			if covered && !(rank == 0 && h.Book != "" && h.Book != d.Book && distinctive(h.Target)) {
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
			case hop == 1 && h.Book != "" && h.Book != d.Book && (rank <= 1 && rel >= minSentenceOverlap || rank <= 3 && rel >= minSentenceOverlap+1):
				score = max(1, rel-rank)
			case hop == 1 && rank <= 0 && rel >= 1 && h.Book != "" && h.Book != d.Book:
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
	slices.SortStableFunc(cands, func(a, b cand) int { return cmp.Compare(b.score, a.score) })
	var a Analysis
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

// OfflineWriter answers extractively: the sentences of the passages that share most words with
// the question, each with its citation, in passage order.
type OfflineWriter struct{}

var (
	sentenceSplit = regexp.MustCompile(`(?:[.!?])\s+|\n\s*\n|\n(?:\s*[-*|]|\s*\d+\.)`)
	softBreak     = regexp.MustCompile(`([^\n])\n([^\n\s*|#-])`)
)

// sent is a sentence of a passage, scored against the question.
type sent struct {
	text  string
	doc   int
	pos   int
	score float64
}

// namedIn reports whether a picked sentence names title (lower case) as a whole phrase.
func namedIn(title string, picked map[int][]sent) bool {
	for _, ss := range picked {
		for _, s := range ss {
			if containsWord(strings.ToLower(s.text), title) {
				return true
			}
		}
	}
	return false
}

// quotable trims a sentence of table and list marks and reports whether it is long enough to
// quote.
func quotable(p string) (string, bool) {
	p = strings.TrimSpace(strings.Trim(p, "|#>-* "))
	return p, len([]rune(p)) >= 20
}

// Write implements Writer.
func (OfflineWriter) Write(_ context.Context, question string, docs []Document, _ []Turn) (string, error) {
	q := termSet(question)
	var all []sent
	for i, d := range docs {
		j := -1
		for _, para := range paragraphBreak.Split(d.Text, -1) {
			// The question names the rule this paragraph defines ("a puff of malice" and
			// "Malice (Inhaled). … The poisoned creature is blinded."): quote all of it.
			if h := passage.RunInHeading(para); h != "" && subset(termSet(h), q) && len(para) <= maxRuleQuote {
				j++
				p := strings.Join(strings.Fields(para), " ")
				all = append(all, sent{p, i, j, namedRuleScore - 0.15*float64(i)})
				continue
			}
			for _, p := range sentencesOf(para) {
				j++
				p, ok := quotable(p)
				if !ok {
					continue
				}
				var hit float64
				for t := range termSet(p) {
					if q[t] {
						hit++
					}
				}
				if hit == 0 {
					continue
				}
				// Earlier passages ranked higher; the first sentences of a section state its rule.
				score := hit - 0.15*float64(i) - 0.05*float64(min(j, 10))
				all = append(all, sent{p, i, j, score})
			}
		}
	}
	if len(all) == 0 {
		return "The books I have do not seem to cover this: no passage shares the question's terms. Try the rule's name as the book writes it.", nil
	}
	slices.SortStableFunc(all, func(a, b sent) int { return cmp.Compare(b.score, a.score) })
	picked := map[int][]sent{}
	n := 0
	for _, s := range all {
		if n == 6 || len(picked[s.doc]) == 2 {
			continue
		}
		picked[s.doc] = append(picked[s.doc], s)
		n++
	}
	// A passage the quoted sentences point to ("falls unconscious (see Unconscious)") is part
	// of the answer even when it shares no word with the question: quote its opening rule.
	for i, d := range docs {
		if len(picked[i]) > 0 || n >= 8 {
			continue
		}
		title := strings.ToLower(passage.LastHeading(d.Section))
		if title == "" || !namedIn(title, picked) {
			continue
		}
		for j, p := range sentencesOf(d.Text) {
			if p, ok := quotable(p); ok {
				picked[i] = []sent{{p, i, j, 0}}
				n++
				break
			}
		}
	}
	var b strings.Builder
	b.WriteString("From the books (quoted):\n")
	for i := range docs {
		ss := picked[i]
		slices.SortFunc(ss, func(a, b sent) int { return cmp.Compare(a.pos, b.pos) })
		for _, s := range ss {
			text := s.text
			if !strings.HasSuffix(text, ".") && !strings.HasSuffix(text, "!") && !strings.HasSuffix(text, "?") {
				text += "."
			}
			fmt.Fprintf(&b, "- %s [%d]\n", text, i+1)
		}
	}
	return strings.TrimSpace(b.String()), nil
}

// OfflineRewriter makes a follow-up standalone by carrying over the earlier question's terms
// when the follow-up leans on it (pronouns, "what about", very short).
type OfflineRewriter struct{}

var leaning = regexp.MustCompile(`(?i)^(and|but|what about|how about|also|then|so)\b|\b(it|its|that|this|they|them|those|he|she|him|her|there)\b`)

// Rewrite implements Rewriter.
func (OfflineRewriter) Rewrite(_ context.Context, followUp string, history []Turn) (string, error) {
	if len(history) == 0 {
		return followUp, nil
	}
	prev := history[len(history)-1].Question
	if len(strings.Fields(followUp)) > 12 && !leaning.MatchString(followUp) {
		return followUp, nil
	}
	return strings.TrimSpace(followUp) + " (about: " + strings.TrimSpace(prev) + ")", nil
}

// coverage is the share of the question's terms found in the documents ranked at most maxRank.
func coverage(q map[string]bool, docs []Document, ranks, hops []int) float64 {
	if len(q) == 0 {
		return 1
	}
	have := map[string]bool{}
	for i, d := range docs {
		if i < len(ranks) && ranks[i] > 0 || i < len(hops) && hops[i] > 1 {
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
// players' words found in it, or "" when none is found.
func rulesPhrasing(question string) string {
	low := strings.ToLower(question)
	var mapped []string
	for _, p := range rulesWords {
		if containsWord(low, p[0]) {
			mapped = append(mapped, p[1])
		}
	}
	if len(mapped) == 0 {
		return ""
	}
	return strings.Join(append(mapped, contentWords(question)...), " ")
}
