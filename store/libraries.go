package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	chroma "github.com/amikos-tech/chroma-go/pkg/api/v2"
	"golang.org/x/sync/errgroup"

	"github.com/caprag/caprag/config"
	"github.com/caprag/caprag/embed"
	"github.com/caprag/caprag/lexicon"
	"github.com/caprag/caprag/passage"
	"github.com/caprag/caprag/rag"
)

// SharedLibrary is the library every question reads: the books the bot's operator loads with the
// command line. Every other library belongs to one Discord server and is named by its ID.
const SharedLibrary = ""

// ErrLibraryName is returned for a library name that is not a Discord server ID.
var ErrLibraryName = errors.New("a library is named by a Discord server ID (digits)")

// CheckLibrary reports whether id names a library: "" (shared) or a Discord snowflake.
func CheckLibrary(id string) error {
	if id == SharedLibrary {
		return nil
	}
	if len(id) > 20 || strings.Trim(id, "0123456789") != "" {
		return fmt.Errorf("%q: %w", id, ErrLibraryName)
	}
	return nil
}

// Libraries are the books of every library: the shared one and one per Discord server, each a
// store of its own — the embedded store in a folder (DATA_DIR/books for the shared library,
// DATA_DIR/servers/ID/books for a server's), or a Chroma collection (CHROMA_COLLECTION, and
// CHROMA_COLLECTION-ID) — opened when first used and kept open. A question asked in a server
// reads a Scope: that server's books and the shared ones, never another server's.
//
// Books another process changes (`caprag ingest --server ID` beside a running bot) are read again
// when a scope that holds them is taken and its library was last checked more than the refresh
// interval ago.
type Libraries struct {
	open func(ctx context.Context, library string) (Store, error)
	list func(ctx context.Context) ([]string, error)
	// exists reports whether a server's library holds anything yet (nil: always); a scope
	// does not open one that does not, so that a question creates nothing (no folder, no
	// collection).
	exists  func(ctx context.Context, library string) (bool, error)
	closers []func() error
	refresh time.Duration
	now     func() time.Time

	mu       sync.Mutex
	libs     map[string]*library
	absent   map[string]time.Time // library → when it was last found not to exist
	fallback Store
	lexicons byVersion[*lexicon.Lexicon]
	contents byVersion[[]rag.Heading]
}

// byVersion keeps what is built for the scopes that read two libraries (their lexicons, their
// tables of contents), by the scope's version: a few, the oldest dropped first.
type byVersion[T any] struct {
	mu    sync.Mutex
	m     map[string]T
	order []string
}

const keptPerVersion = 16

