package store

import (
	"compress/gzip"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/caprag/caprag/rag"
)

// memory is the in-process backend: vectors searched by brute-force cosine similarity, which
// takes a few milliseconds for a shelf of rulebooks.
type memory struct{ x *index }

func (m *memory) put(context.Context, []entry) error  { return nil } // the index holds the entries
func (m *memory) del(context.Context, []string) error { return nil }
func (m *memory) close() error                        { return nil }
func (m *memory) nearest(_ context.Context, vec []float32, n int, books []string) ([]string, error) {
	f := bookFilter(books)
	return cosineTop(m.x.order, vec, n, func(e *entry) bool { return f.ok(e.P.Book) }), nil
}

// Local is the embedded store: the in-memory index, optionally persisted to a file.
type Local struct {
	*index
	path string
	// lockPath is the writer lock; sum identifies the file the index was last read from or
	// written to ("" when there was none).
	lockPath string
	lockOpt  LockOptions
	sum      string
}

// NewMemory returns a store that lives in memory only (tests, the built-in sample books).
func NewMemory(opts Options) *Local {
	x := newIndex(opts.Embedder, opts.Mode, nil)
	x.be = &memory{x}
	x.rebuild()
	return &Local{index: x}
}

// The embedded store's file, in its folder: a checked file (checked.go) holding a gzip stream of
// gob values — a storeHeader, then the entries in batches, the parent text written once per
// parent. Stores written by earlier versions (format 1: one gob fileFormat, gzip only, no
// header) are still read, with gzip's own checksum verified, and rewritten at the next change.
const (
	storeFile     = "passages.gob.gz"
	lockFile      = ".writer.lock"
	formatVersion = 2
	saveBatch     = 512
)

// storeHeader opens the stream.
type storeHeader struct {
	Format   int
	Embedder string
	Count    int
}

// fileFormat is format 1, read only.
type fileFormat struct {
	Format   int
	Embedder string
	Entries  []entry
}

// OpenEmbedded opens (or creates) the embedded store in dir. A store built by another embedder
// refuses queries with an error that says to ingest again; a damaged store file is refused with
// an error that names it (*DamagedError). Temporary files left by a killed writer are removed
// when no other writer runs. opts.LockTimeout bounds how long a change waits for another
// process's change to finish.
func OpenEmbedded(ctx context.Context, dir string, opts Options) (*Local, error) {
	s := NewMemory(opts)
	s.path = filepath.Join(dir, storeFile)
	s.lockPath = filepath.Join(dir, lockFile)
	s.lockOpt = LockOptions{Timeout: opts.LockTimeout, Waiting: opts.Waiting}
	if _, err := os.Stat(dir); err == nil {
		if l, ok, _ := TryLock(s.lockPath, Exclusive); ok {
			_, _ = CleanTemps(s.path, ".passages-") // ".passages-*": temporary files of format 1
			l.Unlock()
		}
	}
	if err := s.reload(); err != nil {
		return nil, err
	}
	s.beginWrite = s.lockForWrite
	s.onChange = s.save
	return s, nil
}

