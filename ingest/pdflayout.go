package ingest

import (
	"cmp"
	"math"
	"slices"
	"strings"
)

// Layout thresholds, in ems of the font size concerned.
const (
	wordGap    = 0.12 // a horizontal gap wider than this between two glyphs separates words
	cellGap    = 1.0  // a gap wider than this between two words on a line separates table cells or columns
	sameLine   = 0.4  // baselines closer than this are one line
	marginBand = 0.07 // share of the page height at the top and bottom where running headers and footers sit
)

// pword is a run of glyphs with no space between them.
type pword struct {
	x0, x1, y, size float64
	text            string
	font            *fontInfo
	uniform         bool // every glyph in the first glyph's font and size
	bold            bool // every glyph in a bold font
}

// pfrag is a run of words on one baseline with no wide gap: a line of a column, a table cell.
type pfrag struct {
	x0, x1, y, size float64
	words           []pword
}

// pline is one line of a page in reading order. A table row is one line whose cells are joined
// with " | ".
type pline struct {
	text         string
	x0, x1, y    float64
	size         float64   // largest font size on the line
	font         *fontInfo // font of the first glyph
	uniform      bool      // every glyph in one font and size
	bold         bool      // every glyph bold
	cells        int       // number of table cells (1 for running text)
	colX0, colX1 float64   // edges of the column the line sits in
	breakBefore  bool      // a column or band starts with this line
	margin       bool      // in the top or bottom margin band (a running header or footer candidate)
}

// layoutPage turns a page's glyphs into lines in reading order: words from glyph positions,
// two columns read one after the other (full-width lines between them in place), the cells of
// a table row on one line.
func layoutPage(glyphs []glyph, height float64) []pline {
	words := groupWords(glyphs)
	if len(words) == 0 {
		return nil
	}
	frags := groupFrags(words)
	var top, bottom float64 = math.Inf(-1), math.Inf(1)
	for _, w := range words {
		top, bottom = max(top, w.y+w.size), min(bottom, w.y)
	}
	if height <= 0 {
		height = top
	}
	gutter := findGutter(frags)
	// Bands: runs of column fragments between fragments that cross the gutter.
	var order [][]pfrag // each a column (or a full-width run) read top to bottom
	var left, right, full []pfrag
	flush := func() {
		for _, c := range [][]pfrag{full, left, right} {
			if len(c) > 0 {
				order = append(order, c)
			}
		}
		left, right, full = nil, nil, nil
	}
	for _, f := range frags {
		switch {
		case gutter == 0:
			full = append(full, f)
		case f.x1 <= gutter:
			if len(full) > 0 {
				flush()
			}
			left = append(left, f)
		case f.x0 >= gutter:
			if len(full) > 0 {
				flush()
			}
			right = append(right, f)
		default:
			if len(left)+len(right) > 0 {
				flush()
			}
			full = append(full, f)
		}
	}
	flush()
	var out []pline
	for _, col := range order {
		cx0, cx1 := math.Inf(1), math.Inf(-1)
		for _, f := range col {
			cx0, cx1 = min(cx0, f.x0), max(cx1, f.x1)
		}
		first := true
		for i := 0; i < len(col); {
			j := i + 1
			for j < len(col) && math.Abs(col[j].y-col[i].y) < sameLine*max(col[i].size, col[j].size) {
				j++
			}
			l := makeLine(col[i:j])
			l.colX0, l.colX1 = cx0, cx1
			l.breakBefore = first
			l.margin = l.y > height*(1-marginBand) || l.y < height*marginBand
			first = false
			out = append(out, l)
			i = j
		}
	}
	return out
}

func groupWords(glyphs []glyph) []pword {
	out := make([]pword, 0, len(glyphs)/4)
	var (
		cur  pword
		open bool
		text []byte
	)
	end := func() {
		if open {
			cur.text = string(text)
			out = append(out, cur)
			open = false
			text = text[:0]
		}
	}
	for _, g := range glyphs {
		if g.text == "" {
			continue
		}
		if g.text == " " || !(g.size > 0 && g.size < 1e4) || math.Abs(g.x) > 1e6 || math.Abs(g.y) > 1e6 || !(g.w < 1e4) {
			end()
			continue
		}
		if open {
			em := max(g.size, cur.size)
			if math.Abs(g.y-cur.y) > 0.3*em || g.x < cur.x1-0.3*em || g.x-cur.x1 > wordGap*em {
				end()
			}
		}
		if !open {
			cur = pword{x0: g.x, x1: g.x, y: g.y, size: g.size, font: g.font, uniform: true, bold: g.font.bold}
			open = true
		}
		if g.font != cur.font || math.Abs(g.size-cur.size) > 0.5 {
			cur.uniform = false
		}
		cur.bold = cur.bold && g.font.bold
		cur.size = max(cur.size, g.size)
		cur.x1 = max(cur.x1, g.x+g.w)
		text = append(text, g.text...)
	}
	end()
	return out
}

