package rag_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/caprag/caprag/rag"
)

// corpus is a fake retriever and resolver: each query (lower case) maps to its documents.
type corpus struct {
	mu      sync.Mutex
	docs    map[string][]rag.Document
	calls   atomic.Int64
	queries []string
	err     error
	block   chan struct{} // when set, Retrieve waits for it
}

func newCorpus() *corpus { return &corpus{docs: map[string][]rag.Document{}} }

func (c *corpus) add(query string, docs ...rag.Document) *corpus {
	c.docs[strings.ToLower(query)] = docs
	return c
}

func (c *corpus) Retrieve(ctx context.Context, query string, _ rag.SearchOptions) ([]rag.Document, error) {
	c.calls.Add(1)
	c.mu.Lock()
	c.queries = append(c.queries, query)
	c.mu.Unlock()
	if c.block != nil {
		select {
		case <-c.block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if c.err != nil {
		return nil, c.err
	}
	return c.docs[strings.ToLower(query)], nil
}

func (c *corpus) Resolve(ctx context.Context, _ rag.Document, ref rag.Reference, opts rag.SearchOptions) ([]rag.Document, error) {
	return c.Retrieve(ctx, ref.Target, opts)
}

func (c *corpus) searched() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.queries...)
}

func doc(book, section, text string, refs ...rag.Reference) rag.Document {
	return rag.Document{ID: book + "/" + section, Book: book, Section: section, Text: text, Match: text, Refs: refs}
}

// scriptedAnalyzer returns its decisions in order, then "sufficient".
type scriptedAnalyzer struct {
	mu        sync.Mutex
	decisions []rag.Analysis
	calls     int
	inputs    []rag.AnalyzeInput
}

func (a *scriptedAnalyzer) Analyze(_ context.Context, in rag.AnalyzeInput) (rag.Analysis, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.inputs = append(a.inputs, in)
	a.calls++
	if len(a.decisions) == 0 {
		return rag.Analysis{Sufficient: true}, nil
	}
	d := a.decisions[0]
	a.decisions = a.decisions[1:]
	return d, nil
}

// neverSufficient always asks for one more query.
type neverSufficient struct{ n atomic.Int64 }

func (a *neverSufficient) Analyze(context.Context, rag.AnalyzeInput) (rag.Analysis, error) {
	n := a.n.Add(1)
	return rag.Analysis{NewQueries: []string{"more " + string(rune('a'+n))}}, nil
}

type fixedExpander []string

func (e fixedExpander) Expand(context.Context, string, int) ([]string, error) { return e, nil }

// echoWriter writes one line per document, citing it.
type echoWriter struct{ calls atomic.Int64 }

func (w *echoWriter) Write(_ context.Context, q string, docs []rag.Document, _ []rag.Turn) (string, error) {
	w.calls.Add(1)
	var b strings.Builder
	for i, d := range docs {
		b.WriteString(d.Section + " [" + string(rune('1'+i)) + "]\n")
	}
	return b.String(), nil
}

type failingWriter struct{}

func (failingWriter) Write(context.Context, string, []rag.Document, []rag.Turn) (string, error) {
	return "", errors.New("model down")
}

type version struct {
	mu sync.Mutex
	v  string
}

func (v *version) Version(context.Context) (string, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.v, nil
}

func (v *version) set(s string) {
	v.mu.Lock()
	v.v = s
	v.mu.Unlock()
}
