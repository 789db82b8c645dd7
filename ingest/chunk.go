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
	return (&chunker{}).chunk(book, source, secs)
}

// chunker cuts sections into passages. steps counts the runes its loops examine: each rune of
// the text is looked at a bounded number of times, so chunking time is linear in the text's
// length (the tests check steps per byte; a cut that recounted the rest of a paragraph made an
// 8 MB paragraph take 33 s).
type chunker struct{ steps int }

func (c *chunker) chunk(book, source string, secs []section) []Passage {
	var out []Passage
	pos := 0
	for _, s := range secs {
		text := emphasis.ReplaceAllString(s.text, "$1")
		paras := paragraphs(text)
		for _, parent := range c.pack(paras, ParentSize) {
			parentID := stableID(book, pos, parent)
			for _, child := range c.pack(paragraphs(parent), ChildSize) {
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
func (c *chunker) pack(paras []string, max int) []string {
	var (
		out []string
		cur strings.Builder
		n   int // runes in cur
	)
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, cur.String())
			cur.Reset()
			n = 0
		}
	}
	add := func(piece string, runes int, sep string) {
		if cur.Len() > 0 && n+len(sep)+runes > max {
			flush()
		}
		if cur.Len() > 0 {
			cur.WriteString(sep)
			n += len(sep)
		}
		cur.WriteString(piece)
		n += runes
	}
	for _, p := range paras {
		runes := utf8.RuneCountInString(p)
		c.steps += runes
		if runes <= max {
			add(p, runes, "\n\n")
			continue
		}
		for _, s := range c.sentences(p, max) {
			add(s, utf8.RuneCountInString(s), " ")
		}
	}
	flush()
	return out
}

// sentences cuts a long paragraph into sentences no longer than max runes: a longer sentence is
// cut at its last space within max runes, or at max runes when it has none there.
func (c *chunker) sentences(p string, max int) []string {
	var res []string
	cutLong := func(s string) {
		for s != "" {
			// One scan of at most max+1 runes: where the last space within max runes is, and
			// whether s is longer than max at all.
			n, space, hard := 0, 0, 0
			for i := range s {
				c.steps++
				if n == max {
					hard = i
				}
				if n > max {
					break
				}
				if s[i] == ' ' || s[i] == '\t' || s[i] == '\n' {
					space = i
				}
				n++
			}
			if n <= max { // the rest fits

				res = append(res, s)
				return
			}
			cut := space
			if cut == 0 { // one enormous word: cut at max runes
				cut = hard
			}
			res = append(res, strings.TrimSpace(s[:cut]))
			s = strings.TrimSpace(s[cut:])
		}
	}
	last := 0
	for _, m := range sentenceEnd.FindAllStringIndex(p, -1) {
		cutLong(strings.TrimSpace(p[last:m[1]]))
		last = m[1]
	}
	if last < len(p) {
		cutLong(strings.TrimSpace(p[last:]))
	}
	return res
}

// stableID derives a passage ID from its book, position and content, so that ingesting the same
// book again yields the same IDs.
func stableID(book string, pos int, text string) string {
	h := sha256.Sum256([]byte(book + "\x00" + strconv.Itoa(pos) + "\x00" + text))
	return hex.EncodeToString(h[:12])
}
