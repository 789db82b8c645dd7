package ingest

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// bookSections turns the laid-out pages of a PDF into sections: running headers, footers and
// page numbers come out of the text (the printed number is kept as the page to cite); headings
// come from a deep outline, else from the typography; lines are joined into paragraphs, with
// hyphenated words joined where the joined word is a word of the book; table rows stay rows.
func bookSections(pages [][]pline, outline []outlineEntry) []section {
	printed, drop := runningLines(pages)
	vocab := vocabulary(pages)
	heads := findHeadings(pages, drop, outline)
	var (
		out   []section
		path  string
		paras []string
		cur   strings.Builder
	)
	endPara := func() {
		if s := strings.TrimSpace(cur.String()); s != "" {
			paras = append(paras, s)
		}
		cur.Reset()
	}
	for i, lines := range pages {
		page := printed[i]
		if page == 0 {
			page = i + 1
		}
		flush := func() {
			endPara()
			if len(paras) > 0 {
				out = append(out, section{path: path, page: page, text: strings.Join(paras, "\n\n")})
			}
			paras = paras[:0]
		}
		var prev *pline
		for j := 0; j < len(lines); j++ {
			if drop[i][j] {
				continue
			}
			l := &lines[j]
			if h, ok := heads[at{i, j}]; ok {
				flush()
				path = h.path
				j += h.lines - 1
				prev = nil
				continue
			}
			switch {
			case prev == nil:
			case prev.cells > 1 && l.cells > 1 && !l.breakBefore:
				cur.WriteByte('\n')
			case newParagraph(prev, l):
				endPara()
			default:
				joinLine(&cur, l.text, vocab)
				prev = l
				continue
			}
			cur.WriteString(l.text)
			prev = l
		}
		flush()
	}
	return out
}

// newParagraph reports whether line l starts a paragraph after line prev of the same page:
// a new column or band, a table starting or ending, a vertical gap wider than the leading, a
// first-line indent, a bullet, or a short line that ended a sentence.
func newParagraph(prev, l *pline) bool {
	em := max(prev.size, l.size)
	gap := prev.y - l.y
	switch {
	case l.breakBefore, prev.cells > 1 || l.cells > 1:
		return true
	case gap > 1.6*em || gap < 0:
		return true
	case listItem(l.text):
		return true
	case l.x0-l.colX0 > 0.8*l.size && prev.x0-prev.colX0 < 0.5*l.size && !listItem(prev.text):
		// A first-line indent; the indented lines after a list item are its hanging indent.
		return true
	case math.Abs(prev.size-l.size) > 1.5:
		return true
	}
	width := prev.colX1 - prev.colX0
	last, _ := utf8.DecodeLastRuneInString(prev.text)
	return prev.x1 < prev.colX1-0.15*width && strings.ContainsRune(".!?:\"", last)
}

// listItem reports whether a line starts a list item: a bullet, or a number or letter followed
// by "." or ")" and a space.
func listItem(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	if strings.ContainsRune("•▪◦●■□–*", r) {
		return true
	}
	i := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsDigit(r) && !unicode.IsLetter(r) })
	return i > 0 && i <= 3 && i+1 < len(s) && (s[i] == '.' || s[i] == ')') && s[i+1] == ' ' &&
		(unicode.IsDigit(r) || i == 1)
}

// joinLine appends the next line of a paragraph. A line that ends in a hyphen joins the next
// without a space; the hyphen goes when the joined word is a word of the book ("combat-" +
// "ant" → "combatant") and stays otherwise ("two-" + "weapon" → "two-weapon").
func joinLine(b *strings.Builder, next string, vocab map[string]bool) {
	s := b.String()
	if strings.HasSuffix(s, "-") && len(s) > 1 {
		before, _ := utf8.DecodeLastRuneInString(s[:len(s)-1])
		after, _ := utf8.DecodeRuneInString(next)
		if unicode.IsLetter(before) && unicode.IsLower(after) {
			head := trailingWord(s[:len(s)-1])
			tail := leadingWord(next)
			if vocab[strings.ToLower(head+tail)] {
				b.Reset()
				b.WriteString(s[:len(s)-1])
			}
			b.WriteString(next)
			return
		}
	}
	if strings.HasSuffix(s, "—") {
		b.WriteString(next)
		return
	}
	b.WriteByte(' ')
	b.WriteString(next)
}

