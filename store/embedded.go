package store

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/caprag/caprag/ingest"
)

// Local is the embedded store: a library in a folder, or in memory only.
//
// On disk (DATA_DIR/books), a library is a set of immutable files and one small manifest that
// names the current ones:
//
//	manifest            the generation: its books (name, segment, passage counts, the embedder
//	                    of its vectors); replaced atomically on every change
//	seg-<id>            one book's segment (segment.go), named by a hash of its passages
//	vec-<id>-<emb>      one book's vectors (vectors.go), per embedder
//	.writer.lock        taken by a process while it changes the library (lock.go)
//
// Every file is checked (CRC-32C of its content) when it is read; a damaged one is named in the
// error. Opening reads the manifest; a book's segment is read when first searched,
// and its vectors only by a search mode that reads vectors. A change writes the changed books'
// files, then the manifest, then removes the files no manifest names. Another process's change
// is seen at the next write (under the lock) and by Refresh.
type Local struct {
	*index
	dir     string
	gen     int64 // generation of the manifest the view was read from
	lockOpt LockOptions
}

// NewMemory returns a store that lives in memory only (tests, the built-in sample books).
func NewMemory(opts Options) *Local {
	return &Local{index: newIndex(opts.Embedder, opts.Mode, nil)}
}

// manifest is the persisted description of a generation.
type manifest struct {
	Format     int            `json:"format"`
	Generation int64          `json:"generation"`
	Books      []manifestBook `json:"books"`
}

type manifestBook struct {
	Name     string `json:"name"`
	Segment  string `json:"segment"`
	Passages int    `json:"passages"`
	Parents  int    `json:"parents"`
	Embedder string `json:"embedder"`
	Vectors  string `json:"vectors"`
}

const (
	manifestFormat = 4
	manifestFile   = "manifest"
	lockFile       = ".writer.lock"
	// storeFile is the one file of the stores before segments: format 1 (gzip of one gob value)
	// and format 2 (a checked file of gob batches). It is converted at the first open.
	storeFile = "passages.gob.gz"
	// tmpPrefix begins the temporary files of a write in progress.
	tmpPrefix = ".tmp-"
)

var (
	manMagic = []byte("CPRGMAN\x01")
)

