package offline

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/caprag/caprag/words"
)

// Expander rewrites a question into search queries, each finding one part of what it asks:
// the names of the rules whose defining sentences use the question's words (the books'
// vocabulary for what a player describes: "grab" → Grappling, whose rule opens "When you want to
// grab a creature…"), each clause of the question on its own (a question that asks two things
// finds both), and each quoted or capitalised name.
type Expander struct {
	Books Library // what the books say about their words (nil: nothing)
}

// bridged is how many rules the vocabulary bridge names in its query.
const bridged = 3

// Expand implements rag.Expander.
func (e Expander) Expand(_ context.Context, question string, max int) ([]string, error) {
	var out []string
	if e.Books != nil {
		var ns []string
		for _, m := range e.Books.Lexicon().Bridge(question, bridged) {
			ns = append(ns, m.Text)
		}
		if len(ns) > 0 {
			out = append(out, strings.Join(ns, "; "))
		}
	}
	if cs := clauses(question); len(cs) > 1 {
		for _, c := range cs {
			if kw := strings.Join(contentWords(c), " "); kw != "" {
				out = append(out, kw)
			}
		}
	} else if kw := strings.Join(contentWords(question), " "); kw != "" && !strings.EqualFold(kw, question) {
		out = append(out, kw)
	}
	out = append(out, names(question)...)
	if len(out) > max {
		out = out[:max]
	}
	return out, nil
}

// clauseBreak separates the clauses of a question: sentence ends, semicolons, a comma before a
// conjunction, "and" before a question word ("…cost, and which spells…", "…and how long…").
var clauseBreak = regexp.MustCompile(`(?i)[.?!;]\s+|,\s+(?:and|or|but)\s+|\s+and\s+(?:what|how|when|where|which|who|why|does|do|is|are|can|could|will|would|should)\s+`)

// clauses splits a question into its clauses; a clause of fewer than two content words joins
// the one before it ("…what does that do to my character" is not a search of its own).
func clauses(q string) []string {
	var out []string
	for _, c := range clauseBreak.Split(q, -1) {
		if c = strings.TrimSpace(c); c == "" {
			continue
		}
		if len(out) > 0 && len(contentWords(c)) < 2 {
			out[len(out)-1] += " " + c
			continue
		}
		out = append(out, c)
	}
	return out
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
