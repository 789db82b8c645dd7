package ingest

import (
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/caprag/caprag/passage"
	"github.com/caprag/caprag/words"
)

var (
	pageRef     = regexp.MustCompile(`(?i)\b(?:pp?\.\s?|pages?\s+)([A-Z]?\d{1,4})(?:\s*[-–]\s*[A-Z]?\d{1,4})?\b`)
	seeParen    = regexp.MustCompile(`(?i)\(\s*(?:see|(?:as\s+)?(?:described|explained|defined|detailed)\s+in)\s+(?:also\s+)?([^)]{2,80})\)`)
	seeSentence = regexp.MustCompile(`(?:^|[.!?]\s+)See\s+(?:also\s+)?([^.;\n]{2,80})`)
	// a section named in quotes: described in the “Unseen Attackers and Targets” section
	seeQuoted = regexp.MustCompile(`["“]([^"”\n]{3,60})["”]\s+(?:section|sidebar|chapter|entry)\b`)
	seeTrim   = regexp.MustCompile(`(?i)^(?:the|a|an)\s+|\s+(?:below|above|later|earlier|for details|for more information|in this chapter|in chapter \d+)$`)
)

// AddRefs records the outgoing references of each passage: page references, "see X" phrases and
// mentions of the titles of other sections of the same book. The store recomputes mentions
// across every book of a library with a TitleIndex over all of them.
func AddRefs(ps []Passage) {
	idx := NewTitleIndex(ps)
	for i := range ps {
		ps[i].Refs = append(explicitRefs(ps[i].Text), idx.Mentions(ps[i])...)
	}
}

// ExplicitRefs finds page references and "see X" phrases in a text.
func ExplicitRefs(text string) []passage.Reference { return explicitRefs(text) }

// explicitRefs finds page references and "see X" phrases.
func explicitRefs(text string) []passage.Reference {
	var refs []passage.Reference
	seen := map[string]bool{}
	add := func(r passage.Reference) {
		k := string(r.Kind) + "\x00" + strings.ToLower(r.Target)
		if r.Target == "" || seen[k] {
			return
		}
		seen[k] = true
		refs = append(refs, r)
	}
	for _, m := range pageRef.FindAllStringSubmatch(text, -1) {
		add(passage.Reference{Kind: passage.RefPage, Text: m[0], Target: strings.ToUpper(m[1])})
	}
	for _, re := range []*regexp.Regexp{seeParen, seeSentence, seeQuoted} {
		for _, m := range re.FindAllStringSubmatchIndex(text, -1) {
			phrase := strings.TrimSpace(text[m[2]:m[3]])
			if re != seeQuoted && seeQuoted.MatchString(phrase) {
				continue // "see the “Your Spellbook” sidebar": the quoted name, found below
			}
			target := strings.TrimSpace(seeTrim.ReplaceAllString(phrase, ""))
			target = strings.TrimSpace(seeTrim.ReplaceAllString(target, ""))
			if pageRef.MatchString(target) && len(target) < 12 {
				continue // "(see p. 12)" is a page reference, found above
			}
			low := strings.ToLower(target)
			// "grappled condition (see appendix PH-A)", "incapacitated (see the condition)": the
			// reference points at the word before it.
			if low == "condition" || strings.HasPrefix(low, "appendix") || strings.HasPrefix(low, "chapter") {
				if w := wordBefore(text[:m[0]]); w != "" {
					add(passage.Reference{Kind: passage.RefSee, Text: strings.TrimSpace(text[m[0]:m[1]]), Target: w})
				}
				if low == "condition" {
					continue
				}
			}
			add(passage.Reference{Kind: passage.RefSee, Text: strings.TrimSpace(text[m[0]:m[1]]), Target: target})
		}
	}
	return refs
}

