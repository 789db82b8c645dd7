package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/caprag/caprag/embed"
	"github.com/caprag/caprag/lexicon"
	"github.com/caprag/caprag/llm"
	"github.com/caprag/caprag/offline"
	"github.com/caprag/caprag/rag"
	"github.com/caprag/caprag/samplebooks"
	"github.com/caprag/caprag/store"
)

// openStore opens the store the settings name; waiting, when set, hears that a change waits for
// another process that is changing the books.
func (a *app) openStore(ctx context.Context, waiting func(holder string)) (store.Store, error) {
	s, err := store.OpenWaiting(ctx, a.cfg, waiting, embed.WithHTTPClient(a.httpClient()))
	if err != nil {
		return nil, fmt.Errorf("opening the books: %w", err)
	}
	return s, nil
}

// openBooks opens the ingested books, or the built-in sample books when none are ingested.
func (a *app) openBooks(ctx context.Context) (store.Store, bool, error) {
	s, err := a.openStore(ctx, nil)
	if err != nil {
		return nil, false, err
	}
	books, err := s.Books(ctx)
	if err != nil {
		s.Close()
		return nil, false, fmt.Errorf("listing the books: %w", err)
	}
	if len(books) > 0 {
		// Everything that opens the books searches them: read them now.
		if err := s.Load(ctx); err != nil {
			s.Close()
			return nil, false, err
		}
		return s, false, nil
	}
	s.Close()
	mem := store.NewMemory(store.Options{Embedder: embed.NewLocal(embed.LocalDims), Mode: store.Mode(a.cfg.SearchMode)})
	sample, err := samplebooks.Books(ctx)
	if err != nil {
		return nil, false, err
	}
	if err := mem.ReplaceBooks(ctx, sample, nil); err != nil {
		return nil, false, err
	}
	a.log.Info("no books ingested yet: answering from the built-in sample books (caprag ingest PATH loads yours)")
	return mem, true, nil
}

// httpClient returns the one pooled, retrying HTTP client shared by the models and the
// embedders of this run.
func (a *app) httpClient() *http.Client {
	a.httpOnce.Do(func() { a.http = llm.NewHTTPClient(llm.HTTPOptionsFrom(a.cfg, a.log)) })
	return a.http
}

// models returns the offline rules or the configured language model; the offline writer weighs
// words by how common they are in the books of s.
func (a *app) models(s store.Store) (rag.Models, error) {
	if a.cfg.LLMProvider == "offline" {
		if a.cfg.LLMProviderDefaulted {
			a.log.Info("no model configured (OPENAI_API_KEY, OPENAI_BASE_URL, ANTHROPIC_API_KEY or LLM_PROVIDER): answering offline, by quoting the books")
		}
		v, _ := s.(offline.Vocabulary)
		return offline.Models(v), nil
	}
	if err := a.cfg.RequireModel(); err != nil {
		return rag.Models{}, err
	}
	m, err := llm.New(a.cfg, llm.Options{HTTPClient: a.httpClient(), Log: a.log})
	if err != nil {
		return rag.Models{}, err
	}
	return m, nil
}

// openPipeline builds the answering pipeline from the settings. close releases the store.
func (a *app) openPipeline(ctx context.Context) (*rag.Pipeline, func(), error) {
	s, _, err := a.openBooks(ctx)
	if err != nil {
		return nil, nil, err
	}
	// Answers follow the books' references: link their lexicon now, not in the first answer.
	if lx, ok := s.(interface{ Lexicon() *lexicon.Lexicon }); ok {
		lx.Lexicon()
	}
	models, err := a.models(s)
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	ttl := a.cfg.CacheTTL
	if a.cfg.CacheMaxEntries == 0 {
		ttl = 0 // CACHE_MAX_ENTRIES=0 disables the cache
	}
	p, err := rag.NewPipeline(rag.PipelineOptions{
		Retriever: s, Resolver: s, Library: s, Versioner: s, Models: models,
		Strategy: a.cfg.RetrievalStrategy, MaxHops: a.cfg.MaxHops, MaxQueries: a.cfg.MaxQueries, TopK: a.cfg.TopK,
		CacheTTL: ttl, CacheMax: a.cfg.CacheMaxEntries, Log: a.log,
	})
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	return p, func() { s.Close() }, nil
}

// knownBook checks a --book name against the library (case-insensitive): an unknown name is a
// usage error that lists the books there are.
func knownBook(ctx context.Context, lib rag.Library, name string) error {
	books, err := lib.Books(ctx)
	if err != nil {
		return fmt.Errorf("listing the books: %w", err)
	}
	names := make([]string, len(books))
	for i, b := range books {
		if strings.EqualFold(b.Name, name) {
			return nil
		}
		names[i] = fmt.Sprintf("%q", b.Name)
	}
	if len(names) == 0 {
		return usagef("--book %q: no books are ingested (caprag ingest PATH...)", name)
	}
	return usagef("--book %q: no book of that name; the books are %s", name, strings.Join(names, ", "))
}
