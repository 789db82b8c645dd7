// Package passage is the vocabulary that loading books and answering from them share about a
// passage: the references it makes to other rules (page, "see X", a mention of another
// section's title) and the names it goes by (the last heading of its section path, the
// parenthesised names of a heading, the rules it defines under run-in headings). It is a leaf:
// ingest, store and rag all use it, and it imports none of them.
package passage

import (
	"regexp"
	"strings"
)

// RefKind says how a passage refers to another rule.
type RefKind string

const (
	// RefPage is a page reference: "p. 123", "p. B370", "pp. 12-13", "page 45".
	RefPage RefKind = "page"
	// RefSee is a "see X" phrase: "(see the condition)", "see Powers, p. 100",
	// "as described in the “Actions in Combat” section".
	RefSee RefKind = "see"
	// RefMention is the mention of another section's title in running text
	// ("…or be paralyzed for 1 minute" mentions the section "Paralyzed").
	RefMention RefKind = "mention"
)

// Reference is an outgoing cross-reference of a passage.
type Reference struct {
	Kind RefKind `json:"kind"`
	// Text is the reference as written in the passage ("see appendix PH-A", "p. B370").
	Text string `json:"text"`
	// Target is what it points to: a section title ("Paralyzed", "Actions in Combat") or a
	// page ("123"; a book prefix such as "B" stays in Target: "B370").
	Target string `json:"target"`
	// Book names the target's book when the reference or the library makes it known; empty
	// means any book (page references without a book prefix mean the passage's own book).
	Book string `json:"book,omitempty"`
	// Part is the top-level heading of the target's section path, when the library knows it:
	// a book that holds a whole rules corpus (the SRD as one PDF) links between its parts as a
	// corpus of several books links between books.
	Part string `json:"part,omitempty"`
	// ID is the passage the reference resolves to, when the library knows it (empty: resolve
	// Target by name or page).
	ID string `json:"id,omitempty"`
	// Weight is how much the reference says about where to read, from 0 to 1: 1 for an
	// explicit reference, the mentioned term's specificity for a mention (a term that most
	// passages use says little); 0 when unknown.
	Weight float64 `json:"weight,omitempty"`
}

// TopHeading is the first heading of a section path ("Combat > Grappling" → "Combat").
func TopHeading(path string) string {
	if i := strings.Index(path, " > "); i >= 0 {
		return path[:i]
	}
	return path
}

// LastHeading is the last heading of a section path ("Combat > Grappling" → "Grappling").
func LastHeading(path string) string {
	if i := strings.LastIndex(path, " > "); i >= 0 {
		return path[i+3:]
	}
	return path
}

// runIn matches a run-in heading at the start of a paragraph: a capitalised name of up to four
// words, perhaps with a parenthesis, then a full stop ("Malice (Inhaled). A creature…",
// "Recharge X–Y. The notation…").
var runIn = regexp.MustCompile(`^([A-Z][\p{L}’'–-]*(?: (?:of|the|and|or|to|in|on|[A-Z][\p{L}’'–-]*)){0,3})(?: \([^()\n]{1,40}\))?\. `)

// RunInHeadings returns the names of the rules a text defines under run-in headings, in order.
func RunInHeadings(text string) []string {
	var out []string
	for len(text) > 0 {
		line := text
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = ""
		}
		if h := RunInHeading(line); h != "" {
			out = append(out, h)
		}
	}
	return out
}

// RunInHeading is the name of the rule a paragraph (or line) opens with under a run-in heading,
// or "".
func RunInHeading(para string) string {
	if len(para) < 3 || para[0] < 'A' || para[0] > 'Z' {
		return ""
	}
	if len(para) > 100 {
		para = para[:100] // a name and its parenthesis are shorter
	}
	if m := runIn.FindStringSubmatch(para); m != nil {
		return m[1]
	}
	return ""
}

var parenthetical = regexp.MustCompile(`^(.+?)\s*\(([^()]+)\)$`)

// TitleNames are the names a heading goes by: itself and, for "Material (M)" or "Stone of Good
// Luck (Luckstone)", the name before the parenthesis and the one inside it.
func TitleNames(h string) []string {
	names := []string{h}
	if m := parenthetical.FindStringSubmatch(h); m != nil {
		names = append(names, m[1], m[2])
	}
	return names
}
