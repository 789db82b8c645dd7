package ingest

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Chunk sizes in characters. Children are what search matches; parents are what the answer
// writer reads.
const (
	ChildSize  = 600
	ParentSize = 4000
)

var (
	emphasis    = regexp.MustCompile(`\*{1,3}([^*\n]+?)\*{1,3}`)
	blankLines  = regexp.MustCompile(`\n\s*\n`)
	sentenceEnd = regexp.MustCompile(`[.!?]["')\]]?\s+`)
)

// chunk turns sections into passages: each section is cut into parents of at most ParentSize,
// each parent into children of at most ChildSize. Nothing crosses a section boundary.
func chunk(book, source string, secs []section) []Passage {
	var out []Passage
	pos := 0
	for _, s := range secs {
		text := emphasis.ReplaceAllString(s.text, "$1")
		paras := paragraphs(text)
		for _, parent := range pack(paras, ParentSize) {
			parentID := stableID(book, pos, parent)
			for _, child := range pack(paragraphs(parent), ChildSize) {
				out = append(out, Passage{
					ID:       stableID(book, pos, child),
					ParentID: parentID,
					Book:     book,
					Section:  s.path,
					Page:     s.page,
					Source:   source,
					Position: pos,
					Text:     child,
					Parent:   parent,
				})
				pos++
			}
		}
	}
	return out
}

// paragraphs splits text at blank lines and trims each paragraph.
func paragraphs(text string) []string {
	var out []string
	for _, p := range blankLines.Split(text, -1) {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// pack groups paragraphs into pieces of at most max characters; a paragraph longer than max is
// cut at sentence ends (and, for a sentence longer than max, at spaces).
func pack(paras []string, max int) []string {
	var (
		out []string
		cur strings.Builder
	)
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	add := func(piece, sep string) {
		if cur.Len() > 0 && utf8.RuneCountInString(cur.String())+len(sep)+utf8.RuneCountInString(piece) > max {
			flush()
		}
		if cur.Len() > 0 {
			cur.WriteString(sep)
		}
		cur.WriteString(piece)
	}
	for _, p := range paras {
		if utf8.RuneCountInString(p) <= max {
			add(p, "\n\n")
			continue
		}
		for _, s := range sentences(p, max) {
			add(s, " ")
		}
	}
	flush()
	return out
}

// sentences cuts a long paragraph into sentences no longer than max.
func sentences(p string, max int) []string {
	var out []string
	last := 0
	for _, m := range sentenceEnd.FindAllStringIndex(p, -1) {
		out = append(out, strings.TrimSpace(p[last:m[1]]))
		last = m[1]
	}
	if last < len(p) {
		out = append(out, strings.TrimSpace(p[last:]))
	}
	var res []string
	for _, s := range out {
		for utf8.RuneCountInString(s) > max {
			cut := 0
			for i := range s {
				if utf8.RuneCountInString(s[:i]) > max {
					break
				}
				if s[i] == ' ' || s[i] == '\t' || s[i] == '\n' {
					cut = i
				}
			}
			if cut == 0 { // one enormous word: cut at max runes
				n := 0
				for i := range s {
					if n == max {
						cut = i
						break
					}
					n++
				}
			}
			res = append(res, strings.TrimSpace(s[:cut]))
			s = strings.TrimSpace(s[cut:])
		}
		if s != "" {
			res = append(res, s)
		}
	}
	return res
}

// stableID derives a passage ID from its book, position and content, so that ingesting the same
// book again yields the same IDs.
func stableID(book string, pos int, text string) string {
	h := sha256.Sum256([]byte(book + "\x00" + strconv.Itoa(pos) + "\x00" + text))
	return hex.EncodeToString(h[:12])
}