// get returns what is kept for key, or builds and keeps it (what fails to build is not kept).
func (c *byVersion[T]) get(key string, build func() (T, error)) (T, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.m[key]; ok {
		return v, nil
	}
	v, err := build()
	if err != nil {
		return v, err
	}
	if c.m == nil {
		c.m = map[string]T{}
	}
	if len(c.order) == keptPerVersion {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
	c.m[key] = v
	c.order = append(c.order, key)
	return v, nil
}

// library is one open library.
type library struct {
	open    sync.Mutex // held while opening
	s       Store
	refresh sync.Mutex // held while reading the books again
	checked time.Time  // guarded by Libraries.mu
}

// LibrariesOptions tune OpenLibraries.
type LibrariesOptions struct {
	// Refresh is how often a library is checked for another process's changes (BOOKS_REFRESH;
	// 0: never).
	Refresh time.Duration
	// Waiting hears that a change waits for another process (Options.Waiting).
	Waiting func(holder string)
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Embed are the embedder's options.
	Embed []embed.Option
}

// OpenLibraries opens the libraries the settings name (the shared one at once).
func OpenLibraries(ctx context.Context, cfg config.Config, lo LibrariesOptions) (*Libraries, error) {
	e, err := embed.New(cfg, lo.Embed...)
	if err != nil {
		return nil, err
	}
	opts := Options{Embedder: e, Mode: Mode(cfg.SearchMode), LockTimeout: cfg.StoreLockTimeout, Waiting: lo.Waiting}
	if lo.Now == nil {
		lo.Now = time.Now
	}
	l := &Libraries{refresh: lo.Refresh, now: lo.Now, libs: map[string]*library{}}
	switch cfg.VectorStore {
	case "chroma":
		co := ChromaOptions{URL: cfg.ChromaURL, Collection: cfg.ChromaCollection, Tenant: cfg.ChromaTenant, Database: cfg.ChromaDatabase, LockDir: cfg.DataDir}
		l.open = func(ctx context.Context, lib string) (Store, error) {
			c := co
			c.Collection = LibraryCollection(co.Collection, lib)
			s, err := OpenChroma(ctx, c, opts)
			if err != nil {
				return nil, err
			}
			return s, nil
		}
		l.list = func(ctx context.Context) ([]string, error) { return chromaLibraries(ctx, co) }
		client, err := chroma.NewHTTPClient(chroma.WithBaseURL(co.URL), chroma.WithDatabaseAndTenant(co.Database, co.Tenant))
		if err != nil {
			return nil, fmt.Errorf("Chroma client for %s: %w", co.URL, err)
		}
		l.closers = append(l.closers, client.Close)
		l.exists = func(ctx context.Context, lib string) (bool, error) {
			cols, err := client.ListCollections(ctx, chroma.ListWithLimit(100000))
			if err != nil {
				return false, fmt.Errorf("listing the collections of the Chroma server at %s: %w", co.URL, err)
			}
			name := LibraryCollection(co.Collection, lib)
			return slices.ContainsFunc(cols, func(c chroma.Collection) bool { return c.Name() == name }), nil
		}
	case "embedded", "":
		l.open = func(ctx context.Context, lib string) (Store, error) {
			s, err := OpenEmbedded(ctx, LibraryDir(cfg.DataDir, lib), opts)
			if err != nil {
				return nil, err
			}
			return s, nil
		}
		l.list = func(context.Context) ([]string, error) { return folderLibraries(cfg.DataDir) }
		l.exists = func(_ context.Context, lib string) (bool, error) { return stored(LibraryDir(cfg.DataDir, lib)), nil }
	default:
		return nil, fmt.Errorf("VECTOR_STORE=%q is not valid: accepted values are embedded, chroma", cfg.VectorStore)
	}
	if _, err := l.Library(ctx, SharedLibrary); err != nil {
		return nil, err
	}
	return l, nil
}

// NewLibraries returns libraries whose stores open returns (tests: stores in memory).
func NewLibraries(open func(ctx context.Context, library string) (Store, error)) *Libraries {
	return &Libraries{open: open, now: time.Now, libs: map[string]*library{}}
}

// LibraryDir is the folder of a library's embedded store.
func LibraryDir(dataDir, lib string) string {
	if lib == SharedLibrary {
		return filepath.Join(dataDir, "books")
	}
	return filepath.Join(dataDir, "servers", lib, "books")
}

// LibraryCollection is the Chroma collection of a library.
func LibraryCollection(base, lib string) string {
	if lib == SharedLibrary {
		return base
	}
	return base + "-" + lib
}

// folderLibraries lists the servers with a library folder.
func folderLibraries(dataDir string) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(dataDir, "servers"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing the libraries: %w", err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && CheckLibrary(e.Name()) == nil && e.Name() != "" {
			if stored(LibraryDir(dataDir, e.Name())) {
				out = append(out, e.Name())
			}
		}
	}
	return out, nil
}

// stored reports whether a folder holds an embedded library: its manifest, or a store of the
// format before segments (converted when opened).
func stored(dir string) bool {
	for _, f := range []string{manifestFile, storeFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return true
		}
	}
	return false
}

// chromaLibraries lists the servers with a collection of their own that holds books.
func chromaLibraries(ctx context.Context, co ChromaOptions) ([]string, error) {
	client, err := chroma.NewHTTPClient(chroma.WithBaseURL(co.URL), chroma.WithDatabaseAndTenant(co.Database, co.Tenant))
	if err != nil {
		return nil, fmt.Errorf("Chroma client for %s: %w", co.URL, err)
	}
	defer client.Close()
	var out []string
	for offset := 0; ; offset += 100 {
		cols, err := client.ListCollections(ctx, chroma.ListWithLimit(100), chroma.ListWithOffset(offset))
		if err != nil {
			return nil, fmt.Errorf("listing the collections of the Chroma server at %s: %w", co.URL, err)
		}
		for _, c := range cols {
			if id, ok := strings.CutPrefix(c.Name(), co.Collection+"-"); ok && id != "" && CheckLibrary(id) == nil {
				// A server's collection is created when its books are first read: only one
				// that holds passages is a library.
				if n, err := c.Count(ctx); err == nil && n > 0 {
					out = append(out, id)
				}
			}
		}
		if len(cols) < 100 {
			break
		}
	}
	slices.Sort(out)
	return out, nil
}