// OpenEmbedded opens (or creates) the embedded store in dir. Books embedded with another
// embedder than opts.Embedder still list, search lexically and can be removed; a search that
// reads their vectors says to run `caprag ingest --reindex`.
func OpenEmbedded(ctx context.Context, dir string, opts Options) (*Local, error) {
	s := NewMemory(opts)
	s.dir = dir
	s.files = s
	s.lockOpt = LockOptions{Timeout: opts.LockTimeout, Waiting: opts.Waiting}
	if _, err := os.Stat(dir); err == nil {
		// Temporary files a killed writer left behind, removed while no writer runs.
		if l, ok, _ := TryLock(filepath.Join(dir, lockFile), Exclusive); ok {
			_, _ = CleanTemps(filepath.Join(dir, manifestFile), tmpPrefix, ".passages-", "."+storeFile+".tmp-")
			l.Unlock()
		}
	}
	s.beginWrite = s.lockForWrite
	s.refresh = func(ctx context.Context) error { _, err := s.Refresh(ctx); return err }
	if _, err := s.Refresh(ctx); err != nil {
		return nil, err
	}
	if s.gen == 0 {
		if err := s.migrate(ctx); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Refresh reads the manifest again and, when another process changed the library, switches to
// its generation (books already read and unchanged are kept). It reports whether it switched.
func (s *Local) Refresh(ctx context.Context) (bool, error) {
	m, err := s.readManifest()
	if err != nil || m.Generation == s.gen {
		return false, err
	}
	have := map[string]*shelf{}
	old := s.cur.Load()
	for _, sh := range old.shelves {
		have[sh.id+"\x00"+sh.embedder] = sh
	}
	shelves := make([]*shelf, len(m.Books))
	for i, b := range m.Books {
		if sh, ok := have[b.Segment+"\x00"+b.Embedder]; ok && sh.name == b.Name {
			shelves[i] = sh
			continue
		}
		sh := &shelf{name: b.Name, id: b.Segment, passages: b.Passages, parents: b.Parents, embedder: b.Embedder}
		sh.open = s.segmentLoader(sh, b.Vectors)
		shelves[i] = sh
	}
	s.cur.Store(old.next(shelves))
	s.gen = m.Generation
	return true, nil
}

// segmentLoader reads a shelf's segment file and wires its vectors file.
func (s *Local) segmentLoader(sh *shelf, vecFile string) func() (*segment, error) {
	return func() (*segment, error) {
		path := filepath.Join(s.dir, "seg-"+sh.id)
		payload, err := readFramed(path, segMagic)
		if err != nil {
			return nil, err
		}
		seg, err := decodeSegment(sh.id, payload)
		if err != nil {
			return nil, fileError(path, err)
		}
		if vecFile != "" {
			seg.vecs.load = s.vectorsFile(filepath.Join(s.dir, vecFile))
		}
		return seg, nil
	}
}

func (s *Local) vectorsFile(path string) func() (*vectors, error) {
	return func() (*vectors, error) {
		payload, err := readFramed(path, vecMagic)
		if err != nil {
			return nil, err
		}
		v, err := decodeVectors(payload)
		if err != nil {
			return nil, fileError(path, err)
		}
		return v, nil
	}
}

// vectorsLoader is how a shelf built in this process reads its vectors file again.
func (s *Local) vectorsLoader(sh *shelf) func() (*vectors, error) {
	return s.vectorsFile(filepath.Join(s.dir, vecName(sh.id, sh.embedder)))
}

func vecName(segID, embedder string) string {
	h := sha256.Sum256([]byte(embedder))
	return "vec-" + segID + "-" + hex.EncodeToString(h[:6])
}

func fileError(path string, err error) error {
	if errors.Is(err, errDamaged) {
		return &DamagedError{Path: path, Reason: strings.TrimPrefix(err.Error(), errDamaged.Error()+": ")}
	}
	return fmt.Errorf("reading %s: %w", path, err)
}

// readFramed reads a checked file and returns its payload.
func readFramed(path string, magic []byte) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	payload, err := unframe(magic, b)
	if err != nil {
		return nil, fileError(path, err)
	}
	return payload, nil
}

// writeFramed writes a checked file atomically: a temporary file beside it, synced, renamed.
func writeFramed(path string, magic, payload []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), tmpPrefix+"*")
	if err != nil {
		return fmt.Errorf("store: saving: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(frame(magic, payload)); err != nil {
		tmp.Close()
		return fmt.Errorf("store: saving %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("store: saving %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("store: saving %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("store: saving %s: %w", path, err)
	}
	return nil
}

func (s *Local) readManifest() (manifest, error) {
	path := filepath.Join(s.dir, manifestFile)
	payload, err := readFramed(path, manMagic)
	if errors.Is(err, os.ErrNotExist) {
		return manifest{}, nil
	}
	if err != nil {
		return manifest{}, err
	}
	var m manifest
	if err := json.Unmarshal(payload, &m); err != nil {
		return manifest{}, &DamagedError{Path: path, Reason: err.Error()}
	}
	if m.Format != manifestFormat {
		return manifest{}, fmt.Errorf("the book store %s has format %d, this caprag reads %d: update caprag, or remove the folder and ingest again", s.dir, m.Format, manifestFormat)
	}
	return m, nil
}

// book writes a built book's segment and vectors files (persister).
func (s *Local) book(b *built) error {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return fmt.Errorf("store: saving: %w", err)
	}
	seg := filepath.Join(s.dir, "seg-"+b.seg.id)
	if _, err := os.Stat(seg); err != nil {
		if err := writeFramed(seg, segMagic, b.payload); err != nil {
			return err
		}
	}
	if b.vecs != nil {
		if err := writeFramed(filepath.Join(s.dir, vecName(b.seg.id, s.emb.ID())), vecMagic, b.vecs); err != nil {
			return err
		}
		b.vecs = nil // read back from the file when a search needs them
	}
	return nil
}

// commit writes the manifest of a new generation, then removes the files no longer named
// (persister).
func (s *Local) commit(_ context.Context, v *view) error {
	m := manifest{Format: manifestFormat, Generation: s.gen + 1}
	for _, sh := range v.shelves {
		m.Books = append(m.Books, manifestBook{Name: sh.name, Segment: sh.id, Passages: sh.passages, Parents: sh.parents, Embedder: sh.embedder, Vectors: vecName(sh.id, sh.embedder)})
	}
	payload, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if err := writeFramed(filepath.Join(s.dir, manifestFile), manMagic, payload); err != nil {
		return err
	}
	s.gen = m.Generation
	s.sweep(m)
	return nil
}

// sweep removes the files the manifest does not name. A reader of the previous generation that
// finds a file gone reads the library again (index.view).
func (s *Local) sweep(m manifest) {
	named := map[string]bool{manifestFile: true, lockFile: true}
	for _, b := range m.Books {
		named["seg-"+b.Segment] = true
		named[b.Vectors] = true
	}
	entries, _ := os.ReadDir(s.dir)
	for _, e := range entries {
		n := e.Name()
		if !named[n] && (strings.HasPrefix(n, "seg-") || strings.HasPrefix(n, "vec-") || strings.HasPrefix(n, "links-") || n == storeFile) {
			os.Remove(filepath.Join(s.dir, n))
		}
	}
}

// lockForWrite takes the folder's writer lock and catches up with changes another process made.
func (s *Local) lockForWrite(ctx context.Context) (func(), error) {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	l, err := Lock(ctx, filepath.Join(s.dir, lockFile), Exclusive, s.lockOpt)
	if err != nil {
		return nil, fmt.Errorf("writing the books: %w", err)
	}
	if _, err := s.Refresh(ctx); err != nil {
		l.Unlock()
		return nil, err
	}
	return func() { l.Unlock() }, nil
}

// migrate converts a store of the former formats (passages.gob.gz) into segments, once: the
// passages keep their IDs and are embedded again with the configured embedder. A damaged former
// store is named (DamagedError) and left as it is.
func (s *Local) migrate(ctx context.Context) error {
	entries, _, _, err := readStore(filepath.Join(s.dir, storeFile))
	if err != nil || len(entries) == 0 {
		return err
	}
	byBook := map[string]*ingest.Book{}
	var names []string
	for _, e := range entries {
		b := byBook[e.P.Book]
		if b == nil {
			b = &ingest.Book{Name: e.P.Book, Source: e.P.Source}
			byBook[e.P.Book] = b
			names = append(names, e.P.Book)
		}
		b.Passages = append(b.Passages, e.P)
	}
	slices.Sort(names)
	books := make([]ingest.Book, len(names))
	for i, n := range names {
		books[i] = *byBook[n]
	}
	return s.ReplaceBooks(ctx, books, nil)
}

// storeHeader opens a format 2 store: a checked file holding a gzip stream of gob values, this
// header, then the entries in batches (a parent's text written once, with its first child).
type storeHeader struct {
	Format   int
	Embedder string
	Count    int
}

// fileFormat is format 1: one gob value, gzip only.
type fileFormat struct {
	Format   int
	Embedder string
	Entries  []entry
}

// readStore reads the entries of a former store file (none when it does not exist) and the
// embedder that built them.
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
	if h.Format != 2 {
		return nil, "", "", fmt.Errorf("the book store %s has format %d, this caprag reads 1 to %d: update caprag, or remove it and ingest again", path, h.Format, manifestFormat)
	}
	entries := make([]entry, 0, min(h.Count, 1<<20))
	for len(entries) < h.Count {
		var batch []entry
		if err := dec.Decode(&batch); err != nil {
			return fail(err)
		}
		for _, e := range batch {
			if n := len(entries); e.P.Parent == "" && n > 0 && entries[n-1].P.ParentID == e.P.ParentID {
				e.P.Parent = entries[n-1].P.Parent
			}
			entries = append(entries, e)
		}
	}
	return entries, h.Embedder, sum, nil
}

// readFormat1 reads a store written before checked files: one gob value, gzip-compressed; the
// whole gzip stream is read so that its CRC-32 is verified.
func readFormat1(path string) ([]entry, string, string, error) {
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
	return ff.Entries, ff.Embedder, "", nil
}

// Close releases the store.
func (s *Local) Close() error { return nil }
