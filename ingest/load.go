package ingest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Errors a loader returns, wrapped with the file name.
var (
	ErrUnsupported = errors.New("unsupported file type (caprag reads .pdf, .md, .markdown and .txt)")
	ErrEncrypted   = errors.New("the PDF is encrypted; save an unencrypted copy and ingest that")
	ErrCorrupt     = errors.New("the file is damaged or not what its extension says")
	ErrNoText      = errors.New("no extractable text (a scanned PDF needs OCR first)")
	ErrEmpty       = errors.New("the file has no text")
	ErrTooLarge    = errors.New("too large")
)

// Default limits (config MAX_FILE_MB and MAX_BOOK_TEXT_MB).
const (
	DefaultMaxFile = 256 << 20
	DefaultMaxText = 16 << 20
)

// Limits bound what one file may cost. A file over a limit is refused before it is read (or,
// for a PDF's text, as soon as its text is known), with an error that names the setting.
type Limits struct {
	// FileBytes is the largest file read (MAX_FILE_MB; 0 means DefaultMaxFile).
	FileBytes int64
	// TextBytes is the most text one book may hold (MAX_BOOK_TEXT_MB; 0 means
	// DefaultMaxText). Ingest memory grows with a book's text: about 1.1 GB for a book at the
	// default, with the local embedder (README, "Guarantees").
	TextBytes int64
}

func (l Limits) file() int64 { return cmp.Or(l.FileBytes, DefaultMaxFile) }
func (l Limits) text() int64 { return cmp.Or(l.TextBytes, DefaultMaxText) }

// tooLarge says which limit a file exceeds and the setting that raises it.
func tooLarge(what string, size, limit int64, setting string) error {
	return fmt.Errorf("%w: %s is %s, more than the %s limit (%s)", ErrTooLarge, what, mib(size), mib(limit), setting)
}

// mib renders a size in MiB, with one decimal below 10 MiB.
func mib(n int64) string {
	if n < 10<<20 {
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d MiB", n>>20)
}

// Progress reports loading progress of one file.
type Progress struct {
	File     string
	Page     int // pages read so far (PDF), 0 otherwise
	Pages    int // total pages (PDF), 0 otherwise
	Passages int // passages made so far
}

// Options control loading.
type Options struct {
	// Book overrides the book name (default: PDF title, else the file name without extension).
	Book     string
	Progress func(Progress)
	Limits   Limits
}

func (o Options) report(p Progress) {
	if o.Progress != nil {
		o.Progress(p)
	}
}

// Supported reports whether caprag can load a file with this name.
func Supported(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".pdf", ".md", ".markdown", ".txt":
		return true
	}
	return false
}

// Files expands paths (files or folders, walked recursively) into the sorted list of files to
// load. Folders contribute only supported files; a file named explicitly is kept whatever its
// extension, so that loading it reports why it cannot be read. Symbolic links to folders are
// followed, a link back to a folder being walked is a loop and is reported; hidden folders
// (".git") are skipped. Paths and folders that cannot be read do not stop the walk: the files
// found are returned with an error listing each problem.
func Files(paths []string) ([]string, error) {
	seen := map[string]bool{}
	var (
		out      []string
		problems []error
	)
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, p := range paths {
		info, err := os.Stat(p) // a symbolic link named on the command line is followed
		if err != nil {
			problems = append(problems, err)
			continue
		}
		if !info.IsDir() {
			add(p)
			continue
		}
		w := walker{}
		w.walk(p, info, nil)
		sort.Strings(w.found)
		for _, f := range w.found {
			add(f)
		}
		problems = append(problems, w.problems...)
	}
	return out, errors.Join(problems...)
}

// walker collects the supported files under a folder.
type walker struct {
	found    []string
	problems []error
}