// SetFallback sets the books a scope reads when neither its library nor the shared one has any
// (the built-in sample books).
func (l *Libraries) SetFallback(s Store) {
	l.mu.Lock()
	l.fallback = s
	l.mu.Unlock()
}

// Library returns a library's store, opening it on first use.
func (l *Libraries) Library(ctx context.Context, id string) (Store, error) {
	if err := CheckLibrary(id); err != nil {
		return nil, err
	}
	l.mu.Lock()
	lib, ok := l.libs[id]
	if !ok {
		lib = &library{checked: l.now()}
		l.libs[id] = lib
	}
	l.mu.Unlock()
	lib.open.Lock()
	defer lib.open.Unlock()
	if lib.s == nil {
		s, err := l.open(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("opening the library of server %s: %w", libraryName(id), err)
		}
		// Its questions search it: read its books now, not in the first answer.
		if err := s.Load(ctx); err != nil {
			s.Close()
			return nil, fmt.Errorf("reading the library of server %s: %w", libraryName(id), err)
		}
		lib.s = s
	}
	return lib.s, nil
}

func libraryName(id string) string {
	if id == SharedLibrary {
		return "(shared)"
	}
	return id
}

// List returns the servers that have a library (not the shared one), by ID.
func (l *Libraries) List(ctx context.Context) ([]string, error) {
	if l.list == nil {
		l.mu.Lock()
		defer l.mu.Unlock()
		var out []string
		for id := range l.libs {
			if id != SharedLibrary {
				out = append(out, id)
			}
		}
		slices.Sort(out)
		return out, nil
	}
	return l.list(ctx)
}

// Close closes every open library.
func (l *Libraries) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []error
	for _, lib := range l.libs {
		if lib.s != nil {
			errs = append(errs, lib.s.Close())
		}
	}
	for _, c := range l.closers {
		errs = append(errs, c())
	}
	return errors.Join(errs...)
}

// present reports whether a server's library is open or exists; a library found absent is looked
// for again after the refresh interval (at once without one).
func (l *Libraries) present(ctx context.Context, id string) (bool, error) {
	if l.exists == nil {
		return true, nil
	}
	l.mu.Lock()
	_, open := l.libs[id]
	at, absent := l.absent[id]
	recent := absent && l.refresh > 0 && l.now().Sub(at) < l.refresh
	l.mu.Unlock()
	if open {
		return true, nil
	}
	if recent {
		return false, nil
	}
	ok, err := l.exists(ctx, id)
	if err != nil {
		return false, err
	}
	l.mu.Lock()
	if l.absent == nil {
		l.absent = map[string]time.Time{}
	}
	if ok {
		delete(l.absent, id)
	} else {
		l.absent[id] = l.now()
	}
	l.mu.Unlock()
	return ok, nil
}

// refreshed returns a library's store, read again first when another process may have changed
// it (at most once per refresh interval; a refresh already running is not waited for).
func (l *Libraries) refreshed(ctx context.Context, id string) (Store, error) {
	s, err := l.Library(ctx, id)
	if err != nil {
		return nil, err
	}
	r, ok := s.(interface {
		Refresh(ctx context.Context) (bool, error)
	})
	if !ok || l.refresh <= 0 {
		return s, nil
	}
	l.mu.Lock()
	lib := l.libs[id]
	due := l.now().Sub(lib.checked) >= l.refresh
	if due {
		lib.checked = l.now()
	}
	l.mu.Unlock()
	if due && lib.refresh.TryLock() {
		defer lib.refresh.Unlock()
		if _, err := r.Refresh(ctx); err != nil {
			return nil, fmt.Errorf("reading the books of server %s again: %w", libraryName(id), err)
		}
	}
	return s, nil
}

// Scope returns the books the questions of a library read: its own and the shared ones ("": the
// shared ones alone). It implements rag.Scoper.
func (l *Libraries) Scope(ctx context.Context, id string) (rag.Retriever, error) {
	sc, err := l.scope(ctx, id)
	if err != nil {
		return nil, err
	}
	return sc, nil
}

