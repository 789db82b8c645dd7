// Package words is the one place where text becomes words: splitting (case, apostrophes —
// straight or typographic —, possessives, hyphens and dashes), light English stemming, and the
// generic English stop and chatter words (one data file, stopwords.txt). Ingest, the stores'
// lexical index and embedder, and the offline roles all read words through it, so a word a
// book writes and the same word a player types always meet.
package words

import (
	_ "embed"
	"strings"
	"unicode"
)

// Split lowercases s and returns its words: runs of letters (any script, diacritics kept) and
// digits. Apostrophes, straight or typographic, end a word, and a possessive "'s" is dropped
// with its apostrophe ("the tarrasque’s bite" → tarrasque bite; "don't" → don t); every other
// character — spaces, punctuation, hyphens and dashes — separates words ("two-weapon" → two
// weapon).
func Split(s string) []string {
	var out []string
	var b strings.Builder
	flush := func() {
		if b.Len() > 0 {
			out = append(out, b.String())
			b.Reset()
		}
	}
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(unicode.ToLower(r))
		case apostrophe(r) && b.Len() > 0 && i+1 < len(rs) && (rs[i+1] == 's' || rs[i+1] == 'S') && (i+2 == len(rs) || !unicode.IsLetter(rs[i+2]) && !unicode.IsDigit(rs[i+2])):
			// a possessive: the word ends here and the "s" goes with the apostrophe
			flush()
			i++
		default:
			flush()
		}
	}
	flush()
	return out
}

// apostrophe reports whether r is written as an apostrophe: ' ’ ‘ ʼ ′.
func apostrophe(r rune) bool {
	switch r {
	case '\'', '’', '‘', 'ʼ', '′':
		return true
	}
	return false
}

// Normalize is the words of s joined by single spaces: the form in which titles, headings and
// questions are compared ("Grappled!" and "grappled" meet; "Grappling" stays apart).
func Normalize(s string) string { return strings.Join(Split(s), " ") }

// Stems is Split with each word stemmed.
func Stems(s string) []string {
	out := Split(s)
	for i, w := range out {
		out[i] = Stem(w)
	}
	return out
}

// Fold is the stems of s joined by single spaces: the form in which titles are compared across
// inflections ("Grappled", "grapple" and "grappling" meet).
func Fold(s string) string { return strings.Join(Stems(s), " ") }

// Tokens is the words of s without stop words, stemmed: what the lexical index and the hashed
// embedder count.
func Tokens(s string) []string {
	ws := Split(s)
	out := ws[:0]
	for _, w := range ws {
		if !stop[w] {
			out = append(out, Stem(w))
		}
	}
	return out
}

// Content is the words of s without stop words and the words of asking, stemmed: the words the
// offline roles match a question by (its subject, not its phrasing).
func Content(s string) []string {
	ws := Split(s)
	out := ws[:0]
	for _, w := range ws {
		if !stop[w] && !asking[w] {
			out = append(out, Stem(w))
		}
	}
	return out
}

// ContentSet is Content as a set.
func ContentSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, t := range Content(s) {
		m[t] = true
	}
	return m
}

// Stem strips common English inflections (possessive, plural, -ed, -ing, a final silent e) so
// that "grappled", "grapples" and "grappling" meet, as do "abilities" and "ability". It is
// deliberately light: rule names must stay recognisable. w is one lower-case word.
func Stem(w string) string {
	w = strings.TrimSuffix(w, "'s")
	w = strings.TrimSuffix(w, "’s")
	n := len(w)
	switch {
	case n > 5 && strings.HasSuffix(w, "ies"):
		return w[:n-3] + "y"
	case n > 5 && strings.HasSuffix(w, "ing"):
		return undouble(strings.TrimSuffix(w[:n-3], "e"))
	case n > 4 && strings.HasSuffix(w, "ed"):
		return undouble(strings.TrimSuffix(w[:n-2], "e"))
	case n > 4 && (strings.HasSuffix(w, "ses") || strings.HasSuffix(w, "xes") || strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "shes")):
		return w[:n-2]
	case n > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		// The singular's own stem, so that "creatures" and "creature" meet.
		return stripE(w[:n-1])
	}
	return stripE(w)
}

// stripE drops a final silent "e" of a word longer than four letters ("creature" → "creatur"),
// or of four letters after a consonant ("save" → "sav", so that "save", "saves", "saved" and
// "saving" meet; "free" stays).
func stripE(w string) string {
	n := len(w)
	if n > 4 && w[n-1] == 'e' || n == 4 && w[3] == 'e' && !strings.ContainsRune("aeiouy", rune(w[2])) {
		return w[:n-1]
	}
	return w
}

// undouble drops the doubled final consonant an inflection added ("getting" → "get").
func undouble(w string) string {
	n := len(w)
	if n >= 3 && w[n-1] == w[n-2] && strings.IndexByte("bdgmnprt", w[n-1]) >= 0 {
		return w[:n-1]
	}
	return w
}

// Participle reports whether a word (lower case) names a state by a past participle
// ("poisoned", "grappled"): such a word is matched as written, not stemmed together with
// "poison" or "grapple".
func Participle(w string) bool { return len(w) > 4 && strings.HasSuffix(w, "ed") }

// HasParticiple reports whether any word of s is a participle.
func HasParticiple(s string) bool {
	for _, w := range Split(s) {
		if Participle(w) {
			return true
		}
	}
	return false
}

// IsStop reports whether w (one lower-case word) is an English function word: a word any
// text uses whatever it is about.
func IsStop(w string) bool { return stop[w] }

// IsAsking reports whether w (one lower-case word) is a word of how players phrase a question
// ("want", "happens", "work", "use"), not of what they ask about.
func IsAsking(w string) bool { return asking[w] }

// IsChatter reports whether w (one lower-case word, or its stem) is a word of table talk: a word
// of asking or one of the further talk words ("really", "tell", "many"). Rankings without term
// weights (the hashed embedder) skip these; BM25 keeps them, since its IDF discounts them and
// some name rules ("Working Together").
func IsChatter(w string) bool { return chatter[w] }

// IsStateVerb reports whether w (one lower-case word) puts something in a state: "is",
// "becomes", "remains" ("…or become frightened": the rule causes the state "frightened").
func IsStateVerb(w string) bool { return state[w] }

//go:embed stopwords.txt
var stopwordsFile string

var stop, asking, chatter, state = parseStopwords(stopwordsFile)

// parseStopwords reads the data file: "[stop]", "[asking]", "[talk]" and "[state]" sections of
// whitespace-separated words; "#" starts a comment. chatter holds the words of asking and talk
// and their stems.
func parseStopwords(file string) (stop, asking, chatter, state map[string]bool) {
	stop, asking, talk, state := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	var cur map[string]bool
	for _, line := range strings.Split(file, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		switch line = strings.TrimSpace(line); line {
		case "":
		case "[stop]":
			cur = stop
		case "[asking]":
			cur = asking
		case "[talk]":
			cur = talk
		case "[state]":
			cur = state
		default:
			if cur == nil {
				panic("words: stopwords.txt: a word before any section: " + line)
			}
			for _, w := range strings.Fields(line) {
				cur[w] = true
			}
		}
	}
	chatter = map[string]bool{}
	for _, m := range []map[string]bool{asking, talk} {
		for w := range m {
			chatter[w], chatter[Stem(w)] = true, true
		}
	}
	return stop, asking, chatter, state
}