func trailingWord(s string) string {
	i := len(s)
	for i > 0 {
		r, n := utf8.DecodeLastRuneInString(s[:i])
		if !unicode.IsLetter(r) {
			break
		}
		i -= n
	}
	return s[i:]
}

func leadingWord(s string) string {
	for i, r := range s {
		if !unicode.IsLetter(r) {
			return s[:i]
		}
	}
	return s
}

// vocabulary is the set of words the book's lines hold (lower case, letters only), except the
// last word of a line that ends in a hyphen.
func vocabulary(pages [][]pline) map[string]bool {
	v := map[string]bool{}
	for _, lines := range pages {
		for _, l := range lines {
			text := l.text
			if strings.HasSuffix(text, "-") {
				text = strings.TrimSuffix(text, trailingWord(strings.TrimSuffix(text, "-"))+"-")
			}
			for _, w := range strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) }) {
				v[strings.ToLower(w)] = true
			}
		}
	}
	return v
}

// runningLines finds the running headers and footers — lines in the top or bottom margin whose
// text, with its numbers masked, recurs on several pages — and lone numbers in the margins. It
// returns each page's printed number (0 when none is printed) and which lines to drop.
func runningLines(pages [][]pline) (printed []int, drop [][]bool) {
	printed = make([]int, len(pages))
	drop = make([][]bool, len(pages))
	counts := map[string]int{}
	for _, lines := range pages {
		seen := map[string]bool{}
		for _, l := range lines {
			if l.margin {
				seen[maskNumbers(l.text)] = true
			}
		}
		for k := range seen {
			counts[k]++
		}
	}
	need := max(2, min(5, (len(pages)*2+4)/5))
	for i, lines := range pages {
		drop[i] = make([]bool, len(lines))
		for j, l := range lines {
			if !l.margin {
				continue
			}
			n, lone := edgeNumber(l.text)
			if counts[maskNumbers(l.text)] < need && !lone {
				continue
			}
			drop[i][j] = true
			if printed[i] == 0 && n > 0 {
				printed[i] = n
			}
		}
	}
	return printed, drop
}

// maskNumbers is a line's text in lower case with each run of digits replaced by "#".
func maskNumbers(s string) string {
	var b strings.Builder
	digit := false
	for _, r := range strings.ToLower(s) {
		if unicode.IsDigit(r) {
			if !digit {
				b.WriteByte('#')
			}
			digit = true
			continue
		}
		digit = false
		b.WriteRune(r)
	}
	return b.String()
}

// edgeNumber returns the whole number at the start or end of a line (a printed page number) and
// whether the line is nothing but that number.
func edgeNumber(s string) (n int, lone bool) {
	fields := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return unicode.IsSpace(r) || r == '|' })
	if len(fields) > 0 && fields[0] == "page" {
		fields = fields[1:]
	}
	if len(fields) == 0 {
		return 0, false
	}
	for _, f := range []string{fields[len(fields)-1], fields[0]} {
		if v, err := strconv.Atoi(f); err == nil && v > 0 && v < 10000 {
			return v, len(fields) == 1
		}
	}
	return 0, false
}

// at is the position of a line: page index, line index.
type at struct{ i, j int }

// heading is a heading found at a line: how many lines it spans and the section path it opens.
type heading struct {
	lines int
	path  string
}

