// Package uploads adds the books a server's admins upload from Discord to that server's library:
// the file is fetched within a size limit, its type is told by its content (not its name), it is
// read and indexed with progress, and only a book that was read whole replaces anything — a
// refused file leaves the library as it was. Jobs are bounded: one per server at a time, and a
// few at once across all servers (the others wait their turn).
package uploads

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/caprag/caprag/ingest"
	"github.com/caprag/caprag/store"
)

// Errors of an upload, each a reason the caller says in words. The library is unchanged after
// any of them.
var (
	// ErrBusy: a book is already being added to this server's library.
	ErrBusy = errors.New("a book is already being added to this library")
	// ErrTooBig: the file is larger than the upload limit (MAX_UPLOAD_MB), or its text larger
	// than MAX_BOOK_TEXT_MB.
	ErrTooBig = errors.New("the file is too big")
	// ErrEmpty: the file has no bytes, or no text.
	ErrEmpty = errors.New("the file is empty")
	// ErrWrongType: the content is not a PDF, Markdown or text (a program, an archive, an
	// image…), or a file named .pdf holds no PDF.
	ErrWrongType = errors.New("the file is not a PDF, Markdown or text file")
	// ErrScanned: a PDF without extractable text (scanned pages need OCR first).
	ErrScanned = errors.New("the PDF has no text that can be read (scanned pages?)")
	// ErrEncrypted: a PDF protected by a password.
	ErrEncrypted = errors.New("the PDF is encrypted")
	// ErrCorrupt: a PDF (or text) that cannot be read.
	ErrCorrupt = errors.New("the file is damaged")
	// ErrDownload: the file could not be fetched from Discord.
	ErrDownload = errors.New("the file could not be downloaded")
	// ErrNoBook is Remove's error for a book the library does not have.
	ErrNoBook = store.ErrNoBook
)

// Shelves opens the library a book goes to (store.Libraries implements it).
type Shelves interface {
	Library(ctx context.Context, id string) (store.Store, error)
}

// Options configure the jobs.
type Options struct {
	Shelves Shelves
	// MaxBytes is the largest file accepted (MAX_UPLOAD_MB).
	MaxBytes int64
	// Limits are the loader's limits (MAX_BOOK_TEXT_MB).
	Limits ingest.Limits
	// Jobs is how many uploads are read at once across all libraries (INGEST_JOBS; 1 when 0).
	Jobs int
	// HTTP fetches the files (a client with a 2-minute timeout when nil).
	HTTP *http.Client
}

// Upload is a file attached to /books add.
type Upload struct {
	// Library is the server the book is for.
	Library  string
	Filename string
	// URL is where Discord serves the attachment; Size is the size Discord states.
	URL  string
	Size int64
	// Book names the book ("": a PDF's title, else the file name without its extension).
	Book string
}

// Stage is where an upload is.
type Stage int

// The stages, in order.
const (
	Queued Stage = iota
	Downloading
	Reading
	Indexing
)

// Progress is an upload's progress.
type Progress struct {
	Stage Stage
	// Running is how many uploads of other servers are being read (Queued).
	Running int
	// Bytes is the size of the file (Downloading).
	Bytes int64
	// Page and Pages are the PDF pages read and their number, Passages the passages made
	// (Reading).
	Page, Pages, Passages int
	// Indexed of Total passages are embedded (Indexing).
	Indexed, Total int
}

// Result is the book an upload added.
type Result struct {
	Book     string
	Pages    int
	Passages int
	// Replaced is true when the library had a book of that name, now replaced.
	Replaced bool
	Warnings []string
}

// Jobs runs uploads.
type Jobs struct {
	o     Options
	slots chan struct{}

	mu      sync.Mutex
	running map[string]bool // library → a job is under way
}

// New returns the job runner.
func New(o Options) *Jobs {
	if o.Jobs <= 0 {
		o.Jobs = 1
	}
	if o.HTTP == nil {
		o.HTTP = &http.Client{Timeout: 2 * time.Minute}
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 50 << 20
	}
	return &Jobs{o: o, slots: make(chan struct{}, o.Jobs), running: map[string]bool{}}
}

