package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
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
			for {
				i := int(next.Add(1))
				if i > pages || ctx.Err() != nil {
					return
				}
				layouts[i-1] = readPage(pageVals[i-1])
				if progress != nil {
					mu.Lock()
					progress(int(done.Add(1)), pages)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, pages, title, err
	}
	secs = bookSections(layouts, readOutline(r))
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
	r, err = pdf.NewReader(bytes.NewReader(data), int64(len(data)))
	switch {
	case errors.Is(err, pdf.ErrInvalidPassword) || (err != nil && strings.Contains(err.Error(), "encrypt")):
		return nil, ErrEncrypted
	case err != nil:
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return r, nil
}

func pdfTitle(r *pdf.Reader) (title string) {
	defer func() { _ = recover() }()
	return strings.TrimSpace(strings.Join(strings.Fields(normText(r.Trailer().Key("Info").Key("Title").Text())), " "))
}

// pageList returns the page objects in order, walking the page tree once (depth- and
// size-bounded).
func pageList(r *pdf.Reader) []pdf.Value {
	var (
		out    []pdf.Value
		visits int
	)
	var walk func(v pdf.Value, depth int)
	walk = func(v pdf.Value, depth int) {
		visits++
		if depth > maxTreeDepth || len(out) >= maxPDFPages || visits > 4*maxPDFPages {
			return
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
// failing the book.
func readPage(v pdf.Value) (lines []pline) {
	defer func() {
		if recover() != nil {
			lines = nil
		}
	}()
	height := 0.0
	if mb := inherited(v, "MediaBox"); mb.Len() == 4 {
		height = mb.Index(3).Float64() - mb.Index(1).Float64()
	}
	return layoutPage(pageGlyphs(v), height)
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
	var walk func(v pdf.Value, prefix string, depth int)
	walk = func(v pdf.Value, prefix string, depth int) {
		if depth > maxTreeDepth {
			return
		}
		for c, i := v.Key("First"), 0; c.Kind() == pdf.Dict && len(out) < maxOutlineItems && i < maxOutlineItems; c, i = c.Key("Next"), i+1 {
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
