package lexicon

import (
	"regexp"
	"strings"
	"unicode"

	"github.com/caprag/caprag/passage"
)

var (
	// "p. 123", "pp. 12-13", "page 45", "pages 12–13", and the placeholder "page XX"
	pageRef = regexp.MustCompile(`(?i)\b(?:pp?\.\s?|pages?\s+)([A-Z]?\d{1,4}|XX+)(?:\s*[-–]\s*[A-Z]?\d{1,4})?\b`)
	// "(see X)", "(as described in X)", "(see also X)"
	seeParen = regexp.MustCompile(`(?i)\(\s*(?:see|(?:as\s+)?(?:described|explained|defined|detailed)\s+in)\s+(?:also\s+)?([^)]{2,80})\)`)
	// "See X." at the start of a sentence
	seeSentence = regexp.MustCompile(`(?:^|[.!?]\s+)See\s+(?:also\s+)?([^.;\n]{2,80})`)
	// a section named in quotes: described in the “Unseen Attackers and Targets” section
	seeQuoted = regexp.MustCompile(`["“]([^"”\n]{3,60})["”]\s+(?:section|sidebar|chapter|entry)\b`)
	seeTrim   = regexp.MustCompile(`(?i)^(?:the|a|an)\s+|\s+(?:below|above|later|earlier|for details|for more information|in this chapter|in chapter \d+)$`)
	parenOf   = regexp.MustCompile(`\([^()]{0,120}\)`)
)

// explicitRefs finds the page references and "see X" phrases of a passage, with where they
// stand among its tokens.
func explicitRefs(text string) []RawRef {
	var refs []RawRef
	seen := map[string]bool{}
	add := func(r RawRef, at int) {
		k := string(r.Kind) + "\x00" + strings.ToLower(r.Target) + "\x00" + strings.ToLower(r.BookWords)
		if r.Kind == passage.RefSee && r.Target == "" || seen[k] {
			return
		}
		seen[k] = true
		toks := tokenize(text[:at])
		r.At = len(toks)
		if len(toks) > 0 {
			r.Sentence = toks[len(toks)-1].Sentence
		}
		refs = append(refs, r)
	}
	for _, m := range pageRef.FindAllStringSubmatchIndex(text, -1) {
		target := strings.ToUpper(text[m[2]:m[3]])
		if strings.HasPrefix(target, "XX") {
			target = ""
		}
		add(RawRef{Kind: passage.RefPage, Text: text[m[0]:m[1]], Target: target, BookWords: around(text, m[0], m[1])}, m[0])
	}
	for _, re := range []*regexp.Regexp{seeParen, seeSentence, seeQuoted} {
		for _, m := range re.FindAllStringSubmatchIndex(text, -1) {
			phrase := strings.TrimSpace(text[m[2]:m[3]])
			if re != seeQuoted && seeQuoted.MatchString(phrase) {
				continue // "see the “Your Spellbook” sidebar": the quoted name, found below
			}
			target := strings.TrimSpace(seeTrim.ReplaceAllString(phrase, ""))
			target = strings.TrimSpace(seeTrim.ReplaceAllString(target, ""))
			if loc := pageRef.FindStringIndex(target); loc != nil {
				// "(see Extras, page 269 in Fate Core)": the page is found above; the name
				// before it is the section named.
				target = strings.Trim(strings.TrimSpace(target[:loc[0]]), ",;")
				if target == "" {
					continue
				}
			}
			low := strings.ToLower(target)
			// "grappled condition (see appendix PH-A)", "incapacitated (see the condition)": the
			// reference points at the word before it.
			if low == "condition" || strings.HasPrefix(low, "appendix") || strings.HasPrefix(low, "chapter") {
				if w := wordBefore(text[:m[0]]); w != "" {
					add(RawRef{Kind: passage.RefSee, Text: strings.TrimSpace(text[m[0]:m[1]]), Target: w}, m[0])
				}
				if low == "condition" {
					continue
				}
			}
			add(RawRef{Kind: passage.RefSee, Text: strings.TrimSpace(text[m[0]:m[1]]), Target: target, BookWords: phrase}, m[0])
		}
	}
	return refs
}

// around is the text that may name the book of a page reference: the parenthesis it stands in,
// else the few words after it ("page 256 of Fate Core").
func around(text string, lo, hi int) string {
	for _, m := range parenOf.FindAllStringIndex(text[max(0, lo-120):min(len(text), hi+120)], -1) {
		a, b := m[0]+max(0, lo-120), m[1]+max(0, lo-120)
		if a <= lo && hi <= b {
			return text[a:b]
		}
	}
	end := hi
	for n := 0; end < len(text) && n < 5; n++ { // five words on
		j := strings.IndexAny(text[end+1:], " \n")
		if j < 0 {
			end = len(text)
			break
		}
		end += j + 1
	}
	return text[hi:min(end, len(text))]
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