// reload reads the store file into the index.
func (s *Local) reload() error {
	entries, emb, sum, err := readStore(s.path)
	if err != nil {
		return err
	}
	if emb != s.emb.ID() && len(entries) > 0 {
		return fmt.Errorf("the books in %s were indexed with %s, the settings ask for %s: %w", filepath.Dir(s.path), emb, s.emb.ID(), rag.ErrEmbedderMismatch)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries = make(map[string]*entry, len(entries))
	for i := range entries {
		s.entries[entries[i].P.ID] = &entries[i]
	}
	s.rebuild()
	s.sum = sum
	return nil
}

// lockForWrite takes the writer lock and, when another process changed the file since this one
// read it, reads it again, so the change about to be made is made to the latest books.
func (s *Local) lockForWrite(ctx context.Context) (func(), error) {
	l, err := Lock(ctx, s.lockPath, Exclusive, s.lockOpt)
	if err != nil {
		return nil, fmt.Errorf("writing the books: %w", err)
	}
	s.mu.RLock()
	stale := CheckedSum(s.path) != s.sum
	s.mu.RUnlock()
	if stale {
		if err := s.reload(); err != nil {
			l.Unlock()
			return nil, err
		}
	}
	return func() { l.Unlock() }, nil
}

// readStore reads the entries of a store file (none when it does not exist) and the embedder
// that built them.
func readStore(path string) ([]entry, string, string, error) {
	r, sum, err := OpenChecked(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, "", "", nil
	case errors.Is(err, ErrNotChecked):
		return readFormat1(path)
	case err != nil:
		return nil, "", "", fmt.Errorf("opening the book store: %w", err)
	}
	defer r.Close()
	fail := func(err error) ([]entry, string, string, error) {
		return nil, "", "", &DamagedError{Path: path, Reason: "its content cannot be decoded: " + err.Error()}
	}
	zr, err := gzip.NewReader(r)
	if err != nil {
		return fail(err)
	}
	dec := gob.NewDecoder(zr)
	var h storeHeader
	if err := dec.Decode(&h); err != nil {
		return fail(err)
	}
	if h.Format != formatVersion {
		return nil, "", "", fmt.Errorf("the book store %s has format %d, this caprag reads %d: update caprag, or remove it and ingest again", path, h.Format, formatVersion)
	}
	entries := make([]entry, 0, h.Count)
	for len(entries) < h.Count {
		var batch []entry
		if err := dec.Decode(&batch); err != nil {
			return fail(err)
		}
		for _, e := range batch {
			if n := len(entries); e.P.Parent == "" && n > 0 && entries[n-1].P.ParentID == e.P.ParentID {
				e.P.Parent = entries[n-1].P.Parent // one string per parent, as at ingest
			}
			entries = append(entries, e)
		}
	}
	return entries, h.Embedder, sum, nil
}

// readFormat1 reads a store written before checked files: one gob value, gzip-compressed; the
// whole gzip stream is read so that its CRC-32 is verified.
func readFormat1(path string) ([]entry, string, string, error) {
	sum := CheckedSum(path)
	f, err := os.Open(path)
	if err != nil {
		return nil, "", "", fmt.Errorf("opening the book store: %w", err)
	}
	defer f.Close()
	damaged := func(err error) ([]entry, string, string, error) {
		return nil, "", "", &DamagedError{Path: path, Reason: err.Error()}
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		return damaged(err)
	}
	var ff fileFormat
	if err := gob.NewDecoder(zr).Decode(&ff); err != nil {
		return damaged(err)
	}
	if _, err := io.Copy(io.Discard, zr); err != nil {
		return damaged(err) // gzip.ErrChecksum: a flipped bit in the content
	}
	return ff.Entries, ff.Embedder, sum, nil
}

// save writes the store (a checked file, replaced atomically); the writer lock is held.
func (s *Local) save(context.Context) error {
	if s.path == "" {
		return nil
	}
	sum, err := WriteChecked(s.path, func(w io.Writer) error {
		zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
		enc := gob.NewEncoder(zw)
		if err := enc.Encode(storeHeader{Format: formatVersion, Embedder: s.emb.ID(), Count: len(s.order)}); err != nil {
			return err
		}
		batch := make([]entry, 0, saveBatch)
		for i, e := range s.order {
			c := *e
			if i > 0 && s.order[i-1].P.ParentID == c.P.ParentID {
				c.P.Parent = ""
			}
			batch = append(batch, c)
			if len(batch) == saveBatch || i == len(s.order)-1 {
				if err := enc.Encode(batch); err != nil {
					return err
				}
				batch = batch[:0]
			}
		}
		return zw.Close()
	})
	if err != nil {
		return fmt.Errorf("saving the book store: %w", err)
	}
	s.sum = sum
	return nil
}

// Close releases the store.
func (s *Local) Close() error { return nil }
