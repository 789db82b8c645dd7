package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/caprag/caprag/ingest"
)

// runIngest loads books into the store. Files that cannot be read are reported and the rest of
// the run is loaded (exit status 1). Stored books that another embedder embedded are embedded
// again with the configured one first; --reindex embeds every stored book again.
func runIngest(ctx context.Context, a *app, args []string) error {
	// Reading PDFs makes much short-lived garbage (the library lexes every content stream into
	// values): a batch run trades a larger heap (the SRD PDF: 250 MB peak instead of 180) for
	// about a tenth less CPU spent collecting it.
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	// …but not past a soft 1 GiB: a large book (MAX_BOOK_TEXT_MB) or library then collects as
	// often as it needs to stay near its live size (a 16 MB Markdown book: 1.67 GB peak without
	// this limit; 30 copies of the SRD: 1.58 GiB).
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(1 << 30))
	fs := flag.NewFlagSet("ingest", flag.ContinueOnError)
	book := fs.String("book", "", "book name (one file only; default: the PDF title or the file name)")
	reindex := fs.Bool("reindex", false, "embed every stored book again with the configured embedder (EMBEDDINGS_PROVIDER), e.g. after changing it")
	server := fs.String("server", "", "the Discord server whose library gets the books (default: the shared library)")
	paths, err := a.parseFlags(fs, args)
	if err != nil {
		return err
	}
	lib, err := library(*server)
	if err != nil {
		return err
	}
	if len(paths) == 0 && !*reindex {
		return usagef("name at least one file or folder (or --reindex)")
	}
	// A folder or path that cannot be read is reported with the failed files; the rest loads.
	files, walkErr := ingest.Files(paths)
	var failed []string
	for _, e := range unjoin(walkErr) {
		failed = append(failed, e.Error())
		fmt.Fprintln(a.stderr, "failed: "+e.Error())
	}
	if len(paths) > 0 && len(files) == 0 {
		if walkErr != nil {
			return fmt.Errorf("nothing to load: %w", walkErr)
		}
		return fmt.Errorf("no PDF, Markdown or text files in %s", strings.Join(paths, ", "))
	}
	if *book != "" && len(files) > 1 {
		return usagef("--book names one book, but %d files were given", len(files))
	}
	bar := newProgress(a.stderr)
	s, err := a.openLibrary(ctx, lib, func(holder string) {
		bar.line("waiting: " + holder + " is changing the books (at most STORE_LOCK_TIMEOUT=" + a.cfg.StoreLockTimeout.String() + ")")
	})
	if err != nil {
		return err
	}
	defer s.Close()
	bar.embedStart = time.Now()
	redone, err := s.Reindex(ctx, *reindex, func(done, total int) { bar.embedded(done, total) })
	bar.done()
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			return errInterrupted
		}
		return fmt.Errorf("embedding the stored books again: %w", err)
	}
	if redone > 0 {
		fmt.Fprintf(a.stdout, "embedded %d stored %s again with %s\n", redone, plural(redone, "book", "books"), a.cfg.EmbeddingsProvider)
	}
	if len(files) == 0 {
		return nil
	}
	start := time.Now()
	var (
		loaded []ingest.Book
		byName = map[string]int{} // book name → index in loaded
	)
	limits := ingest.Limits{FileBytes: int64(a.cfg.MaxFileMB) << 20, TextBytes: int64(a.cfg.MaxBookTextMB) << 20}
	for i, f := range files {
		b, err := ingest.LoadFile(ctx, f, ingest.Options{Book: *book, Limits: limits, Progress: func(p ingest.Progress) {
			bar.update(i+1, len(files), p)
		}})
		if b != nil {
			for _, w := range b.Warnings {
				bar.line("warning: " + w)
			}
		}
		if err != nil && (b == nil || len(b.Passages) == 0) {
			if ctx.Err() != nil {
				return errInterrupted
			}
			failed = append(failed, err.Error())
			bar.line("failed: " + err.Error())
			continue
		}
		bar.line(fmt.Sprintf("%s: %d passages%s", b.Name, len(b.Passages), pagesNote(b.Pages)))
		if j, ok := byName[b.Name]; ok {
			bar.line(fmt.Sprintf("warning: %s and %s are both named %q; the later one is kept (--book renames one)", loaded[j].Source, f, b.Name))
			loaded[j] = *b
			continue
		}
		byName[b.Name] = len(loaded)
		loaded = append(loaded, *b)
	}
	var books, pages, passages int
	if len(loaded) > 0 {
		// One store update for all the books: each is indexed on its own, and the library
		// switches to them at once.
		bar.embedStart = time.Now()
		err := s.ReplaceBooks(ctx, loaded, func(done, total int) { bar.embedded(done, total) })
		if err != nil {
			if ctx.Err() != nil && errors.Is(err, context.Canceled) {
				bar.done()
				return errInterrupted
			}
			bar.done()
			return fmt.Errorf("storing %d books: %w", len(loaded), err)
		}
		for _, b := range loaded {
			books++
			pages += b.Pages
			passages += len(b.Passages)
		}
	}
	bar.done()
	fmt.Fprintf(a.stdout, "ingested %d books, %d pages, %d passages in %.1f s\n", books, pages, passages, time.Since(start).Seconds())
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d files or folders failed:\n  %s", len(failed), len(files)+len(unjoin(walkErr)), strings.Join(failed, "\n  "))
	}
	return nil
}

