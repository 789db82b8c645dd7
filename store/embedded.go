package store

import (
	"compress/gzip"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
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
}

// NewMemory returns a store that lives in memory only (tests, the built-in sample books).
func NewMemory(opts Options) *Local {
	x := newIndex(opts.Embedder, opts.Mode, nil)
	x.be = &memory{x}
	x.rebuild()
	return &Local{index: x}
}

// fileFormat is the persisted form of the embedded store.
type fileFormat struct {
	Format   int
	Embedder string
	Entries  []entry
}

const formatVersion = 1

// OpenEmbedded opens (or creates) the embedded store in dir. A store built by another embedder
// refuses queries with an error that says to ingest again.
func OpenEmbedded(ctx context.Context, dir string, opts Options) (*Local, error) {
	s := NewMemory(opts)
	s.path = filepath.Join(dir, "passages.gob.gz")
	f, err := os.Open(s.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("opening the book store: %w", err)
	default:
		defer f.Close()
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("reading the book store %s: %w (remove it and ingest again)", s.path, err)
		}
		var ff fileFormat
		if err := gob.NewDecoder(zr).Decode(&ff); err != nil {
			return nil, fmt.Errorf("reading the book store %s: %w (remove it and ingest again)", s.path, err)
		}
		if ff.Embedder != opts.Embedder.ID() && len(ff.Entries) > 0 {
			return nil, fmt.Errorf("the books in %s were indexed with %s, the settings ask for %s: %w", dir, ff.Embedder, opts.Embedder.ID(), rag.ErrEmbedderMismatch)
		}
		for i := range ff.Entries {
			e := ff.Entries[i]
			s.entries[e.P.ID] = &e
		}
		s.rebuild()
	}
	s.onChange = s.save
	return s, nil
}

// save writes the store atomically (temporary file, then rename).
func (s *Local) save(context.Context) error {
	if s.path == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o755); err != nil {
		return fmt.Errorf("saving the book store: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.path), ".passages-*")
	if err != nil {
		return fmt.Errorf("saving the book store: %w", err)
	}
	defer os.Remove(tmp.Name())
	zw, _ := gzip.NewWriterLevel(tmp, gzip.BestSpeed)
	ff := fileFormat{Format: formatVersion, Embedder: s.emb.ID(), Entries: make([]entry, len(s.order))}
	for i, e := range s.order {
		ff.Entries[i] = *e
	}
	if err := gob.NewEncoder(zw).Encode(&ff); err != nil {
		tmp.Close()
		return fmt.Errorf("saving the book store: %w", err)
	}
	if err := zw.Close(); err != nil {
		tmp.Close()
		return fmt.Errorf("saving the book store: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("saving the book store: %w", err)
	}
	return os.Rename(tmp.Name(), s.path)
}

// Close releases the store.
func (s *Local) Close() error { return nil }
