package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ledongthuc/pdf"
)

// Limits on the structures of one PDF, so that a damaged file (a page tree or outline that
// points back at itself) ends instead of looping.
const (
	maxPDFPages     = 100000
	maxTreeDepth    = 64
	maxOutlineItems = 100000
)

// readPDF reads a PDF's pages in parallel (glyphs with positions and fonts, laid out into lines
// in reading order), then cuts the book into sections: by its outline when the outline is deep,
// else by the headings its typography shows. Nothing the library does with a damaged file
// escapes as a panic: a damaged page reads as empty, a damaged file is ErrCorrupt.
func readPDF(ctx context.Context, data []byte, progress func(done, total int)) (secs []section, pages int, title string, err error) {
	defer func() {
		if x := recover(); x != nil {
			secs, err = nil, fmt.Errorf("%w: %v", ErrCorrupt, x)
		}
	}()
	r, err := openPDF(data)
	if err != nil {
		return nil, 0, "", err
	}
	title = pdfTitle(r)
	pageVals := pageList(r)
	pages = len(pageVals)
	if pages == 0 {
		return nil, 0, title, fmt.Errorf("%w: no pages", ErrCorrupt)
	}
	layouts := make([][]pline, pages)
	outline := make(chan []outlineEntry, 1) // read beside the pages
	go func() { outline <- readOutline(r) }()
	workers := min(runtime.GOMAXPROCS(0), max(1, pages/8))
	var (
		next, done atomic.Int64
		wg         sync.WaitGroup
		mu         sync.Mutex
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cache := fontCache{}
			var buf []glyph
			for {
				i := int(next.Add(1))
				if i > pages || ctx.Err() != nil {
					return
				}
				layouts[i-1], buf = readPage(pageVals[i-1], cache, buf)
				if progress != nil {
					mu.Lock()
					progress(int(done.Add(1)), pages)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	entries := <-outline
	if err := ctx.Err(); err != nil {
		return nil, pages, title, err
	}
	secs = bookSections(layouts, entries)
	if len(secs) == 0 {
		return nil, pages, title, ErrNoText
	}
	return secs, pages, title, nil
}

func openPDF(data []byte) (r *pdf.Reader, err error) {
	defer func() {
		if x := recover(); x != nil {
			r, err = nil, fmt.Errorf("%w: %v", ErrCorrupt, x)
		}
	}()
	if !bytes.HasPrefix(bytes.TrimLeft(data[:min(len(data), 1024)], "\x00\r\n\t "), []byte("%PDF")) {
		return nil, fmt.Errorf("%w: no PDF header", ErrCorrupt)
	}
	r, err = newReader(data)
	if err != nil && !errors.Is(err, pdf.ErrInvalidPassword) {
		if fixed := repairXref(data); fixed != nil {
			if r2, err2 := newReader(fixed); err2 == nil {
				r, err = r2, nil
			}
		}
	}
	switch {
	case errors.Is(err, pdf.ErrInvalidPassword) || (err != nil && strings.Contains(err.Error(), "encrypt")):
		return nil, ErrEncrypted
	case err != nil:
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return r, nil
}

func newReader(data []byte) (r *pdf.Reader, err error) {
	defer func() {
		if x := recover(); x != nil {
			r, err = nil, fmt.Errorf("%v", x)
		}
	}()
	return pdf.NewReader(bytes.NewReader(data), int64(len(data)))
}

var (
	objHeader = regexp.MustCompile(`(?:^|[\r\n\t ])(\d{1,7})[ \t\r\n]+(\d{1,5})[ \t\r\n]+obj\b`)
	rootRef   = regexp.MustCompile(`/Root[ \t\r\n]*(\d{1,7})[ \t\r\n]+(\d{1,5})[ \t\r\n]+R`)
	catalog   = regexp.MustCompile(`/Type[ \t\r\n]*/Catalog\b`)
)

// repairXref rebuilds the cross-reference table of a PDF whose table is damaged, as readers do:
// it finds every "N G obj" in the file, and appends a fresh table and trailer that point at them
// (the last definition of an object wins, as with incremental updates). Objects kept inside
// object streams are not found this way. nil when no catalog can be found.
func repairXref(data []byte) []byte {
	offsets := map[int]int{}
	gens := map[int]int{}
	maxID := 0
	for _, m := range objHeader.FindAllSubmatchIndex(data, -1) {
		id, _ := strconv.Atoi(string(data[m[2]:m[3]]))
		gen, _ := strconv.Atoi(string(data[m[4]:m[5]]))
		offsets[id], gens[id] = m[2], gen
		maxID = max(maxID, id)
	}
	if len(offsets) == 0 || maxID > 4*len(data) {
		return nil
	}
	root := ""
	if ms := rootRef.FindAllSubmatch(data, -1); len(ms) > 0 {
		m := ms[len(ms)-1]
		if id, _ := strconv.Atoi(string(m[1])); offsets[id] > 0 {
			root = string(m[1]) + " " + string(m[2])
		}
	}
	if root == "" { // the object that says it is the catalog
		for id, off := range offsets {
			end := min(len(data), off+300)
			if catalog.Match(data[off:end]) {
				root = fmt.Sprintf("%d %d", id, gens[id])
				break
			}
		}
	}
	if root == "" {
		return nil
	}
	var b bytes.Buffer
	b.Write(data)
	b.WriteString("\n")
	start := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n", maxID+1)
	for id := 0; id <= maxID; id++ {
		if off, ok := offsets[id]; ok {
			fmt.Fprintf(&b, "%010d %05d n\r\n", off, gens[id])
		} else {
			b.WriteString("0000000000 65535 f\r\n")
		}
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root %s R >>\nstartxref\n%d\n%%%%EOF\n", maxID+1, root, start)
	return b.Bytes()
}

func pdfTitle(r *pdf.Reader) (title string) {
	defer func() { _ = recover() }()
	return strings.TrimSpace(strings.Join(strings.Fields(normText(r.Trailer().Key("Info").Key("Title").Text())), " "))
}

// pageList returns the page objects in order, walking the page tree once (depth- and
// size-bounded); a node the library cannot read is left out with its pages.
func pageList(r *pdf.Reader) []pdf.Value {
	var (
		out    []pdf.Value
		visits int
		seen   = map[uint64]bool{}
	)
	var walk func(v pdf.Value, depth int)
	walk = func(v pdf.Value, depth int) {
		defer func() { _ = recover() }() // a damaged node loses its pages, not the book
		visits++
		if depth > maxTreeDepth || len(out) >= maxPDFPages || visits > 4*maxPDFPages {
			return
		}
		if id := objectID(v); id != 0 {
			if seen[id] {
				return // a node the tree already holds: a loop, or a page listed twice
			}
			seen[id] = true
		}
		kids := v.Key("Kids")
		if v.Key("Type").Name() == "Pages" || (v.Key("Type").Name() != "Page" && kids.Kind() == pdf.Array) {
			for i, n := 0, kids.Len(); i < n; i++ {
				walk(kids.Index(i), depth+1)
			}
			return
		}
		if v.Kind() == pdf.Dict {
			out = append(out, v)
		}
	}
	walk(r.Trailer().Key("Root").Key("Pages"), 0)
	return out
}

// objectID identifies the indirect object a value was read from (0 for none). The library keeps
// it unexported; reading it is what lets a walk over a damaged file's page tree or outline notice
// that it has come back to a node it has seen.
func objectID(v pdf.Value) uint64 {
	f := reflect.ValueOf(v).FieldByName("ptr")
	if !f.IsValid() || f.Kind() != reflect.Struct || f.NumField() < 2 {
		return 0
	}
	return f.Field(0).Uint()<<16 | f.Field(1).Uint()
}

// refID returns the object a dictionary entry refers to, without reading that object (0 when
// the entry is not a reference, or the library's representation is not the one expected).
func refID(dict pdf.Value, key string) uint64 {
	d := reflect.ValueOf(dict).FieldByName("data")
	if d.IsValid() && d.Kind() == reflect.Interface {
		d = d.Elem()
	}
	if !d.IsValid() || d.Kind() != reflect.Map || d.Type().Key().Kind() != reflect.String {
		return 0
	}
	k := reflect.New(d.Type().Key()).Elem()
	k.SetString(key)
	v := d.MapIndex(k)
	if v.IsValid() && v.Kind() == reflect.Interface {
		v = v.Elem()
	}
	if !v.IsValid() || v.Kind() != reflect.Struct || v.Type().Name() != "objptr" || v.NumField() < 2 {
		return 0
	}
	return v.Field(0).Uint()<<16 | v.Field(1).Uint()
}

// inherited returns a page attribute, looking up the page tree (bounded).
func inherited(v pdf.Value, key string) pdf.Value {
	for i := 0; i < maxTreeDepth && !v.IsNull(); i++ {
		if x := v.Key(key); !x.IsNull() {
			return x
		}
		v = v.Key("Parent")
	}
	return pdf.Value{}
}

// readPage lays out one page; a page the library cannot read comes back empty rather than
// failing the book. buf is reused for the page's glyphs and returned for the next page.
func readPage(v pdf.Value, cache fontCache, buf []glyph) (lines []pline, _ []glyph) {
	defer func() {
		if recover() != nil {
			lines = nil
		}
	}()
	height := 0.0
	if mb := inherited(v, "MediaBox"); mb.Len() == 4 {
		height = mb.Index(3).Float64() - mb.Index(1).Float64()
	}
	buf = pageGlyphs(v, cache, buf)
	return layoutPage(buf, height), buf
}

// outlineEntry is one outline item: its title and its path of titles.
type outlineEntry struct {
	title string
	path  string
}

// readOutline returns the outline's entries in order, depth-first (bounded; an outline whose
// links loop ends where it loops).
func readOutline(r *pdf.Reader) (out []outlineEntry) {
	defer func() {
		if recover() != nil {
			out = nil
		}
	}()
	seen := map[uint64]bool{}
	var walk func(v pdf.Value, prefix string, depth int)
	walk = func(v pdf.Value, prefix string, depth int) {
		if depth > maxTreeDepth {
			return
		}
		for c, i := v.Key("First"), 0; c.Kind() == pdf.Dict && len(out) < maxOutlineItems && i < maxOutlineItems; c, i = c.Key("Next"), i+1 {
			if id := objectID(c); id != 0 {
				if seen[id] {
					return // the outline loops
				}
				seen[id] = true
			}
			t := strings.Join(strings.Fields(normText(c.Key("Title").Text())), " ")
			if t == "" {
				continue
			}
			path := t
			if prefix != "" {
				path = prefix + " > " + t
			}
			out = append(out, outlineEntry{title: t, path: path})
			walk(c, path, depth+1)
		}
	}
	walk(r.Trailer().Key("Root").Key("Outlines"), "", 0)
	return out
}

// normText normalises text that does not come from glyphs (metadata, outline titles) the way
// glyph text is normalised.
func normText(s string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteString(normGlyph(string(r)))
	}
	return b.String()
}
