package rag

import (
	"cmp"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Hint is an unresolved reference of a passage in the context: its target is not yet there.
type Hint struct {
	From Document
	Ref  Reference
	Rank int // position of From in the context (0 = found first)
}

// Unresolved returns the references of the documents whose targets are not among the
// documents' own sections (or pages), in context order, each target once.
func Unresolved(docs []Document) []Hint {
	have, exact := map[string]bool{}, map[string]bool{}
	for _, d := range docs {
		for _, h := range strings.Split(d.Section, " > ") {
			have[foldTitle(h)] = true
			exact[wordsOf(h)] = true
		}
		if d.Page > 0 {
			have["page\x00"+d.Book+"\x00"+strconv.Itoa(d.Page)] = true
		}
	}
	var out []Hint
	seen := map[string]bool{}
	for i, d := range docs {
		for _, r := range d.Refs {
			k := foldTitle(r.Target)
			in := have
			if r.Kind == RefSee || r.Kind == RefMention && participle(r.Target) {
				// An explicit reference names its section exactly: "grappled (see ...)" in
				// Grappling points at Grappled, which folding would confuse with Grappling. So
				// does a mention of a state ("poisoned"), which Sample Poisons does not resolve.
				k, in = wordsOf(r.Target), exact
			}
			if r.Kind == RefPage {
				k = "page\x00" + cmp.Or(r.Book, d.Book) + "\x00" + strings.TrimLeft(r.Target, "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
			}
			if k == "" || in[k] || seen[k] || coveredByPrefix(in, k) {
				continue
			}
			seen[k] = true
			out = append(out, Hint{From: d, Ref: r, Rank: i})
		}
	}
	return out
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
		if h := runInHeading(line); h != "" {
			out = append(out, h)
		}
	}
	return out
}

// runInHeading is the name of the rule a paragraph (or line) opens with under a run-in heading,
// or "".
func runInHeading(para string) string {
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

// coveredByPrefix: "appendix ph a" is covered by a section "appendix ph a conditions".
func coveredByPrefix(have map[string]bool, k string) bool {
	if len(k) < 6 {
		return false
	}
	for h := range have {
		if strings.HasPrefix(h, k+" ") {
			return true
		}
	}
	return false
}

// foldTitle lowercases a title, keeps its words and strips a plural or past-tense ending from
// each, so "grappled", "Grappled" and "grapple" meet.
func foldTitle(s string) string {
	words := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	for i, w := range words {
		words[i] = fold(w)
	}
	return strings.Join(words, " ")
}

func fold(w string) string {
	n := len(w)
	switch {
	case n > 5 && strings.HasSuffix(w, "ing"):
		w = w[:n-3]
	case n > 4 && strings.HasSuffix(w, "ed"):
		w = w[:n-2]
	case n > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss"):
		w = w[:n-1]
	}
	return strings.TrimSuffix(w, "e")
}

// wordsOf lowercases a title and keeps its words.
func wordsOf(s string) string {
	return strings.Join(strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }), " ")
}

// Participle reports whether a word (lower case) names a state by a past participle
// ("poisoned", "grappled"): such a word is matched as written, not folded with "poison" or
// "grapple".
func Participle(w string) bool { return len(w) > 4 && strings.HasSuffix(w, "ed") }

// participle reports whether a title holds a participle word.
func participle(t string) bool { return slices.ContainsFunc(strings.Fields(wordsOf(t)), Participle) }
