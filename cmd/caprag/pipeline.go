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

// openStore opens the shared library's store; waiting, when set, hears that a change waits for
// another process that is changing the books.
func (a *app) openStore(ctx context.Context, waiting func(holder string)) (store.Store, error) {
	return a.openLibrary(ctx, store.SharedLibrary, waiting)
}

// openLibrary opens one library's store: a server's (--server ID) or the shared one ("").
func (a *app) openLibrary(ctx context.Context, lib string, waiting func(holder string)) (store.Store, error) {
	s, err := store.OpenLibrary(ctx, a.cfg, lib, waiting, embed.WithHTTPClient(a.httpClient()))
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
	mem, err := a.sampleBooks(ctx)
	if err != nil {
		return nil, false, err
	}
	a.log.Info("no books ingested yet: answering from the built-in sample books (caprag ingest PATH loads yours)")
	return mem, true, nil
}

// sampleBooks returns the built-in sample books in a store in memory.
func (a *app) sampleBooks(ctx context.Context) (store.Store, error) {
	mem := store.NewMemory(store.Options{Embedder: embed.NewLocal(embed.LocalDims), Mode: store.Mode(a.cfg.SearchMode)})
	sample, err := samplebooks.Books(ctx)
	if err != nil {
		return nil, err
	}
	if err := mem.ReplaceBooks(ctx, sample, nil); err != nil {
		return nil, err
	}
	return mem, nil
}

// openLibraries opens every library (the shared one at once, the servers' when first used), with
// the sample books answered from by a scope that has no book; waiting, when set, hears that a
// change waits for another process.
func (a *app) openLibraries(ctx context.Context, waiting func(holder string)) (*store.Libraries, error) {
	libs, err := store.OpenLibraries(ctx, a.cfg, store.LibrariesOptions{
		Refresh: a.cfg.BooksRefresh, Waiting: waiting, Embed: []embed.Option{embed.WithHTTPClient(a.httpClient())},
	})
	if err != nil {
		return nil, fmt.Errorf("opening the books: %w", err)
	}
	sample, err := a.sampleBooks(ctx)
	if err != nil {
		libs.Close()
		return nil, err
	}
	libs.SetFallback(sample)
	return libs, nil
}

// library checks a --server flag's value.
func library(server string) (string, error) {
	if err := store.CheckLibrary(server); err != nil {
		return "", usagef("--server %q: a Discord server ID (digits; right-click the server with Developer Mode on, Copy Server ID)", server)
	}
	return server, nil
}

// httpClient returns the one pooled, retrying HTTP client shared by the models and the
// embedders of this run.
func (a *app) httpClient() *http.Client {
	a.httpOnce.Do(func() { a.http = llm.NewHTTPClient(llm.HTTPOptionsFrom(a.cfg, a.log)) })
	return a.http
}

// models returns the offline rules or the configured language model. The offline roles read the
// books they answer from (their words' counts): with several libraries, the scope's.
func (a *app) models() (func(books rag.Retriever) rag.Models, error) {
	if a.cfg.LLMProvider == "offline" {
		if a.cfg.LLMProviderDefaulted {
			a.log.Info("no model configured (OPENAI_API_KEY, OPENAI_BASE_URL, ANTHROPIC_API_KEY or LLM_PROVIDER): answering offline, by quoting the books")
		}
		return func(books rag.Retriever) rag.Models {
			if sc, ok := books.(*store.Scope); ok && sc.Only() != nil {
				books = sc.Only() // one library: its store itself, whatever it offers the roles
			}
			v, _ := books.(offline.Vocabulary)
			return offline.Models(v)
		}, nil
	}
	if err := a.cfg.RequireModel(); err != nil {
		return nil, err
	}
	m, err := llm.New(a.cfg, llm.Options{HTTPClient: a.httpClient(), Log: a.log})
	if err != nil {
		return nil, err
	}
	return func(rag.Retriever) rag.Models { return m }, nil
}

// openPipeline builds the answering pipeline from the settings. close releases the books.
func (a *app) openPipeline(ctx context.Context) (*rag.Pipeline, func(), error) {
	p, _, closeAll, err := a.openServing(ctx)
	return p, closeAll, err
}

// openServing builds the answering pipeline over every library: each question reads its
// Request.Library with the shared books.
func (a *app) openServing(ctx context.Context) (*rag.Pipeline, *store.Libraries, func(), error) {
	libs, err := a.openLibraries(ctx, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	if shared, err := libs.Library(ctx, store.SharedLibrary); err == nil {
		if bs, err := shared.Books(ctx); err == nil && len(bs) == 0 {
			a.log.Info("no shared books ingested yet: a question whose server has no books either is answered from the built-in sample books (caprag ingest PATH loads yours)")
		}
		// Answers follow the books' references: link the shared books' lexicon now, not in the
		// first answer.
		if lx, ok := shared.(interface{ Lexicon() *lexicon.Lexicon }); ok {
			lx.Lexicon()
		}
	}
	models, err := a.models()
	if err != nil {
		libs.Close()
		return nil, nil, nil, err
	}
	ttl := a.cfg.CacheTTL
	if a.cfg.CacheMaxEntries == 0 {
		ttl = 0 // CACHE_MAX_ENTRIES=0 disables the cache
	}
	p, err := rag.NewPipeline(rag.PipelineOptions{
		Scoper: libs, ModelsFor: models,
		Strategy: a.cfg.RetrievalStrategy, MaxHops: a.cfg.MaxHops, MaxQueries: a.cfg.MaxQueries, TopK: a.cfg.TopK,
		CacheTTL: ttl, CacheMax: a.cfg.CacheMaxEntries, Log: a.log,
	})
	if err != nil {
		libs.Close()
		return nil, nil, nil, err
	}
	return p, libs, func() { libs.Close() }, nil
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