func (l *Libraries) scope(ctx context.Context, id string) (*Scope, error) {
	ids := []string{SharedLibrary}
	if id != SharedLibrary {
		ids = []string{id, SharedLibrary} // the server's books first, on equal scores
	}
	sc := &Scope{library: id, lexicons: &l.lexicons, contents: &l.contents}
	for _, lid := range ids {
		if lid != SharedLibrary {
			ok, err := l.present(ctx, lid)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
		}
		s, err := l.refreshed(ctx, lid)
		if err != nil {
			return nil, err
		}
		bs, err := s.Books(ctx)
		if err != nil {
			return nil, err
		}
		if len(bs) > 0 {
			sc.parts = append(sc.parts, part{lid, s})
		}
	}
	l.mu.Lock()
	fb := l.fallback
	l.mu.Unlock()
	if len(sc.parts) == 0 && fb != nil {
		sc.parts = []part{{SharedLibrary, fb}}
	}
	return sc, nil
}

var _ rag.Scoper = (*Libraries)(nil)

// Scope is the books of one library and the shared ones, searched as one: each library is
// searched and the results merged by score (the server's first on equal scores), references
// resolved in every library, book lists and word counts summed. With books in one library only,
// every call goes to that library's store unchanged.
type Scope struct {
	library  string
	parts    []part
	lexicons *byVersion[*lexicon.Lexicon]
	contents *byVersion[[]rag.Heading]
}

type part struct {
	library string
	s       Store
}

var (
	_ rag.Retriever         = (*Scope)(nil)
	_ rag.ReferenceResolver = (*Scope)(nil)
	_ rag.TitleFinder       = (*Scope)(nil)
	_ rag.Library           = (*Scope)(nil)
)

