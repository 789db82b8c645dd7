package ingest

import (
	"math"
	"strings"

	"github.com/ledongthuc/pdf"
)

// glyph is one character drawn on a page, in PDF user space (points, y growing upwards).
type glyph struct {
	x, y float64 // origin on the baseline
	w    float64 // advance width
	size float64 // font size as drawn
	font *fontInfo
	text string // decoded text of the glyph (usually one character; "" for an unmapped glyph)
}

// fontInfo is what the text interpreter needs from a font: how to cut a string into codes, what
// each code reads as and how wide it is. The library parses the font objects and their ToUnicode
// maps; this caches the results, because the library re-reads an object at every access.
type fontInfo struct {
	name    string // base font name without the subset prefix
	bold    bool
	twoByte bool // a Type0 (composite) font: two-byte codes
	enc     pdf.TextEncoding
	first   int
	widths  []float64       // simple fonts: widths of codes first.., in 1/1000 em
	cidW    map[int]float64 // composite fonts: widths by code
	dw      float64         // default width
	decoded map[int]string  // two-byte codes decoded so far
	bytes   [256]string     // one-byte codes decoded so far
	known   [256]bool
}

// text returns what code reads as, decoded once per font.
func (f *fontInfo) text(code int, raw string) string {
	if !f.twoByte && code < 256 {
		if !f.known[code] {
			f.bytes[code], f.known[code] = normGlyph(f.enc.Decode(raw)), true
		}
		return f.bytes[code]
	}
	if s, ok := f.decoded[code]; ok {
		return s
	}
	s := normGlyph(f.enc.Decode(raw))
	f.decoded[code] = s
	return s
}

// fontCache keeps the fonts read so far, by the font object and its resource name, so that a
// font shared by the pages is parsed once. Not safe for concurrent use: one per worker.
type fontCache map[fontKey]*fontInfo

type fontKey struct {
	id   uint64
	name string
}

func (f *fontInfo) width(code int) float64 {
	if f.twoByte {
		if w, ok := f.cidW[code]; ok {
			return w
		}
		return f.dw
	}
	if i := code - f.first; i >= 0 && i < len(f.widths) && f.widths[i] > 0 {
		return f.widths[i]
	}
	return f.dw
}

func newFontInfo(v pdf.Value) *fontInfo {
	base := v.Key("BaseFont").Name()
	if i := strings.IndexByte(base, '+'); i >= 0 {
		base = base[i+1:]
	}
	f := &fontInfo{name: base, decoded: map[int]string{}, dw: 500}
	lower := strings.ToLower(base)
	f.bold = strings.Contains(lower, "bold") || strings.Contains(lower, "black") || strings.Contains(lower, "heavy") ||
		strings.Contains(lower, "semibold") || strings.Contains(lower, "demi")
	if v.Key("FontDescriptor").Key("FontWeight").Float64() >= 600 {
		f.bold = true
	}
	font := pdf.Font{V: v}
	f.enc = font.Encoder()
	if f.enc == nil {
		f.enc = rawEncoding{}
	}
	if v.Key("Subtype").Name() == "Type0" {
		f.twoByte = true
		f.cidW = map[int]float64{}
		d := v.Key("DescendantFonts").Index(0)
		f.dw = 1000
		if dw := d.Key("DW"); dw.Kind() == pdf.Integer || dw.Kind() == pdf.Real {
			f.dw = dw.Float64()
		}
		// W lists widths by code: "c [w1 w2 …]" or "first last w". Two-byte codes: at most
		// 65,536 entries, however a damaged file states them.
		w := d.Key("W")
		for i, n := 0, w.Len(); i < n && len(f.cidW) < 1<<16; {
			c := int(w.Index(i).Int64())
			next := w.Index(i + 1)
			if next.Kind() == pdf.Array {
				for j, m := 0, next.Len(); j < m && j < 1<<16; j++ {
					f.cidW[c+j] = next.Index(j).Float64()
				}
				i += 2
				continue
			}
			last := min(int(next.Int64()), c+1<<16)
			wd := w.Index(i + 2).Float64()
			for c2 := c; c2 <= last && len(f.cidW) < 1<<16; c2++ {
				f.cidW[c2] = wd
			}
			i += 3
		}
		return f
	}
	f.first = int(v.Key("FirstChar").Int64())
	ws := v.Key("Widths")
	if n := ws.Len(); n > 0 {
		f.widths = make([]float64, min(n, 256))
		for i := range f.widths {
			f.widths[i] = ws.Index(i).Float64()
		}
		if mw := v.Key("FontDescriptor").Key("MissingWidth").Float64(); mw > 0 {
			f.dw = mw
		}
		return f
	}
	// A standard 14 font without widths: the core metrics for ASCII, an average for the rest.
	if std := standardWidths(base); std != nil {
		f.first, f.widths = 32, std
	}
	return f
}

