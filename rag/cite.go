package rag

import (
	"regexp"
	"strconv"
	"strings"
)

// Citations as writers write them. A model told to cite "[1]" also writes "[1, 2]", "[1-3]",
// "[Passage 3]", "(3)" or "(passages 2 and 3)"; all become "[1][2]…". Numbers outside the
// passages handed to the writer, and bracketed source abbreviations ("[PHB]"), are dropped.
var (
	// bracketCite: "[1]", "[1, 2]", "[1; 2]", "[1-3]", "[1–3]", "[Passage 3]", "[passages 1 and 2]",
	// "[Source 2]", "[p3]".
	bracketCite = regexp.MustCompile(`(?i)\[\s*(?:(?:passages?|sources?|p\.?|#)\s*)?(\d{1,3}(?:\s*(?:,|;|-|–|—|and|&|\]\s*\[)\s*(?:(?:passages?|sources?|p\.?|#)\s*)?\d{1,3})*)\s*\]`)
	// parenCite: "(3)", "(2, 3)", "(Passage 3)", "(passages 2 and 3)".
	parenCite = regexp.MustCompile(`(?i)\(\s*(?:(?:passages?|sources?)\s*)?(\d{1,3}(?:\s*(?:,|;|and|&)\s*\d{1,3})*)\s*\)`)
	// sourceAbbrev: "[PHB]", "[SRD]": a book named instead of a passage number.
	sourceAbbrev = regexp.MustCompile(`\s?\[[A-Z][A-Z0-9]{1,7}\]`)
	citeNumber   = regexp.MustCompile(`\d{1,3}`)
	citeRange    = regexp.MustCompile(`(\d{1,3})\s*[-–—]\s*(\d{1,3})`)
	// citeMark finds the normalised citations.
	citeMark = regexp.MustCompile(`\[(\d{1,3})\]`)
)

// maxCiteRange bounds a "[1-30]" range: longer ones are not citations.
const maxCiteRange = 10

// NormalizeCitations rewrites every citation form of text as "[k]" for passages 1..n, one
// bracket per passage, dropping unknown ones. It returns the text and the passages cited, in
// order of first citation.
func NormalizeCitations(text string, n int) (string, []int) {
	expand := func(inner string, allowRange bool) (string, bool) {
		var nums []int
		rest := inner
		if allowRange {
			rest = citeRange.ReplaceAllStringFunc(inner, func(m string) string {
				p := citeRange.FindStringSubmatch(m)
				a, _ := strconv.Atoi(p[1])
				b, _ := strconv.Atoi(p[2])
				if a <= b && b-a < maxCiteRange {
					for k := a; k <= b; k++ {
						nums = append(nums, k)
					}
				}
				return " "
			})
		}
		for _, f := range citeNumber.FindAllString(rest, -1) {
			k, _ := strconv.Atoi(f)
			nums = append(nums, k)
		}
		var b strings.Builder
		any := false
		for _, k := range nums {
			if k >= 1 && k <= n {
				b.WriteString("[" + strconv.Itoa(k) + "]")
				any = true
			}
		}
		return b.String(), any
	}
	text = bracketCite.ReplaceAllStringFunc(text, func(m string) string {
		s, _ := expand(bracketCite.FindStringSubmatch(m)[1], true)
		return s
	})
	text = parenCite.ReplaceAllStringFunc(text, func(m string) string {
		if s, ok := expand(parenCite.FindStringSubmatch(m)[1], false); ok {
			return s
		}
		return m // "(0)" or "(12)" beyond the passages: not a citation, left as written
	})
	text = sourceAbbrev.ReplaceAllString(text, "")
	var cited []int
	seen := map[int]bool{}
	for _, m := range citeMark.FindAllStringSubmatch(text, -1) {
		k, _ := strconv.Atoi(m[1])
		if !seen[k] {
			seen[k] = true
			cited = append(cited, k)
		}
	}
	return text, cited
}

// cite numbers an answer's sources by citation: the passages the text cites become [1]..[k] in
// the order they are first cited (the text renumbered to match), and the context lists every
// passage, the cited ones first with the same numbers, then the others (k+1…) in their order.
func cite(text string, docs []Document) (string, []Source, []Source) {
	text, cited := NormalizeCitations(text, len(docs))
	renum := make(map[int]int, len(cited))
	for i, k := range cited {
		renum[k] = i + 1
	}
	text = citeMark.ReplaceAllStringFunc(text, func(m string) string {
		k, _ := strconv.Atoi(m[1 : len(m)-1])
		return "[" + strconv.Itoa(renum[k]) + "]"
	})
	source := func(n int, d Document) Source {
		return Source{N: n, Book: d.Book, Page: d.Page, Section: d.Section, Text: d.Text}
	}
	var sources, context []Source
	for i, k := range cited {
		s := source(i+1, docs[k-1])
		sources = append(sources, s)
		context = append(context, s)
	}
	for i, d := range docs {
		if _, ok := renum[i+1]; !ok {
			context = append(context, source(len(context)+1, d))
		}
	}
	return text, sources, context
}