// Add fetches, checks, reads and stores an uploaded book in its library, reporting progress
// (called from this goroutine, in order). Questions keep reading the library's previous books
// until the new one is stored whole; then they read it at once. ErrBusy when the library has an
// upload under way.
func (j *Jobs) Add(ctx context.Context, u Upload, progress func(Progress)) (Result, error) {
	if progress == nil {
		progress = func(Progress) {}
	}
	switch {
	case u.Size > j.o.MaxBytes:
		return Result{}, fmt.Errorf("%w: %s is %s, more than %s", ErrTooBig, u.Filename, mib(u.Size), mib(j.o.MaxBytes))
	case u.Size == 0:
		return Result{}, fmt.Errorf("%w: %s has no bytes", ErrEmpty, u.Filename)
	}
	if err := store.CheckLibrary(u.Library); err != nil {
		return Result{}, err
	}
	j.mu.Lock()
	if j.running[u.Library] {
		j.mu.Unlock()
		return Result{}, ErrBusy
	}
	j.running[u.Library] = true
	j.mu.Unlock()
	defer func() {
		j.mu.Lock()
		delete(j.running, u.Library)
		j.mu.Unlock()
	}()
	select {
	case j.slots <- struct{}{}:
	default:
		progress(Progress{Stage: Queued, Running: cap(j.slots)})
		select {
		case j.slots <- struct{}{}:
		case <-ctx.Done():
			return Result{}, ctx.Err()
		}
	}
	defer func() { <-j.slots }()
	return j.add(ctx, u, progress)
}

func (j *Jobs) add(ctx context.Context, u Upload, progress func(Progress)) (Result, error) {
	progress(Progress{Stage: Downloading, Bytes: u.Size})
	data, err := j.fetch(ctx, u)
	if err != nil {
		return Result{}, err
	}
	ext, err := Sniff(data, u.Filename)
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", u.Filename, err)
	}
	name := strings.TrimSuffix(filepath.Base(u.Filename), filepath.Ext(u.Filename))
	if name == "" || name == "." {
		name = "upload"
	}
	limits := j.o.Limits
	limits.FileBytes = j.o.MaxBytes
	progress(Progress{Stage: Reading})
	b, err := ingest.LoadBytes(ctx, name+ext, data, ingest.Options{Book: u.Book, Limits: limits, Progress: func(p ingest.Progress) {
		progress(Progress{Stage: Reading, Page: p.Page, Pages: p.Pages, Passages: p.Passages})
	}})
	if err != nil {
		return Result{}, loadError(u.Filename, err)
	}
	if b == nil || len(b.Passages) == 0 {
		return Result{}, fmt.Errorf("%w: %s", ErrEmpty, u.Filename)
	}
	b.Source = u.Filename
	for i := range b.Passages {
		b.Passages[i].Source = u.Filename
	}
	s, err := j.o.Shelves.Library(ctx, u.Library)
	if err != nil {
		return Result{}, err
	}
	res := Result{Book: b.Name, Pages: b.Pages, Passages: len(b.Passages), Warnings: b.Warnings}
	if books, err := s.Books(ctx); err == nil {
		for _, have := range books {
			if strings.EqualFold(have.Name, b.Name) {
				res.Replaced = true
			}
		}
	}
	progress(Progress{Stage: Indexing, Total: len(b.Passages)})
	err = s.ReplaceBooks(ctx, []ingest.Book{*b}, func(done, total int) {
		progress(Progress{Stage: Indexing, Indexed: done, Total: total})
	})
	if err != nil {
		return Result{}, fmt.Errorf("storing %s: %w", b.Name, err)
	}
	return res, nil
}

// Remove deletes a book of a library; store.ErrNoBook when it has none of that name. It waits
// for no upload: the store's writer lock orders the two.
func (j *Jobs) Remove(ctx context.Context, library, book string) error {
	if err := store.CheckLibrary(library); err != nil {
		return err
	}
	s, err := j.o.Shelves.Library(ctx, library)
	if err != nil {
		return err
	}
	return s.RemoveBook(ctx, book)
}