// findHeadings merges the two sources of structure. The outline, where the book has one, names
// the headings and their paths: each outline title is looked for as a line, in order, a few pages
// ahead of the previous one (an entry with no such line is skipped). The typography finds the
// headings the outline does not list — all of them when there is no outline — and places them
// by their level under the nearest heading of a higher level.
func findHeadings(pages [][]pline, drop [][]bool, outline []outlineEntry) map[at]heading {
	typo := typographyHeadings(pages, drop)
	titled := matchOutline(pages, drop, typo, outline)
	var order []at
	for a := range typo {
		order = append(order, a)
	}
	for a := range titled {
		if _, ok := typo[a]; !ok {
			order = append(order, a)
		}
	}
	slices.SortFunc(order, func(a, b at) int {
		if a.i != b.i {
			return a.i - b.i
		}
		return a.j - b.j
	})
	// An entry's level is its typographic level; an outline entry whose line is not set as a
	// heading (or that has no line) has a level derived from its place, and is "fixed": a
	// typography heading goes under it unless it is at least as prominent as a heading of known
	// level above it.
	type entry struct {
		title string
		level int
		fixed bool
	}
	var stack []entry
	levelOf := map[string]int{} // outline path → typographic level of its heading line
	out := map[at]heading{}
	for _, a := range order {
		t, isTypo := typo[a]
		o, isOutline := titled[a]
		lines := max(1, t.lines)
		if isOutline {
			level := t.level
			if isTypo {
				levelOf[o] = level
			} else {
				level = 1
				if n := len(stack); n > 0 {
					level = stack[n-1].level + 1
				}
			}
			parts := strings.Split(o, " > ")
			stack = make([]entry, len(parts))
			next := level + 1
			for k := len(parts) - 1; k >= 0; k-- {
				lv, known := levelOf[strings.Join(parts[:k+1], " > ")]
				if !known || lv >= next {
					lv, known = next-1, false
				}
				stack[k] = entry{parts[k], lv, !known}
				next = lv
			}
		} else {
			cut := len(stack)
			for k := len(stack) - 1; k >= 0; k-- {
				if stack[k].fixed {
					continue
				}
				if stack[k].level < t.level {
					break
				}
				cut = k
			}
			stack = append(stack[:cut], entry{t.title, t.level, false})
		}
		titles := make([]string, len(stack))
		for k, e := range stack {
			titles[k] = e.title
		}
		out[a] = heading{lines: lines, path: strings.Join(titles, " > ")}
	}
	return out
}

// outlineWindow is how many pages past the previous outline title the next one is looked for.
const outlineWindow = 4

// matchOutline finds the heading line of each outline title, in outline order. An entry is
// matched to the first heading with its title within a few pages of the previous match, unless
// the next entry's title comes before that heading (then the entry has no heading of its own
// here and the heading belongs to a later entry of the same name).
func matchOutline(pages [][]pline, drop [][]bool, typo map[at]typoHeading, outline []outlineEntry) map[at]string {
	found := map[at]string{}
	if len(outline) == 0 {
		return found
	}
	key := func(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), " ")) }
	keys := make([][]string, len(pages)) // each line's text; a heading's whole title at its first line
	for i, lines := range pages {
		keys[i] = make([]string, len(lines))
		for j := range lines {
			if !drop[i][j] && lines[j].cells == 1 {
				keys[i][j] = key(lines[j].text)
			}
		}
	}
	for a, t := range typo {
		keys[a.i][a.j] = key(t.title)
	}
	// find looks for the title among the headings the typography found, then among all lines.
	find := func(title string, cur at) (at, bool) {
		want := key(title)
		for _, headingsOnly := range []bool{true, false} {
			for i := cur.i; i < len(pages) && i <= cur.i+outlineWindow; i++ {
				j0 := 0
				if i == cur.i {
					j0 = cur.j
				}
				for j := j0; j < len(keys[i]); j++ {
					if _, isHeading := typo[at{i, j}]; (isHeading || !headingsOnly) && keys[i][j] == want && want != "" {
						return at{i, j}, true
					}
				}
			}
		}
		return at{}, false
	}
	before := func(a, b at) bool { return a.i < b.i || (a.i == b.i && a.j < b.j) }
	cur := at{0, 0}
	for k, e := range outline {
		p, ok := find(e.title, cur)
		if !ok {
			continue
		}
		if k+1 < len(outline) {
			if q, ok := find(outline[k+1].title, cur); ok && before(q, p) {
				continue
			}
		}
		found[p] = e.path
		cur = at{p.i, p.j + 1}
	}
	return found
}

