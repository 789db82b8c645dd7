package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ledongthuc/pdf"
)

var (
	spaceRun     = regexp.MustCompile(`[ \t\r\f\v\x{00a0}\x{fffd}\x{00ad}\x{200b}]+`)
	footerNumber = regexp.MustCompile(`^(?:.{0,60}?\s)?(?:page\s+)?(\d{1,4})$`)
	headerNumber = regexp.MustCompile(`^(?:page\s+)?(\d{1,4})(?:\s.{0,60})?$`)
)

// readPDF extracts the text of every page (in parallel, one reader per worker), finds each
// page's printed number and cuts the text into sections from the outline when there is one.
func readPDF(ctx context.Context, data []byte, progress func(done, total int)) (secs []section, pages int, title string, err error) {
	r, err := openPDF(data)
	if err != nil {
		return nil, 0, "", err
	}
	pages = r.NumPage()
	title = pdfTitle(r)
	texts := make([]string, pages)
	workers := min(runtime.GOMAXPROCS(0), max(1, pages/8))
	var (
		next, done atomic.Int64
		wg         sync.WaitGroup
		mu         sync.Mutex
		firstErr   error
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wr := r
			if w > 0 {
				var err error
				if wr, err = openPDF(data); err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
			}
			for {
				i := int(next.Add(1))
				if i > pages || ctx.Err() != nil {
					return
				}
				texts[i-1] = pageText(wr, i)
				if progress != nil {
					mu.Lock()
					progress(int(done.Add(1)), pages)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, pages, title, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, pages, title, err
	}
	secs = pdfSections(texts, outlinePaths(r.Outline(), ""))
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
	if r.NumPage() == 0 {
		return nil, fmt.Errorf("%w: no pages", ErrCorrupt)
	}
	return r, nil
}

func pdfTitle(r *pdf.Reader) (title string) {
	defer func() { _ = recover() }()
	return strings.TrimSpace(r.Trailer().Key("Info").Key("Title").Text())
}

// pageText returns one page's text with whitespace normalised line by line; a page the library
// cannot read comes back empty rather than failing the book.
func pageText(r *pdf.Reader, n int) (text string) {
	defer func() {
		if recover() != nil {
			text = ""
		}
	}()
	p := r.Page(n)
	if p.V.IsNull() {
		return ""
	}
	raw, err := p.GetPlainText(nil)
	if err != nil {
		return ""
	}
	lines := strings.Split(raw, "\n")
	out := lines[:0]
	for _, l := range lines {
		if l = strings.TrimSpace(spaceRun.ReplaceAllString(l, " ")); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// printedPage finds the page number printed in a page's footer (last lines) or header (first
// line); 0 when none.
func printedPage(text string) (int, string) {
	lines := strings.Split(text, "\n")
	try := func(i int, re *regexp.Regexp) (int, bool) {
		if i < 0 || i >= len(lines) {
			return 0, false
		}
		m := re.FindStringSubmatch(strings.TrimSpace(lines[i]))
		if m == nil {
			return 0, false
		}
		n, err := strconv.Atoi(m[1])
		return n, err == nil && n > 0
	}
	for _, i := range []int{len(lines) - 1, len(lines) - 2} {
		if n, ok := try(i, footerNumber); ok {
			return n, strings.Join(append(lines[:i:i], lines[i+1:]...), "\n")
		}
	}
	if n, ok := try(0, headerNumber); ok && len(lines) > 1 {
		return n, strings.Join(lines[1:], "\n")
	}
	return 0, text
}

type outlineEntry struct {
	title string
	path  string
}

func outlinePaths(o pdf.Outline, prefix string) []outlineEntry {
	var out []outlineEntry
	for _, c := range o.Child {
		t := strings.TrimSpace(spaceRun.ReplaceAllString(c.Title, " "))
		if t == "" {
			continue
		}
		path := t
		if prefix != "" {
			path = prefix + " > " + t
		}
		out = append(out, outlineEntry{title: t, path: path})
		out = append(out, outlinePaths(c, path)...)
	}
	return out
}

// pdfSections cuts the pages into sections. With an outline, a section starts where the next
// outline title appears as a line of text, in outline order; without one, each page is a section
// with an empty path. Each section keeps its page (printed number, else the page index).
func pdfSections(texts []string, outline []outlineEntry) []section {
	var out []section
	path, next := "", 0
	label := runningLabel(texts)
	for i, t := range texts {
		num, body := 0, t
		if label != "" {
			num, body = labelledPage(t, label)
		}
		if num == 0 {
			num, body = printedPage(t)
		}
		if num == 0 {
			num = i + 1
		}
		if strings.TrimSpace(body) == "" {
			continue
		}
		lines := strings.Split(body, "\n")
		var buf []string
		flush := func() {
			if s := strings.TrimSpace(strings.Join(buf, "\n")); s != "" {
				out = append(out, section{path: path, page: num, text: strings.ReplaceAll(s, "\n", " ")})
			}
			buf = buf[:0]
		}
		for _, l := range lines {
			if next < len(outline) && strings.EqualFold(l, outline[next].title) {
				flush()
				path = outline[next].path
				next++
				continue
			}
			buf = append(buf, l)
		}
		flush()
	}
	return out
}

// runningLabel finds the running footer or header printed beside the page number on most pages
// ("System Reference Document 5.1 153"): the words that precede a number at the start or end of a
// line on at least 40% of the pages. "" when there is none.
func runningLabel(texts []string) string {
	counts := map[string]int{}
	for _, t := range texts {
		seen := map[string]bool{}
		for _, line := range strings.Split(t, "\n") {
			words := strings.Fields(line)
			for k := 1; k <= 6 && k < len(words); k++ {
				if isNumber(words[k]) {
					seen[strings.Join(words[:k], " ")] = true
				}
				if n := len(words); n-k-1 >= 0 && isNumber(words[n-1]) {
					seen[strings.Join(words[n-1-k:n-1], " ")] = true
				}
			}
		}
		for l := range seen {
			counts[l]++
		}
	}
	best, bestN := "", 0
	for l, n := range counts {
		if n > bestN || (n == bestN && len(l) > len(best)) {
			best, bestN = l, n
		}
	}
	if len(texts) < 3 || bestN*10 < len(texts)*4 {
		return ""
	}
	return best
}

func isNumber(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n > 0 && n < 10000
}

// labelledPage takes "label N" out of a page's text and returns N.
func labelledPage(text, label string) (int, string) {
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		j := strings.Index(line, label+" ")
		if j < 0 {
			continue
		}
		rest := line[j+len(label)+1:]
		numEnd := strings.IndexByte(rest, ' ')
		if numEnd < 0 {
			numEnd = len(rest)
		}
		if !isNumber(rest[:numEnd]) {
			continue
		}
		n, _ := strconv.Atoi(rest[:numEnd])
		lines[i] = strings.TrimSpace(line[:j] + " " + rest[numEnd:])
		return n, strings.Join(lines, "\n")
	}
	return 0, text
}
