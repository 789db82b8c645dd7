package ingest

import (
	"strings"
	"unicode"
)

// normGlyph normalises what one glyph reads as. A glyph is one mark on the page, so when its
// ToUnicode entry lists several characters of one kind — Word maps its space glyph to "\t\r
// \u00a0" and its hyphen to "-\u00ad‐‑" — the glyph reads as one character of that kind.
// Ligatures read as their letters, typographic quotes and hyphens as their ASCII forms; unmapped
// glyphs, private-use symbols and control characters read as nothing.
func normGlyph(s string) string {
	if s == "" {
		return ""
	}
	var b strings.Builder
	spaces, dashes, other := 0, 0, 0
	for _, r := range s {
		switch {
		case isSpaceRune(r):
			spaces++
		case isHyphenRune(r):
			dashes++
		default:
			other++
		}
	}
	switch {
	case other == 0 && dashes > 0:
		return "-"
	case other == 0 && spaces > 0:
		return " "
	}
	for _, r := range s {
		if lig, ok := ligatures[r]; ok {
			b.WriteString(lig)
			continue
		}
		switch {
		case isSpaceRune(r):
			b.WriteByte(' ')
		case isHyphenRune(r):
			if r != '\u00ad' {
				b.WriteByte('-')
			}
		case r == '\ufffd' || unicode.Is(unicode.Co, r) || unicode.IsControl(r):
		default:
			if q, ok := quoteForms[r]; ok {
				r = q
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isSpaceRune(r rune) bool {
	return r == ' ' || r == '\t' || r == '\r' || r == '\n' || r == '\f' || r == '\v' || r == '\u00a0' ||
		(r >= '\u2000' && r <= '\u200b') || r == '\u202f' || r == '\u205f' || r == '\u3000'
}

// isHyphenRune: the hyphen and its typographic variants (soft hyphen, Unicode hyphen, non-breaking
// hyphen, figure dash, minus sign). En and em dashes stay what they are.
func isHyphenRune(r rune) bool {
	return r == '-' || r == '\u00ad' || r == '\u2010' || r == '\u2011' || r == '\u2012' || r == '\u2212'
}

var ligatures = map[rune]string{
	'\ufb00': "ff", '\ufb01': "fi", '\ufb02': "fl", '\ufb03': "ffi", '\ufb04': "ffl", '\ufb05': "st", '\ufb06': "st",
}

var quoteForms = map[rune]rune{
	'\u2018': '\'', '\u2019': '\'', '\u201a': '\'', '\u201b': '\'', '\u2032': '\'',
	'\u201c': '"', '\u201d': '"', '\u201e': '"', '\u201f': '"', '\u2033': '"',
}