// style is what tells a heading from running text: the font's size (to half a point), whether
// it is bold, and the font.
type style struct {
	size float64
	bold bool
	font string
}

func lineStyle(l *pline) style {
	return style{size: math.Round(l.size*2) / 2, bold: l.bold, font: l.font.name}
}

// typographyHeadings finds headings from the book's own typography. The body style is the one
// most of the text is set in; a heading is a short line set wholly in one style that is larger
// than the body, or bold where the body is not, and that does not end like a sentence. Heading
// levels rank those styles by size, bold before regular at one size. Consecutive lines of one
// heading style make one heading. Styles seen only on the first pages of a long book (a cover)
// are not headings.
func typographyHeadings(pages [][]pline, drop [][]bool) map[at]typoHeading {
	chars := map[style]int{}
	for i, lines := range pages {
		for j := range lines {
			if !drop[i][j] {
				chars[lineStyle(&lines[j])] += utf8.RuneCountInString(lines[j].text)
			}
		}
	}
	var body style
	for s, n := range chars {
		if n > chars[body] || (n == chars[body] && s.size < body.size) {
			body = s
		}
	}
	candidate := func(l *pline) bool {
		if !l.uniform || l.cells > 1 || body.size == 0 {
			return false
		}
		larger := l.size >= body.size*1.15
		bolder := l.bold && !body.bold && l.size >= body.size*0.9
		return (larger || bolder) && headingText(l.text)
	}
	firstPage := map[style]int{}
	lastPage := map[style]int{}
	var cands []at
	for i, lines := range pages {
		for j := range lines {
			if drop[i][j] || !candidate(&lines[j]) {
				continue
			}
			s := lineStyle(&lines[j])
			if _, ok := firstPage[s]; !ok {
				firstPage[s] = i
			}
			lastPage[s] = i
			cands = append(cands, at{i, j})
		}
	}
	cover := func(s style) bool { return len(pages) >= 10 && lastPage[s] <= 1 }
	type levelKey struct {
		size float64
		bold bool
	}
	var keys []levelKey
	for s := range firstPage {
		if k := (levelKey{s.size, s.bold}); !cover(s) && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b levelKey) int {
		switch {
		case a.size != b.size:
			if a.size > b.size {
				return -1
			}
			return 1
		case a.bold != b.bold:
			if a.bold {
				return -1
			}
			return 1
		}
		return 0
	})
	level := map[levelKey]int{}
	for i, k := range keys {
		level[k] = i + 1
	}
	heads := map[at]typoHeading{}
	var start, last at
	for n, c := range cands {
		l := &pages[c.i][c.j]
		s := lineStyle(l)
		if cover(s) {
			continue
		}
		if n > 0 && c.i == last.i && c.j == last.j+1 {
			p := &pages[last.i][last.j]
			if h, ok := heads[start]; ok && lineStyle(p) == s && p.y-l.y <= 1.5*l.size && p.colX0 == l.colX0 {
				h.lines++
				h.title += " " + l.text
				heads[start] = h
				last = c
				continue
			}
		}
		heads[c] = typoHeading{level: level[levelKey{s.size, s.bold}], lines: 1, title: l.text}
		start, last = c, c
	}
	return heads
}

// typoHeading is a heading found by its typography.
type typoHeading struct {
	level, lines int
	title        string
}

// headingText reports whether a line reads like a heading: a letter, at most 100 characters and
// 15 words, starting with a capital or a digit, not ending like a sentence or a clause.
func headingText(s string) bool {
	if utf8.RuneCountInString(s) > 100 || len(strings.Fields(s)) > 15 {
		return false
	}
	first, _ := utf8.DecodeRuneInString(s)
	last, _ := utf8.DecodeLastRuneInString(s)
	if unicode.IsLower(first) || strings.ContainsRune(".,;", last) {
		return false
	}
	return strings.IndexFunc(s, unicode.IsLetter) >= 0
}
