package rag

import (
	"cmp"
	"regexp"
	"strconv"
	"strings"

	"github.com/caprag/caprag/words"
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
			have[words.Fold(h)] = true
			exact[words.Normalize(h)] = true
		}
		if d.Page > 0 {
			have["page\x00"+d.Book+"\x00"+strconv.Itoa(d.Page)] = true
		}
	}
	var out []Hint
	seen := map[string]bool{}
	for i, d := range docs {
		for _, r := range d.Refs {
			k := words.Fold(r.Target)
			in := have
			if r.Kind == RefSee || r.Kind == RefMention && words.HasParticiple(r.Target) {
				// An explicit reference names its section exactly: "grappled (see ...)" in
				// Grappling points at Grappled, which folding would confuse with Grappling. So
				// does a mention of a state ("poisoned"), which Sample Poisons does not resolve.
				k, in = words.Normalize(r.Target), exact
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
