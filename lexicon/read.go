// Package lexicon derives, from the books of a library alone, what the offline roles know about
// their words: the terms the books define (headings, their parts and aliases, run-in headings),
// how specific each term is (how many passages use it), the statistics of every word, and the
// reference graph between passages (explicit references — "see X", page references, a page of
// another book — and mentions of defined terms, weighted by how specific the term is).
//
// It is computed in two steps, both pure functions: Read derives a book's own part (its
// passages' words, the terms it defines, the references it writes), and Link resolves the parts
// of a library against each other (which book defines a term, what a reference points at, how
// often each term is used across the library). A Lexicon is a plain value: it can be kept,
// serialised and rebuilt from its parts when one book changes.
package lexicon

import (
	"regexp"
	"strings"

	"github.com/caprag/caprag/passage"
	"github.com/caprag/caprag/words"
)

// Doc is a passage as the lexicon reads it: a parent passage (the text the answer writer reads)
// with its place in its book.
type Doc struct {
	ID      string
	Section string // heading path, " > "-joined
	Page    int    // printed page, 0 when the book has no pages
	Text    string
}

// TermKind says how a book defines a term. Lower values are stronger definitions.
type TermKind uint8

const (
	// Heading is the last heading of a section ("Grappled", "Conceding the Conflict").
	Heading TermKind = iota
	// HeadingPart is a name a heading gives in parts: inside or before a parenthesis
	// ("Material (M)" → M, Material), either side of a colon, a comma or "aka"
	// ("THE BRONZE RULE, AKA THE FATE FRACTAL" → Bronze Rule, Fate Fractal).
	HeadingPart
	// RunIn is a rule defined inside a section under a run-in heading ("Malice (Inhaled). A
	// creature…", "Thick Skin: You may use…").
	RunIn
	// Inflection is the verb of a heading that names an act by its gerund ("Conceding the
	// Conflict" → concede), and what it acts on (→ conflict).
	Inflection
)

// Term is a name that a passage of a book defines.
type Term struct {
	Key  string   // its content words, stemmed (a participle as written), space-joined
	Name string   // as the book writes it
	Kind TermKind // how it is defined
	Doc  int      // the defining passage, an index into the part's Docs
	// Exact holds, for each word of Key, the form a text must show ("" for any inflection): a
	// past participle names a state ("Poisoned"), and "poison damage" does not mention it.
	Exact []string
}

// Token is a content word of a passage: stop words left out, stemmed.
type Token struct {
	Stem     string
	Raw      string // lower case, as written
	Sentence int    // index of its sentence in Sentences(text)
	Para     int    // index of its paragraph
	Prev     string // the word before it, stop words included ("" at a sentence start)
}

// RawRef is an explicit reference as a book writes it, before the library resolves it.
type RawRef struct {
	Kind passage.RefKind // RefSee or RefPage
	Text string          // as written ("see appendix PH-A", "(Fate Core, page 270)")
	// Target is the phrase a "see" names ("appendix PH-A") or the page ("270", "" for a
	// placeholder such as "page XX").
	Target string
	// BookWords are the words of another book's name the reference gives ("fate core"), "".
	BookWords string
	// At is the index in the passage's Tokens where the reference stands.
	At       int
	Sentence int
}

// Part is what one book says about itself.
type Part struct {
	Book  string
	Paged bool // its passages have printed pages
	Docs  []Doc
	// Terms are the names its passages define.
	Terms []Term
	// Refs are each passage's explicit references.
	Refs [][]RawRef

	s *stream // each passage's content words, in order (Tokens), and the terms' definitions
}

// Tokens returns the content words of the part's passage i, in order.
func (p Part) Tokens(i int) []Token { return p.words().tokens(i, nil) }

func (p Part) words() *stream {
	if p.s == nil {
		return newBuilder().build(nil)
	}
	return p.s
}

// Read derives a book's part from its passages (parent passages, in reading order).
func Read(book string, docs []Doc) Part {
	p := Part{Book: book, Docs: docs, Refs: make([][]RawRef, len(docs))}
	b := newBuilder()
	seenSection := map[string]bool{}
	for i, d := range docs {
		if d.Page > 0 {
			p.Paged = true
		}
		b.add(tokenize(d.Text))
		p.Refs[i] = explicitRefs(d.Text)
		if !seenSection[d.Section] { // the first passage of a section defines its heading
			seenSection[d.Section] = true
			for _, t := range headingTerms(passage.LastHeading(d.Section)) {
				t.Doc = i
				p.Terms = append(p.Terms, t)
			}
		}
		for _, name := range runInNames(d.Text) {
			if t, ok := newTerm(name, RunIn); ok {
				t.Doc = i
				p.Terms = append(p.Terms, t)
			}
		}
	}
	// The sentence that defines each term, should the library find it defined there alone.
	defs := make([][]string, len(p.Terms))
	prose := map[int][]string{} // a passage's first prose sentence, for its headings
	for i, t := range p.Terms {
		switch {
		case t.Kind == RunIn:
			defs[i] = definition(docs[t.Doc].Text, t.Kind, t.Name)
		case t.Kind < RunIn:
			d, ok := prose[t.Doc]
			if !ok {
				d = definition(docs[t.Doc].Text, t.Kind, t.Name)
				prose[t.Doc] = d
			}
			defs[i] = d
		}
	}
	p.s = b.build(defs)
	return p
}