// Retrieve searches every library of the scope and keeps the opts.K best documents.
func (sc *Scope) Retrieve(ctx context.Context, query string, opts rag.SearchOptions) ([]rag.Document, error) {
	switch len(sc.parts) {
	case 0:
		return nil, nil
	case 1:
		return sc.parts[0].s.Retrieve(ctx, query, opts)
	}
	lists := make([][]rag.Document, len(sc.parts))
	g, gctx := errgroup.WithContext(ctx)
	for i, p := range sc.parts {
		g.Go(func() error {
			docs, err := p.s.Retrieve(gctx, query, opts)
			lists[i] = docs
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var all []rag.Document
	for _, l := range lists {
		all = append(all, l...)
	}
	slices.SortStableFunc(all, func(a, b rag.Document) int { return cmp.Compare(b.Score, a.Score) })
	k := opts.K
	if k <= 0 {
		k = 5
	}
	if len(all) > k {
		all = all[:k]
	}
	return all, nil
}

// Resolve follows a reference in every library of the scope: a page reference in the library
// that holds its book.
func (sc *Scope) Resolve(ctx context.Context, from rag.Document, ref passage.Reference, opts rag.SearchOptions) ([]rag.Document, error) {
	k := opts.K
	if k <= 0 {
		k = 3
	}
	var out []rag.Document
	for _, p := range sc.parts {
		r, ok := p.s.(rag.ReferenceResolver)
		if !ok {
			continue
		}
		docs, err := r.Resolve(ctx, from, ref, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, docs...)
		if len(out) >= k {
			return out[:k], nil
		}
	}
	return out, nil
}

// Mentions returns the section titles of the scope's books that a text names.
func (sc *Scope) Mentions(ctx context.Context, text string) ([]passage.Reference, error) {
	var out []passage.Reference
	for _, p := range sc.parts {
		tf, ok := p.s.(rag.TitleFinder)
		if !ok {
			continue
		}
		refs, err := tf.Mentions(ctx, text)
		if err != nil {
			return nil, err
		}
		for _, r := range refs {
			if !slices.ContainsFunc(out, func(o passage.Reference) bool { return strings.EqualFold(o.Target, r.Target) }) {
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// Contents lists the sections of the scope's books in reading order, the server's books first.
// The whole list is the same slice for as long as the books do not change (a model's prompt
// prepares it once).
func (sc *Scope) Contents(ctx context.Context, opts rag.SearchOptions) ([]rag.Heading, error) {
	if len(sc.parts) > 1 && len(opts.Books) == 0 && sc.contents != nil {
		v, err := sc.Version(ctx)
		if err != nil {
			return nil, err
		}
		return sc.contents.get(v, func() ([]rag.Heading, error) { return sc.concatContents(ctx, opts) })
	}
	return sc.concatContents(ctx, opts)
}

// concatContents lists every library's sections, the server's first: one library's list as
// its store keeps it.
func (sc *Scope) concatContents(ctx context.Context, opts rag.SearchOptions) ([]rag.Heading, error) {
	var out []rag.Heading
	for _, p := range sc.parts {
		cr, ok := p.s.(rag.ContentsReader)
		if !ok {
			continue
		}
		hs, err := cr.Contents(ctx, opts)
		if err != nil {
			return nil, err
		}
		if out == nil {
			out = slices.Clip(hs) // a second list is appended to a copy, never to the store's
		} else {
			out = append(out, hs...)
		}
	}
	return out, nil
}

// Books lists the scope's books, each with its library, the server's first.
func (sc *Scope) Books(ctx context.Context) ([]rag.BookInfo, error) {
	var out []rag.BookInfo
	for _, p := range sc.parts {
		bs, err := p.s.Books(ctx)
		if err != nil {
			return nil, err
		}
		for _, b := range bs {
			b.Library = p.library
			out = append(out, b)
		}
	}
	return out, nil
}

// Version changes when the books of any library of the scope change. It names the server's
// library only when that library has books, so that servers without books of their own share
// the shared library's cached answers.
func (sc *Scope) Version(ctx context.Context) (string, error) {
	var b strings.Builder
	for _, p := range sc.parts {
		v, err := p.s.Version(ctx)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "%s:%s;", p.library, v)
	}
	return b.String(), nil
}

// Frequency sums the word counts of the scope's libraries (offline.Vocabulary).
func (sc *Scope) Frequency(stem string) (passages, total int) {
	for _, p := range sc.parts {
		if v, ok := p.s.(interface{ Frequency(string) (int, int) }); ok {
			n, t := v.Frequency(stem)
			passages += n
			total += t
		}
	}
	return passages, total
}

// Lexicon returns what the scope's books say about their own words (package lexicon): the one
// library's lexicon, or the books of both libraries linked as one library (built once for a set
// of books, a few kept), so that a server's house rules and the shared books link to each other.
// The shared library's lexicon, linked once per process, is what a server's is relinked from.
func (sc *Scope) Lexicon() *lexicon.Lexicon {
	type lexiconer interface{ Lexicon() *lexicon.Lexicon }
	if len(sc.parts) == 1 {
		if l, ok := sc.parts[0].s.(lexiconer); ok {
			return l.Lexicon()
		}
		return nil
	}
	v, err := sc.Version(context.Background())
	if err != nil || sc.lexicons == nil {
		return nil
	}
	lx, _ := sc.lexicons.get(v, func() (*lexicon.Lexicon, error) {
		var parts []lexicon.Part
		var base *lexicon.Lexicon
		for _, p := range sc.parts {
			if l, ok := p.s.(lexiconer); ok {
				if lx := l.Lexicon(); lx != nil {
					parts = append(parts, lx.Parts...)
					if base == nil || lx.N > base.N {
						base = lx
					}
				}
			}
		}
		// Relinked from the larger library's own lexicon (the shared books, usually): of its
		// passages, only those holding a word of a term the other library changes are read
		// again.
		return lexicon.Relink(base, parts), nil
	})
	return lx
}

// Only returns the store of the scope's one library when only one has books (nil otherwise).
func (sc *Scope) Only() Store {
	if len(sc.parts) == 1 {
		return sc.parts[0].s
	}
	return nil
}

// Library is the server whose books (with the shared ones) the scope reads; "" for the shared
// library alone.
func (sc *Scope) Library() string { return sc.library }

// OpenLibrary opens one library's store alone (the command line's --server), where
// OpenLibraries would open it: the same folder, collection and writer lock.
func OpenLibrary(ctx context.Context, cfg config.Config, lib string, waiting func(holder string), eopts ...embed.Option) (Store, error) {
	if err := CheckLibrary(lib); err != nil {
		return nil, err
	}
	c := cfg
	if lib != SharedLibrary {
		if cfg.VectorStore == "chroma" {
			c.ChromaCollection = LibraryCollection(cfg.ChromaCollection, lib)
		} else {
			c.DataDir = filepath.Dir(LibraryDir(cfg.DataDir, lib))
		}
	}
	return OpenWaiting(ctx, c, waiting, eopts...)
}

// ListLibraries lists the servers that have a library under the settings, without opening them.
func ListLibraries(ctx context.Context, cfg config.Config) ([]string, error) {
	if cfg.VectorStore == "chroma" {
		return chromaLibraries(ctx, ChromaOptions{URL: cfg.ChromaURL, Collection: cfg.ChromaCollection, Tenant: cfg.ChromaTenant, Database: cfg.ChromaDatabase})
	}
	return folderLibraries(cfg.DataDir)
}