type rawEncoding struct{}

func (rawEncoding) Decode(raw string) string { return raw }

// standardWidths returns the widths of codes 32–126 of a standard 14 font (Adobe's core
// metrics), which a PDF may use without embedding widths.
func standardWidths(base string) []float64 {
	b := strings.ToLower(base)
	var t []int
	switch {
	case strings.HasPrefix(b, "courier"):
		t = make([]int, 95)
		for i := range t {
			t[i] = 600
		}
	case strings.HasPrefix(b, "helvetica") || strings.HasPrefix(b, "arial"):
		t = helveticaW
		if strings.Contains(b, "bold") {
			t = helveticaBoldW
		}
	case strings.HasPrefix(b, "times"):
		t = timesW
		if strings.Contains(b, "bold") {
			t = timesBoldW
		}
	default:
		return nil
	}
	out := make([]float64, len(t))
	for i, w := range t {
		out[i] = float64(w)
	}
	return out
}

// Widths of codes 32–126 from Adobe's Core14 AFM files.
var (
	helveticaW     = []int{278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278, 556, 556, 556, 556, 556, 556, 556, 556, 556, 556, 278, 278, 584, 584, 584, 556, 1015, 667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, 722, 778, 667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469, 556, 333, 556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, 556, 556, 556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584}
	helveticaBoldW = []int{278, 333, 474, 556, 556, 889, 722, 238, 333, 333, 389, 584, 278, 333, 278, 278, 556, 556, 556, 556, 556, 556, 556, 556, 556, 556, 333, 333, 584, 584, 584, 611, 975, 722, 722, 722, 722, 667, 611, 778, 722, 278, 556, 722, 611, 833, 722, 778, 667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 333, 278, 333, 584, 556, 333, 556, 611, 556, 611, 556, 333, 611, 611, 278, 278, 556, 278, 889, 611, 611, 611, 611, 389, 556, 333, 611, 556, 778, 556, 556, 500, 389, 280, 389, 584}
	timesW         = []int{250, 333, 408, 500, 500, 833, 778, 180, 333, 333, 500, 564, 250, 333, 250, 278, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500, 278, 278, 564, 564, 564, 444, 921, 722, 667, 667, 722, 611, 556, 722, 722, 333, 389, 722, 611, 889, 722, 722, 556, 722, 667, 556, 611, 722, 722, 944, 722, 722, 611, 333, 278, 333, 469, 500, 333, 444, 500, 444, 500, 444, 333, 500, 500, 278, 278, 500, 278, 778, 500, 500, 500, 500, 333, 389, 278, 500, 500, 722, 500, 500, 444, 480, 200, 480, 541}
	timesBoldW     = []int{250, 333, 555, 500, 500, 1000, 833, 278, 333, 333, 500, 570, 250, 333, 250, 278, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500, 333, 333, 570, 570, 570, 500, 930, 722, 667, 722, 722, 667, 611, 778, 778, 389, 500, 778, 667, 944, 722, 778, 611, 778, 722, 556, 667, 722, 722, 1000, 722, 722, 667, 333, 278, 333, 581, 500, 333, 500, 556, 444, 556, 444, 333, 500, 556, 278, 333, 556, 278, 833, 556, 500, 556, 556, 444, 389, 333, 556, 500, 722, 500, 500, 444, 394, 220, 394, 520}
)

