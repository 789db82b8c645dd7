// Package store keeps the passages of the ingested books and finds them again: hybrid search (BM25
// beside vector similarity, fused by reciprocal rank fusion) and reference resolution, over one of
// two backends with the same behaviour: an embedded store persisted under DATA_DIR, or a Chroma
// server.
package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/caprag/caprag/config"
	"github.com/caprag/caprag/embed"
	"github.com/caprag/caprag/ingest"
	"github.com/caprag/caprag/rag"
)

// Store is what the commands, the pipeline and the bot use.
type Store interface {
	rag.Retriever
	rag.ReferenceResolver
	rag.Library
	// Load reads every book now (otherwise the first search that needs it does); the lexicon
	// is linked by the first search that returns references, or by Lexicon.
	Load(ctx context.Context) error
	// Version changes whenever the books change (answers cached under an old version are stale).
	Version(ctx context.Context) (string, error)
	// ReplaceBook stores a book, replacing any earlier version of it.
	ReplaceBook(ctx context.Context, b ingest.Book) error
	// ReplaceBooks stores several books at once (one rebuild, one save); progress, when not nil,
	// hears how many passages are embedded so far.
	ReplaceBooks(ctx context.Context, books []ingest.Book, progress func(embedded, total int)) error
	// RemoveBook deletes a book; ErrNoBook when there is none of that name.
	RemoveBook(ctx context.Context, name string) error
	// Reindex embeds the stored books again with the configured embedder: those another
	// embedder made, or every book with force. It returns how many books it embedded.
	Reindex(ctx context.Context, force bool, progress func(embedded, total int)) (int, error)
	Close() error
}

// ErrNoBook is returned when removing a book that was never ingested.
var ErrNoBook = errors.New("no book of that name")

// Mode selects the rankings a search fuses.
type Mode string

// Search modes: both rankings fused, BM25 alone, vectors alone, or Auto (the default).
const (
	Hybrid  Mode = "hybrid"
	Lexical Mode = "lexical"
	Vector  Mode = "vector"
	// Auto is Lexical with the local hashed-word embedder and Hybrid with any other. The local
	// vectors are bags of the same stemmed words BM25 matches, without its term weighting or
	// length normalisation: fusing them adds a weaker copy of the lexical ranking, not a second
	// view (measured on the SRD dev set, BM25 alone is ahead on every figure; README, "books").
	// Their vectors are stored anyway, so SEARCH_MODE=hybrid needs no new ingest.
	Auto Mode = "auto"
)

// resolve turns Auto (or "") into the mode used with emb.
func (m Mode) resolve(emb embed.Embedder) Mode {
	if m != "" && m != Auto {
		return m
	}
	if _, hashed := emb.(*embed.Local); hashed {
		return Lexical
	}
	return Hybrid
}

// Options configure a store.
type Options struct {
	Embedder embed.Embedder
	Mode     Mode
	// LockTimeout bounds how long a change waits while another process changes the same books
	// (STORE_LOCK_TIMEOUT; 0: it fails at once when they are locked).
	LockTimeout time.Duration
	// Waiting, when set, hears that a change waits for another process (who holds the lock).
	Waiting func(holder string)
}

// Open opens the store the settings name, with the embedder they name (built with eopts).
func Open(ctx context.Context, cfg config.Config, eopts ...embed.Option) (Store, error) {
	return OpenWaiting(ctx, cfg, nil, eopts...)
}

// OpenWaiting is Open with a function that hears when a change waits for another process that
// is changing the books (Options.Waiting).
func OpenWaiting(ctx context.Context, cfg config.Config, waiting func(holder string), eopts ...embed.Option) (Store, error) {
	e, err := embed.New(cfg, eopts...)
	if err != nil {
		return nil, err
	}
	opts := Options{Embedder: e, Mode: Mode(cfg.SearchMode), LockTimeout: cfg.StoreLockTimeout, Waiting: waiting}
	switch cfg.VectorStore {
	case "chroma":
		s, err := OpenChroma(ctx, ChromaOptions{URL: cfg.ChromaURL, Collection: cfg.ChromaCollection, Tenant: cfg.ChromaTenant, Database: cfg.ChromaDatabase, LockDir: cfg.DataDir}, opts)
		if err != nil {
			return nil, err // not a nil *Chroma in a non-nil Store
		}
		return s, nil
	case "embedded", "":
		s, err := OpenEmbedded(ctx, filepath.Join(cfg.DataDir, "books"), opts)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	return nil, fmt.Errorf("VECTOR_STORE=%q is not valid: accepted values are embedded, chroma", cfg.VectorStore)
}
