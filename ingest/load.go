package ingest

import (
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
)

// MaxFileSize bounds one input file; larger files are refused rather than read into memory.
const MaxFileSize = 512 << 20

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
// extension, so that loading it reports why it cannot be read.
func Files(paths []string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if !info.IsDir() {
			add(p)
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && path != p && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			if !d.IsDir() && Supported(path) {
				found = append(found, path)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		sort.Strings(found)
		for _, f := range found {
			add(f)
		}
	}
	return out, nil
}

// LoadFile reads one book from disk.
func LoadFile(ctx context.Context, path string, opt Options) (*Book, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if info.Size() > MaxFileSize {
		return nil, fmt.Errorf("%s: %d MiB is more than the %d MiB caprag reads", path, info.Size()>>20, MaxFileSize>>20)
	}
	if !Supported(path) {
		return nil, fmt.Errorf("%s: %w", path, ErrUnsupported)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return load(ctx, path, data, opt)
}

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
		secs  []section
		book  = &Book{Source: path}
		err   error
		title string
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
			book.Warnings = append(book.Warnings, fmt.Sprintf("%s: %v", path, ErrNoText))
		}
	case ".md", ".markdown":
		secs = markdownSections(string(data))
	default:
		secs = textSections(string(data))
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
	if len(book.Passages) == 0 && len(book.Warnings) == 0 {
		return nil, fmt.Errorf("%s: %w", path, ErrEmpty)
	}
	opt.report(Progress{File: path, Page: book.Pages, Pages: book.Pages, Passages: len(book.Passages)})
	if len(book.Warnings) > 0 {
		return book, fmt.Errorf("%s: %w", path, ErrNoText)
	}
	return book, nil
}