// affine is a PDF transformation matrix [a b c d e f].
type affine [6]float64

var identity = affine{1, 0, 0, 1, 0, 0}

// mul returns m × n (m applied first).
func (m affine) mul(n affine) affine {
	return affine{
		m[0]*n[0] + m[1]*n[2], m[0]*n[1] + m[1]*n[3],
		m[2]*n[0] + m[3]*n[2], m[2]*n[1] + m[3]*n[3],
		m[4]*n[0] + m[5]*n[2] + n[4], m[4]*n[1] + m[5]*n[3] + n[5],
	}
}

// textState is the PDF text state the glyph positions depend on (PDF 32000-1, 9.3).
type textState struct {
	ctm            affine
	tc, tw, th, tl float64
	tfs, rise      float64
	font           *fontInfo
	tm, tlm        affine
}

// maxFormDepth bounds nested form XObjects (a damaged file may nest them in a loop).
const maxFormDepth = 8

// pageGlyphs runs a page's content stream and returns the glyphs it draws, with their positions,
// sizes and fonts. The library lexes the stream and decodes the fonts; this tracks the text state.
// When the stream is damaged part way, the glyphs drawn before the damage are kept.
func pageGlyphs(page pdf.Value, cache fontCache, buf []glyph) (out []glyph) {
	out = buf[:0]
	defer func() { _ = recover() }()
	contents := page.Key("Contents")
	if contents.Kind() == pdf.Null {
		return nil
	}
	runContent(contents, inherited(page, "Resources"), identity, cache, &out, 0)
	return out
}