// groupFrags sorts the words into lines top to bottom and cuts each line at wide gaps.
func groupFrags(words []pword) []pfrag {
	slices.SortStableFunc(words, func(a, b pword) int { return cmp.Compare(b.y, a.y) }) // top first
	var out []pfrag
	for i := 0; i < len(words); {
		j := i + 1
		for j < len(words) && words[i].y-words[j].y < sameLine*max(words[i].size, words[j].size) {
			j++
		}
		line := words[i:j]
		slices.SortStableFunc(line, func(a, b pword) int { return cmp.Compare(a.x0, b.x0) })
		var f *pfrag
		for _, w := range line {
			if f != nil && w.x0-f.x1 > cellGap*max(w.size, f.size) {
				out = append(out, *f)
				f = nil
			}
			if f == nil {
				f = &pfrag{x0: w.x0, x1: w.x1, y: w.y, size: w.size}
			}
			f.words = append(f.words, w)
			f.x1 = max(f.x1, w.x1)
			f.size = max(f.size, w.size)
			f.y = max(f.y, w.y)
		}
		out = append(out, *f)
		i = j
	}
	return out
}

// findGutter returns the x of the gap between two columns, or 0 for a one-column page: the
// vertical strip in the middle half of the text that the fewest fragments cross, when at
// least four lines sit on each side of it and few lines cross it.
func findGutter(frags []pfrag) float64 {
	if len(frags) < 8 {
		return 0
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, f := range frags {
		lo, hi = min(lo, f.x0), max(hi, f.x1)
	}
	width := hi - lo
	if width <= 0 {
		return 0
	}
	type cand struct {
		x     float64
		cross int
	}
	var cands []cand
	minCross := len(frags)
	step := max(1, width*0.4/240) // at most 240 strips, wherever a damaged file places text
	for k := 0; k <= 240 && float64(k)*step <= width*0.4; k++ {
		x := lo + width*0.3 + float64(k)*step
		cross, left, right := 0, 0, 0
		for _, f := range frags {
			switch {
			case f.x1 <= x:
				left++
			case f.x0 >= x:
				right++
			default:
				cross++
			}
		}
		if left >= 4 && right >= 4 {
			cands = append(cands, cand{x, cross})
			minCross = min(minCross, cross)
		}
	}
	if len(cands) == 0 || minCross*4 > len(frags) {
		return 0
	}
	// The middle of the longest run of strips crossed by the fewest fragments.
	best, bestRun := 0.0, 0
	for i := 0; i < len(cands); {
		if cands[i].cross != minCross {
			i++
			continue
		}
		j := i + 1
		for j < len(cands) && cands[j].cross == minCross && cands[j].x-cands[j-1].x < 1.5*step {
			j++
		}
		if j-i > bestRun {
			best, bestRun = (cands[i].x+cands[j-1].x)/2, j-i
		}
		i = j
	}
	return best
}

func makeLine(frags []pfrag) pline {
	slices.SortStableFunc(frags, func(a, b pfrag) int { return cmp.Compare(a.x0, b.x0) })
	l := pline{x0: frags[0].x0, x1: frags[0].x1, y: frags[0].y, font: frags[0].words[0].font, uniform: true, bold: true, cells: len(frags)}
	var b strings.Builder
	for i, f := range frags {
		if i > 0 {
			b.WriteString(" | ")
		}
		for j, w := range f.words {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(w.text)
			if !w.uniform || w.font != l.font || math.Abs(w.size-frags[0].words[0].size) > 0.5 {
				l.uniform = false
			}
			l.bold = l.bold && w.bold
		}
		l.x1 = max(l.x1, f.x1)
		l.size = max(l.size, f.size)
	}
	l.text = b.String()
	return l
}