// walk reads dir; parents are the folders above it on this walk (to tell a link loop).
func (w *walker) walk(dir string, info fs.FileInfo, parents []fs.FileInfo) {
	for _, p := range parents {
		if os.SameFile(p, info) {
			w.problems = append(w.problems, fmt.Errorf("%s: a symbolic link back to a folder above it (a loop); skipped", dir))
			return
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		// The entries read before the error, if any, are still walked.
		w.problems = append(w.problems, err)
	}
	parents = append(parents, info)
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		typ := e.Type()
		if typ&fs.ModeSymlink != 0 {
			fi, err := os.Stat(path)
			if err != nil {
				w.problems = append(w.problems, fmt.Errorf("%s: a symbolic link that leads nowhere: %w", path, err))
				continue
			}
			if !fi.IsDir() {
				if Supported(path) {
					w.found = append(w.found, path)
				}
				continue
			}
			if !strings.HasPrefix(e.Name(), ".") {
				w.walk(path, fi, parents)
			}
			continue
		}
		if e.IsDir() {
			if strings.HasPrefix(e.Name(), ".") {
				continue
			}
			fi, err := e.Info()
			if err != nil {
				w.problems = append(w.problems, err)
				continue
			}
			w.walk(path, fi, parents)
			continue
		}
		if Supported(path) {
			w.found = append(w.found, path)
		}
	}
}

// LoadFile reads one book from disk. A file over the limits is refused before it is read.
func LoadFile(ctx context.Context, path string, opt Options) (*Book, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if info.Size() > opt.Limits.file() {
		return nil, fmt.Errorf("%s: %w", path, tooLarge("the file", info.Size(), opt.Limits.file(), "MAX_FILE_MB"))
	}
	if !Supported(path) {
		return nil, fmt.Errorf("%s: %w", path, ErrUnsupported)
	}
	if !isPDF(path) && info.Size() > opt.Limits.text() {
		return nil, fmt.Errorf("%s: %w", path, tooLarge("its text", info.Size(), opt.Limits.text(), "MAX_BOOK_TEXT_MB"))
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return load(ctx, path, data, opt)
}

func isPDF(path string) bool { return strings.EqualFold(filepath.Ext(path), ".pdf") }

// LoadBytes reads one book from memory; filename gives its type and default name.
func LoadBytes(ctx context.Context, filename string, data []byte, opt Options) (*Book, error) {
	if !Supported(filename) {
		return nil, fmt.Errorf("%s: %w", filename, ErrUnsupported)
	}
	return load(ctx, filename, data, opt)
}

func load(ctx context.Context, path string, data []byte, opt Options) (*Book, error) {
	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	var (
		secs   []section
		book   = &Book{Source: path}
		err    error
		title  string
		noText bool
	)
	switch strings.ToLower(filepath.Ext(path)) {
	case ".pdf":
		var pages int
		secs, pages, title, err = readPDF(ctx, data, func(done, total int) {
			opt.report(Progress{File: path, Page: done, Pages: total})
		})
		book.Pages = pages
		if err != nil && !errors.Is(err, ErrNoText) {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if err != nil {
			noText = true
			book.Warnings = append(book.Warnings, fmt.Sprintf("%s: %v", path, ErrNoText))
		}
	default:
		text, note, err := decodeText(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if note != "" {
			book.Warnings = append(book.Warnings, path+": "+note)
		}
		if int64(len(text)) > opt.Limits.text() {
			return nil, fmt.Errorf("%s: %w", path, tooLarge("its text", int64(len(text)), opt.Limits.text(), "MAX_BOOK_TEXT_MB"))
		}
		if ext := strings.ToLower(filepath.Ext(path)); ext == ".md" || ext == ".markdown" {
			secs = markdownSections(text)
		} else {
			secs = textSections(text)
		}
	}
	var size int64
	for _, s := range secs {
		size += int64(len(s.text))
	}
	if size > opt.Limits.text() {
		return nil, fmt.Errorf("%s: %w", path, tooLarge("its text", size, opt.Limits.text(), "MAX_BOOK_TEXT_MB"))
	}
	book.Name = name
	if title != "" {
		book.Name = title
	}
	if opt.Book != "" {
		book.Name = opt.Book
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	book.Passages = chunk(book.Name, path, secs)
	if len(book.Passages) == 0 && !noText {
		return nil, fmt.Errorf("%s: %w", path, ErrEmpty)
	}
	opt.report(Progress{File: path, Page: book.Pages, Pages: book.Pages, Passages: len(book.Passages)})
	if noText {
		return book, fmt.Errorf("%s: %w", path, ErrNoText)
	}
	return book, nil
}
