// Package evalset reads retrieval evaluation sets (JSON Lines of questions with the book
// sections that answer them) and applies their matching rule: a passage matches a gold entry
// when its book equals the gold book and its section heading path contains the gold section,
// both case-insensitively and with typographic quotes folded. MatchSection compares the section
// alone, for a corpus that holds the same rules as one book (the SRD as one PDF).
package evalset

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// Question kinds.
const (
	SingleHop = "single-hop"
	MultiHop  = "multi-hop"
)

// Question styles.
const (
	BookTerms   = "book-terms"
	PlayerWords = "player-words"
)

// Question is one evaluation question.
type Question struct {
	ID          string   `json:"id"`
	Question    string   `json:"question"`
	Kind        string   `json:"kind"`
	Style       string   `json:"style"`
	Gold        []Gold   `json:"gold"`
	Chain       string   `json:"chain"`
	AnswerFacts []string `json:"answer_facts"`
}

// Gold is a section whose text a full answer needs.
type Gold struct {
	Book    string `json:"book"`
	Section string `json:"section"`
}

// Load reads a question set from a JSON Lines file.
func Load(path string) ([]Question, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("evalset: %w", err)
	}
	defer f.Close()
	qs, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("evalset: %s: %w", path, err)
	}
	return qs, nil
}

// Read reads a question set in JSON Lines form. Blank lines are skipped; every question needs an
// id, a question and at least one gold entry.
func Read(r io.Reader) ([]Question, error) {
	var qs []Question
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var q Question
		if err := json.Unmarshal([]byte(text), &q); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if q.ID == "" || q.Question == "" || len(q.Gold) == 0 {
			return nil, fmt.Errorf("line %d: a question needs id, question and gold", line)
		}
		qs = append(qs, q)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return qs, nil
}

// Fold normalises text for matching: lower case, typographic quotes and apostrophes folded to
// their ASCII forms.
func Fold(s string) string {
	return strings.ToLower(quotes.Replace(s))
}

var quotes = strings.NewReplacer("’", "'", "‘", "'", "“", `"`, "”", `"`)

// Match is what of a passage's origin is compared with a gold entry.
type Match string

// Matching rules.
const (
	// MatchBookSection compares the book and the section heading path: the set's own rule.
	MatchBookSection Match = "book-section"
	// MatchSection compares the section heading path only, for a corpus that is one book.
	MatchSection Match = "section"
)

// Matches reports whether a passage from book with the given section heading path matches the
// gold entry.
func (g Gold) Matches(book, section string) bool {
	return g.MatchesBy(MatchBookSection, book, section)
}

// MatchesBy is Matches under a matching rule.
func (g Gold) MatchesBy(m Match, book, section string) bool {
	if m != MatchSection && Fold(book) != Fold(g.Book) {
		return false
	}
	return strings.Contains(Fold(section), Fold(g.Section))
}

// Passage is where a retrieved passage comes from.
type Passage struct {
	Book    string
	Section string
}

// Recall returns how many of the question's gold entries some passage matches, and whether all
// are matched (full recall).
func (q Question) Recall(passages []Passage) (matched int, full bool) {
	return q.RecallBy(MatchBookSection, passages)
}

// RecallBy is Recall under a matching rule.
func (q Question) RecallBy(m Match, passages []Passage) (matched int, full bool) {
	for _, g := range q.Gold {
		for _, p := range passages {
			if g.MatchesBy(m, p.Book, p.Section) {
				matched++
				break
			}
		}
	}
	return matched, matched == len(q.Gold)
}