// wordBefore returns the last word before a "(see ...)", skipping the word "condition".
func wordBefore(s string) string {
	ws := strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && r != '-' && r != '\'' })
	for i := len(ws) - 1; i >= 0 && i >= len(ws)-3; i-- {
		w := strings.ToLower(ws[i])
		if w == "condition" || w == "conditions" || w == "the" {
			continue
		}
		return ws[i]
	}
	return ""
}

// genericTitles are headings too common to be a cross-reference when mentioned.
var genericTitles = map[string]bool{
	"actions": true, "action": true, "reactions": true, "legendary actions": true, "description": true,
	"introduction": true, "overview": true, "general": true, "variant": true, "notes": true,
	"example": true, "examples": true, "table": true, "equipment": true, "features": true,
	"class features": true, "hit points": true, "proficiencies": true, "speed": true, "size": true,
	"languages": true, "senses": true, "alignment": true, "age": true, "armor class": true,
	"damage": true, "attack": true, "spells": true, "level": true, "range": true, "duration": true,
	"components": true, "casting time": true, "magic": true, "creatures": true, "monsters": true,
	"rules": true, "combat": true, "movement": true, "time": true, "light": true, "sleep": true,
	"fly": true, "shield": true, "command": true, "message": true, "mending": true, "guidance": true,
	"resistance": true, "darkness": true, "silence": true, "friends": true, "light and darkness": true,
	"strength": true, "dexterity": true, "constitution": true, "intelligence": true, "wisdom": true,
	"charisma": true, "space": true, "line": true, "cone": true, "cube": true, "sphere": true, "cylinder": true,
	"water": true, "type": true, "tags": true, "training": true, "tools": true, "gate": true, "help": true,
	"search": true, "climb": true, "swim": true, "knock": true, "instantaneous": true, "harm": true, "slow": true,
}

// ordinalLevel matches headings like "3rd Level", too generic to be a cross-reference.
var ordinalLevel = regexp.MustCompile(`^\d+(st|nd|rd|th) level$`)

type title struct {
	words []string // stemmed words
	exact []string // for each word, the form the text must show ("" for any inflection)
	text  string   // as written
	book  string   // "" when several books have this title
	part  string   // top-level heading of its section; "" when several parts have this title
}

// TitleIndex finds mentions of section titles in passage text.
type TitleIndex struct {
	byFirst map[string][]*title
}

// NewTitleIndex indexes the titles (last heading of each section path) of the passages. Titles
// that are generic, very short, or mentioned in more than 8% of the passages are left out: a
// mention of them says nothing about where to look.
func NewTitleIndex(ps []Passage) *TitleIndex {
	var names []Name
	for _, p := range ps {
		heading := passage.LastHeading(p.Section)
		for _, t := range passage.TitleNames(heading) {
			names = append(names, Name{Text: t, Target: heading, Book: p.Book, Part: passage.TopHeading(p.Section)})
		}
	}
	return newNameIndex(names, ps, len(ps)/12+5)
}

// Name is a name a text may mention: Text as matched, Target as the reference names it, and the
// book that holds it.
type Name struct{ Text, Target, Book, Part string }

// NewTermIndex indexes the rules defined inside sections under a run-in heading (see
// DefinedTerms; defined is its result for ps): "Malice" of the sample poisons. Terms mentioned by more than termMentions
// passages (their own included) are left out: a question that names such a rare term is about
// the passage defining it, while a term many passages use says little about where to look.
func NewTermIndex(ps []Passage, defined map[string]int) *TitleIndex {
	var names []Name
	for t, i := range defined {
		names = append(names, Name{Text: t, Target: t, Book: ps[i].Book})
	}
	slices.SortFunc(names, func(a, b Name) int { return strings.Compare(a.Text, b.Text) })
	return newNameIndex(names, ps, termMentions)
}

// termMentions bounds how many passages may mention a term the TermIndex keeps.
const termMentions = 2