// errInterrupted is what an ingest stopped by Ctrl-C or SIGTERM before its change says: a change
// once started runs to its end, so nothing was half-stored.
var errInterrupted = errors.New("interrupted before anything was stored (the books are as they were)")

// unjoin lists the errors an errors.Join holds (nil: none).
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err != nil {
		return []error{err}
	}
	return nil
}

func pagesNote(p int) string {
	if p == 0 {
		return ""
	}
	return fmt.Sprintf(" from %d pages", p)
}

// progress draws a one-line bar on a terminal and plain lines otherwise.
type progress struct {
	w     io.Writer
	tty   bool
	now   func() time.Time
	last  time.Time
	start time.Time
	drawn bool
	// plainFile and plainAt are the file and time of the last plain page line (not a terminal).
	plainFile int
	plainAt   time.Time
	// embedStart is when embedding began.
	embedStart time.Time
}

// plainEvery is how often a plain progress line reports the pages read when not on a terminal.
const plainEvery = 3 * time.Second

func newProgress(w io.Writer) *progress {
	tty := false
	if f, ok := w.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd()))
	}
	return &progress{w: w, tty: tty, now: time.Now, start: time.Now()}
}

func (p *progress) update(file, files int, pr ingest.Progress) {
	now := p.now()
	if !p.tty {
		// A plain line when a file's pages start, then every few seconds.
		if pr.Pages > 0 && pr.Passages == 0 && (file != p.plainFile || now.Sub(p.plainAt) >= plainEvery) {
			p.plainFile, p.plainAt = file, now
			fmt.Fprintf(p.w, "[%d/%d] %s: page %d of %d\n", file, files, pr.File, pr.Page, pr.Pages)
		}
		return
	}
	if now.Sub(p.last) < 100*time.Millisecond && pr.Passages == 0 {
		return
	}
	p.last = now
	const width = 24
	frac := float64(file-1) / float64(files)
	if pr.Pages > 0 {
		frac += float64(pr.Page) / float64(pr.Pages) / float64(files)
	}
	n := int(frac * width)
	rate := ""
	if secs := now.Sub(p.start).Seconds(); secs > 0 && pr.Page > 0 {
		rate = fmt.Sprintf(" %.0f pages/s", float64(pr.Page)/secs)
	}
	fmt.Fprintf(p.w, "\r\033[K[%s%s] %d/%d %s page %d/%d, %d passages%s", strings.Repeat("█", n), strings.Repeat("·", width-n), file, files, shorten(pr.File, 30), pr.Page, pr.Pages, pr.Passages, rate)
	p.drawn = true
}

// embedded shows how far the embedding of the loaded passages is.
func (p *progress) embedded(done, total int) {
	now := time.Now()
	rate := ""
	if secs := now.Sub(p.embedStart).Seconds(); secs > 0.5 {
		rate = fmt.Sprintf(", %.0f passages/s", float64(done)/secs)
	}
	if !p.tty {
		if done == total || now.Sub(p.last) >= 5*time.Second {
			p.last = now
			fmt.Fprintf(p.w, "embedding: %d of %d passages%s\n", done, total, rate)
		}
		return
	}
	const width = 24
	n := done * width / total
	fmt.Fprintf(p.w, "\r\033[K[%s%s] embedding %d/%d passages%s", strings.Repeat("█", n), strings.Repeat("·", width-n), done, total, rate)
	p.drawn = true
}

func (p *progress) line(s string) {
	if p.tty && p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
	}
	fmt.Fprintln(p.w, s)
}

func (p *progress) done() {
	if p.tty && p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return "…" + string(r[len(r)-n+1:])
}