// tokenize splits a text into sentences and those into content words.
func tokenize(text string) []Token {
	var out []Token
	ss, paras := sentences(text)
	for si, s := range ss {
		prev := ""
		for _, w := range words.Split(s) {
			if !words.IsStop(w) {
				out = append(out, Token{Stem: words.Stem(w), Raw: w, Sentence: si, Para: paras[si], Prev: prev})
			}
			prev = w
		}
	}
	return out
}

var (
	paragraphEnd = regexp.MustCompile(`\n\s*\n`)
	sentenceEnd  = regexp.MustCompile(`[.!?]["”’')\]]*\s+|\n(?:\s*[-*|•]|\s*\d+\.)`)
	softBreak    = regexp.MustCompile(`([^\n])\n([^\n\s*|#•-])`)
)

// Sentences splits a passage into sentences: at sentence ends, blank lines and list items;
// a line that a hard wrap broke is joined first.
func Sentences(text string) []string {
	out, _ := sentences(text)
	return out
}

// sentences is Sentences with the index of each sentence's paragraph.
func sentences(text string) (out []string, paras []int) {
	for pi, p := range paragraphEnd.Split(softBreak.ReplaceAllString(text, "$1 $2"), -1) {
		for _, s := range sentenceEnd.Split(p, -1) {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
				paras = append(paras, pi)
			}
		}
	}
	return out, paras
}

// newTerm makes a term of a name, or reports that it names nothing (no content word, a lone
// short word, more than eight words).
func newTerm(name string, kind TermKind) (Term, bool) {
	name = strings.TrimSpace(name)
	var stems, exact []string
	for _, w := range words.Split(name) {
		if words.IsStop(w) {
			continue
		}
		// A state named by a participle ("Grappled") is its own term, not the act's
		// ("Grappling"): its key keeps the word as written.
		if words.Participle(w) {
			stems = append(stems, w)
			exact = append(exact, w)
		} else {
			stems = append(stems, words.Stem(w))
			exact = append(exact, "")
		}
	}
	key := strings.Join(stems, " ")
	if len(stems) == 0 || len(stems) > 8 || len(key) < 3 || allDigits(key) {
		return Term{}, false
	}
	return Term{Key: key, Name: name, Kind: kind, Exact: exact}, true
}

func allDigits(s string) bool {
	return strings.Trim(s, "0123456789 ") == ""
}

var (
	headingSplit = regexp.MustCompile(`(?i)\s*(?:[:;,]|\baka\b|\ba\.k\.a\.)\s*`)
	leadingThe   = regexp.MustCompile(`(?i)^(?:(?:the|a|an|and|or)\s+)+`)
)

// headingTerms are the names a heading gives: itself, its parts (parenthesis, colon, comma,
// "aka"), and for a heading that names an act by a gerund, the verb and what it acts on.
func headingTerms(h string) []Term {
	var out []Term
	add := func(name string, kind TermKind) {
		if t, ok := newTerm(name, kind); ok {
			for _, o := range out {
				if o.Key == t.Key {
					return
				}
			}
			out = append(out, t)
		}
	}
	add(h, Heading)
	for _, n := range passage.TitleNames(h)[1:] {
		add(n, HeadingPart)
	}
	base := passage.TitleNames(h)
	for _, n := range base {
		parts := headingSplit.Split(n, -1)
		if len(parts) > 1 {
			for _, part := range parts {
				add(leadingThe.ReplaceAllString(part, ""), HeadingPart)
			}
		}
	}
	// "Conceding the Conflict": a rule for an act, named by its gerund. Its text is what a
	// passage means by "concede", and the act's object is what the rule is about.
	ws := strings.Fields(leadingThe.ReplaceAllString(base[len(base)-1], ""))
	if len(ws) >= 2 {
		first := strings.ToLower(strings.Trim(ws[0], ",:;"))
		if len(first) > 5 && strings.HasSuffix(first, "ing") {
			add(first, Inflection)
			add(leadingThe.ReplaceAllString(strings.Join(ws[1:], " "), ""), Inflection)
		}
	}
	return out
}

// runInColon matches a run-in heading written with a colon: a capitalised name of up to four
// words opening a paragraph ("Thick Skin: You may use…").
var runInColon = regexp.MustCompile(`^([A-Z][\p{L}’'–-]*(?: (?:of|the|and|or|to|in|on|[A-Z][\p{L}’'–-]*)){0,3}): [A-Z]`)

// runInNames are the rules a passage defines under run-in headings, with a full stop or a colon.
func runInNames(text string) []string {
	out := passage.RunInHeadings(text)
	for _, line := range strings.Split(text, "\n") {
		if m := runInColon.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			out = append(out, m[1])
		}
	}
	return out
}