func runContent(strm, res pdf.Value, ctm affine, cache fontCache, out *[]glyph, depth int) {
	g := textState{ctm: ctm, th: 1, tm: identity, tlm: identity}
	var stack []textState
	fonts := map[string]*fontInfo{} // by resource name, for this stream
	fontDict := res.Key("Font")
	fontOf := func(name string) *fontInfo {
		if f, ok := fonts[name]; ok {
			return f
		}
		// A font object the pages share is parsed once: found by its reference, before
		// reading it (the library reads an object again at every access).
		if id := refID(fontDict, name); id != 0 {
			if f, ok := cache[fontKey{id, name}]; ok {
				fonts[name] = f
				return f
			}
		}
		v := fontDict.Key(name)
		key := fontKey{objectID(v), name}
		f, ok := cache[key]
		if !ok || key.id == 0 {
			f = newFontInfo(v)
			cache[key] = f
		}
		fonts[name] = f
		return f
	}
	// show places the glyphs of a string: the glyph origin is (advance, rise) in text space,
	// mapped by the text matrix and the CTM; the advance is the glyph width, the character
	// spacing and, for the one-byte code 32, the word spacing, scaled horizontally.
	show := func(s string) {
		f := g.font
		if f == nil {
			return
		}
		step := 1
		if f.twoByte {
			step = 2
		}
		m := g.tm.mul(g.ctm)
		size := g.tfs * math.Hypot(m[2], m[3])
		wscale := g.tfs * g.th * math.Hypot(m[0], m[1])
		x0, y0 := m[4]+g.rise*m[2], m[5]+g.rise*m[3]
		adv := 0.0
		for i := 0; i+step <= len(s); i += step {
			code := int(s[i])
			if step == 2 {
				code = code<<8 | int(s[i+1])
			}
			w0 := f.width(code) / 1000
			*out = append(*out, glyph{x: x0 + adv*m[0], y: y0 + adv*m[1], w: w0 * wscale, size: size, font: f, text: f.text(code, s[i:i+step])})
			tx := w0*g.tfs + g.tc
			if step == 1 && code == ' ' {
				tx += g.tw
			}
			adv += tx * g.th
		}
		g.tm = affine{1, 0, 0, 1, adv, 0}.mul(g.tm)
	}
	nextLine := func() {
		g.tlm = affine{1, 0, 0, 1, 0, -g.tl}.mul(g.tlm)
		g.tm = g.tlm
	}
	num := func(args []pdf.Value, i int) float64 {
		if i < len(args) {
			return args[i].Float64()
		}
		return 0
	}
	mat := func(args []pdf.Value) affine {
		var m affine
		for i := range m {
			m[i] = num(args, len(args)-6+i)
		}
		return m
	}
	var args []pdf.Value
	pdf.Interpret(strm, func(stk *pdf.Stack, op string) {
		args = args[:0]
		for n := stk.Len(); n > 0; n-- {
			args = append(args, pdf.Value{})
		}
		for i := len(args) - 1; i >= 0; i-- {
			args[i] = stk.Pop()
		}
		switch op {
		case "q":
			if len(stack) < 64 {
				stack = append(stack, g)
			}
		case "Q":
			if n := len(stack); n > 0 {
				g = stack[n-1]
				stack = stack[:n-1]
			}
		case "cm":
			if len(args) >= 6 {
				g.ctm = mat(args).mul(g.ctm)
			}
		case "BT":
			g.tm, g.tlm = identity, identity
		case "Tc":
			g.tc = num(args, 0)
		case "Tw":
			g.tw = num(args, 0)
		case "Tz":
			g.th = num(args, 0) / 100
		case "TL":
			g.tl = num(args, 0)
		case "Ts":
			g.rise = num(args, 0)
		case "Tf":
			if len(args) >= 2 {
				g.font = fontOf(args[0].Name())
				g.tfs = args[1].Float64()
			}
		case "Td", "TD":
			if len(args) >= 2 {
				if op == "TD" {
					g.tl = -args[1].Float64()
				}
				g.tlm = affine{1, 0, 0, 1, args[0].Float64(), args[1].Float64()}.mul(g.tlm)
				g.tm = g.tlm
			}
		case "Tm":
			if len(args) >= 6 {
				g.tm = mat(args)
				g.tlm = g.tm
			}
		case "T*":
			nextLine()
		case "Tj":
			if len(args) >= 1 {
				show(args[0].RawString())
			}
		case "'":
			if len(args) >= 1 {
				nextLine()
				show(args[0].RawString())
			}
		case "\"":
			if len(args) >= 3 {
				g.tw, g.tc = args[0].Float64(), args[1].Float64()
				nextLine()
				show(args[2].RawString())
			}
		case "TJ":
			if len(args) >= 1 {
				a := args[0]
				for i, n := 0, a.Len(); i < n; i++ {
					x := a.Index(i)
					if x.Kind() == pdf.String {
						show(x.RawString())
						continue
					}
					g.tm = affine{1, 0, 0, 1, -x.Float64() / 1000 * g.tfs * g.th, 0}.mul(g.tm)
				}
			}
		case "Do":
			if len(args) >= 1 && depth < maxFormDepth {
				xo := res.Key("XObject").Key(args[0].Name())
				if xo.Kind() == pdf.Stream && xo.Key("Subtype").Name() == "Form" {
					m := identity
					if fm := xo.Key("Matrix"); fm.Len() == 6 {
						for i := range m {
							m[i] = fm.Index(i).Float64()
						}
					}
					formRes := xo.Key("Resources")
					if formRes.Kind() != pdf.Dict {
						formRes = res
					}
					runContent(xo, formRes, m.mul(g.ctm), cache, out, depth+1)
				}
			}
		}
	})
}