// DefinedTerms returns the rules defined under a run-in heading (passage.RunInHeadings) that exactly one
// passage of ps defines and no section title already names, each with the index of the passage
// that defines it: "Malice", "Recharge X–Y". A term many passages define ("Bite",
// "Multiattack") names nothing in particular.
func DefinedTerms(ps []Passage) map[string]int {
	titles := map[string]bool{}
	for _, p := range ps {
		for _, t := range passage.TitleNames(passage.LastHeading(p.Section)) {
			titles[words.Normalize(t)] = true
		}
	}
	first := map[string]int{}
	count := map[string]int{}
	name := map[string]string{}
	for i, p := range ps {
		for _, t := range passage.RunInHeadings(p.Text) {
			key := words.Normalize(t)
			if titles[key] || key == "" {
				continue
			}
			if count[key]++; count[key] == 1 {
				first[key], name[key] = i, t
			}
		}
	}
	out := map[string]int{}
	for key, n := range count {
		if n == 1 {
			out[name[key]] = first[key]
		}
	}
	return out
}

func newNameIndex(names []Name, ps []Passage, limit int) *TitleIndex {
	idx := &TitleIndex{byFirst: map[string][]*title{}}
	all := map[string]*title{}
	for _, n := range names {
		key := words.Normalize(n.Text)
		if len(key) < 3 || genericTitles[key] || ordinalLevel.MatchString(key) {
			continue
		}
		if old, ok := all[key]; ok {
			if old.book != n.Book {
				old.book = ""
			}
			if old.part != n.Part || old.book == "" {
				old.part = ""
			}
			continue
		}
		stems := words.Stems(n.Text)
		if len(stems) == 0 || len(stems) > 8 {
			continue
		}
		tt := &title{words: stems, exact: exactForms(n.Text), text: n.Target, book: n.Book, part: n.Part}
		all[key] = tt
		idx.byFirst[stems[0]] = append(idx.byFirst[stems[0]], tt)
	}
	// Drop titles mentioned almost everywhere.
	counts := map[*title]int{}
	for _, p := range ps {
		for _, t := range idx.find(p.Text) {
			counts[t]++
		}
	}
	for first, ts := range idx.byFirst {
		kept := ts[:0]
		for _, t := range ts {
			if counts[t] <= limit {
				kept = append(kept, t)
			}
		}
		idx.byFirst[first] = kept
	}
	return idx
}

// exactForms marks the words of a title that name a state by a past participle ("Poisoned",
// "Grappled"): such a word is matched as written, since "poison damage" does not mean the
// Poisoned condition and a title matched by every "poison" would look mentioned everywhere.
func exactForms(t string) []string {
	raw := words.Split(t)
	out := make([]string, len(raw))
	for i, w := range raw {
		if words.Participle(w) {
			out[i] = w
		}
	}
	return out
}

func (idx *TitleIndex) find(text string) []*title {
	raw := words.Split(text)
	stems := make([]string, len(raw))
	for i, w := range raw {
		stems[i] = words.Stem(w)
	}
	var out []*title
	seen := map[*title]bool{}
	for i, w := range stems {
		for _, t := range idx.byFirst[w] {
			if seen[t] || i+len(t.words) > len(stems) {
				continue
			}
			match := true
			for j := range t.words {
				if stems[i+j] != t.words[j] || j < len(t.exact) && t.exact[j] != "" && raw[i+j] != t.exact[j] {
					match = false
					break
				}
			}
			if match {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	return out
}

// Mentions returns a mention reference for each indexed title named in the passage's text,
// except the titles on the passage's own section path.
func (idx *TitleIndex) Mentions(p Passage) []passage.Reference {
	own := map[string]bool{}
	for _, h := range strings.Split(p.Section, " > ") {
		own[words.Normalize(h)] = true
	}
	var refs []passage.Reference
	seen := map[string]bool{}
	for _, t := range idx.find(p.Text) {
		if own[words.Normalize(t.text)] || seen[t.text] {
			continue
		}
		seen[t.text] = true
		refs = append(refs, passage.Reference{Kind: passage.RefMention, Text: t.text, Target: t.text, Book: t.book, Part: t.part})
	}
	return refs
}