// fetch downloads the attachment, at most MaxBytes.
func (j *Jobs) fetch(ctx context.Context, u Upload) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.URL, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDownload, err)
	}
	resp, err := j.o.HTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDownload, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: Discord answered %s", ErrDownload, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, j.o.MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDownload, err)
	}
	switch {
	case int64(len(data)) > j.o.MaxBytes:
		return nil, fmt.Errorf("%w: %s is more than %s", ErrTooBig, u.Filename, mib(j.o.MaxBytes))
	case len(data) == 0:
		return nil, fmt.Errorf("%w: %s has no bytes", ErrEmpty, u.Filename)
	}
	return data, nil
}

// loadError turns the loader's errors into the upload's.
func loadError(file string, err error) error {
	for _, m := range []struct{ from, to error }{
		{ingest.ErrNoText, ErrScanned},
		{ingest.ErrEncrypted, ErrEncrypted},
		{ingest.ErrCorrupt, ErrCorrupt},
		{ingest.ErrTooLarge, ErrTooBig},
		{ingest.ErrEmpty, ErrEmpty},
		{ingest.ErrBinary, ErrWrongType},
		{ingest.ErrEncoding, ErrWrongType},
	} {
		if errors.Is(err, m.from) {
			return fmt.Errorf("%w (%s): %w", m.to, file, err)
		}
	}
	return fmt.Errorf("reading %s: %w", file, err)
}

// signatures are the starts of common files that are not books.
var signatures = []struct {
	magic []byte
	what  string
}{
	{[]byte("\x7fELF"), "a program"},
	{[]byte("MZ"), "a Windows program"},
	{[]byte("\xfe\xed\xfa"), "a program"},
	{[]byte("\xcf\xfa\xed\xfe"), "a program"},
	{[]byte("\xca\xfe\xba\xbe"), "a program"},
	{[]byte("#!"), "a script"},
	{[]byte("PK\x03\x04"), "a ZIP archive (a Word, EPUB or zipped file?)"},
	{[]byte("Rar!"), "a RAR archive"},
	{[]byte("7z\xbc\xaf"), "a 7-Zip archive"},
	{[]byte("\x1f\x8b"), "a gzip archive"},
	{[]byte("\x89PNG"), "an image"},
	{[]byte("\xff\xd8\xff"), "an image"},
	{[]byte("GIF8"), "an image"},
	{[]byte("RIFF"), "an image or sound file"},
	{[]byte("\xd0\xcf\x11\xe0"), "an old Office document"},
}

// Sniff tells a book file's type by its content and returns the extension it is loaded as:
// ".pdf" for a PDF (its header in the first kilobyte, as readers accept it), ".md" for text
// named .md or .markdown, ".txt" for other text. Programs, archives, images and other binary
// data are refused with ErrWrongType whatever their name, and so is anything but a PDF named
// .pdf.
func Sniff(data []byte, filename string) (string, error) {
	if len(data) == 0 {
		return "", ErrEmpty
	}
	head := data[:min(len(data), 1024)]
	if bytes.Contains(head, []byte("%PDF-")) {
		return ".pdf", nil
	}
	for _, s := range signatures {
		if bytes.HasPrefix(data, s.magic) {
			return "", fmt.Errorf("%w: it is %s", ErrWrongType, s.what)
		}
	}
	ext := strings.ToLower(filepath.Ext(filename))
	if ext == ".pdf" {
		return "", fmt.Errorf("%w: it is named .pdf but is not a PDF", ErrWrongType)
	}
	utf16 := bytes.HasPrefix(data, []byte{0xFF, 0xFE}) || bytes.HasPrefix(data, []byte{0xFE, 0xFF})
	if !utf16 && bytes.IndexByte(data[:min(len(data), 8192)], 0) >= 0 {
		return "", fmt.Errorf("%w: it holds binary data", ErrWrongType)
	}
	if ext == ".md" || ext == ".markdown" {
		return ".md", nil
	}
	return ".txt", nil
}

func mib(n int64) string {
	if n < 10<<20 {
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d MiB", n>>20)
}
