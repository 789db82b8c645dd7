package offline

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/caprag/caprag/passage"
	"github.com/caprag/caprag/rag"
)

// Writer answers extractively: the sentences of the passages that share most words with
// the question, each with its citation, in passage order.
type Writer struct{}

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
func (Writer) Write(_ context.Context, question string, docs []rag.Document, _ []rag.Turn) (string, error) {
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
