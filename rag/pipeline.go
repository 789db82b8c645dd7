package rag

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	gocache "github.com/patrickmn/go-cache"

	"github.com/caprag/caprag/words"
)

// Strategy names, as RETRIEVAL_STRATEGY and --strategy accept them.
const (
	StrategyMultiHop      = "multi-hop"
	StrategyMultiQuestion = "multi-question"
)

// MaxQuestionLength bounds a question, in characters (Discord's option limit is the same).
const MaxQuestionLength = 1000

// Errors a caller shows the user.
var (
	ErrEmptyQuestion   = errors.New("the question is empty")
	ErrQuestionTooLong = fmt.Errorf("the question is longer than %d characters", MaxQuestionLength)
)

// StrategyError is an unknown strategy name.
type StrategyError struct{ Name string }

func (e *StrategyError) Error() string {
	return fmt.Sprintf("unknown strategy %q: accepted values are %s, %s", e.Name, StrategyMultiHop, StrategyMultiQuestion)
}

// Versioner tells the version of the books (it changes when they change).
type Versioner interface {
	Version(ctx context.Context) (string, error)
}

// Scoper gives the books the questions of one library read: that library's own and the shared
// ones, never another library's (store.Libraries implements it). The library "" is the shared
// library alone. The Retriever it returns may also implement ReferenceResolver, Library and
// Versioner, found by type assertion; its Version must differ from every other scope's whenever
// its books differ.
type Scoper interface {
	Scope(ctx context.Context, library string) (Retriever, error)
}

// PipelineOptions configure a Pipeline.
type PipelineOptions struct {
	Retriever Retriever
	Resolver  ReferenceResolver // optional
	Library   Library           // optional: Books
	Versioner Versioner         // optional: cache keys include the version
	// Scoper, when set, replaces Retriever, Resolver, Library and Versioner: each question
	// reads the books of its Request.Library.
	Scoper Scoper
	Models Models
	// ModelsFor, when set, gives the roles for the books a question reads (the scope's
	// retriever): the offline roles read those books' words. Models is used otherwise.
	ModelsFor  func(books Retriever) Models
	Strategy   string // default strategy
	MaxHops    int
	MaxQueries int
	TopK       int
	CacheTTL   time.Duration // 0: no cache
	CacheMax   int
	// WriterShare is the share of a request's remaining time (its context's deadline) kept for
	// the answer writer: retrieval stops at the rest, and the answer is written from what was
	// found by then. 0 means DefaultWriterShare; it has no effect without a deadline.
	WriterShare float64
	Log         *slog.Logger
}

// DefaultWriterShare is the share of the answer's time kept for the writer.
const DefaultWriterShare = 0.3

// Pipeline answers questions: strategy, answer writer, cache.
type Pipeline struct {
	o     PipelineOptions
	cache *gocache.Cache
	// flights are the runs under way, by cache key: a question asked again while its run is
	// under way waits for that run and hears its hops (singleflight).
	mu      sync.Mutex
	flights map[string]*flight
}

// NewPipeline checks the options and builds a pipeline.
func NewPipeline(o PipelineOptions) (*Pipeline, error) {
	if (o.Retriever == nil && o.Scoper == nil) || (o.Models.Writer == nil && o.ModelsFor == nil) {
		return nil, errors.New("a pipeline needs a retriever and a writer")
	}
	if o.Strategy == "" {
		o.Strategy = StrategyMultiHop
	}
	if !validStrategy(o.Strategy) {
		return nil, &StrategyError{o.Strategy}
	}
	o.MaxHops = cmpOr(o.MaxHops, 3)
	o.MaxQueries = cmpOr(o.MaxQueries, 4)
	o.TopK = cmpOr(o.TopK, 5)
	if o.WriterShare <= 0 || o.WriterShare >= 1 {
		o.WriterShare = DefaultWriterShare
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	p := &Pipeline{o: o, flights: map[string]*flight{}}
	if o.CacheTTL > 0 {
		p.cache = gocache.New(o.CacheTTL, o.CacheTTL)
	}
	return p, nil
}

func cmpOr(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

func validStrategy(s string) bool { return s == StrategyMultiHop || s == StrategyMultiQuestion }

// Strategy builds the named strategy over the pipeline's books (the shared library's, with a
// Scoper).
func (p *Pipeline) Strategy(name string) (Strategy, error) {
	sh, err := p.shelf(context.Background(), "")
	if err != nil {
		return nil, err
	}
	return p.strategy(name, sh)
}

func (p *Pipeline) strategy(name string, sh shelf) (Strategy, error) {
	switch name {
	case StrategyMultiHop:
		return MultiHop{Retriever: sh.retriever, Resolver: sh.resolver, Expander: sh.models.Expander, Analyzer: sh.models.Analyzer, TopK: p.o.TopK, MaxHops: p.o.MaxHops, MaxQueries: p.o.MaxQueries}, nil
	case StrategyMultiQuestion:
		return MultiQuestion{Retriever: sh.retriever, Expander: sh.models.Expander, TopK: p.o.TopK, MaxQueries: p.o.MaxQueries}, nil
	}
	return nil, &StrategyError{name}
}

// shelf is the books one question reads, with what it can do and the roles that read them.
type shelf struct {
	retriever Retriever
	resolver  ReferenceResolver
	library   Library
	versioner Versioner
	models    Models
}

// shelf returns the books of a library (with a Scoper) or the pipeline's books.
func (p *Pipeline) shelf(ctx context.Context, library string) (shelf, error) {
	if p.o.Scoper == nil {
		sh := shelf{retriever: p.o.Retriever, resolver: p.o.Resolver, library: p.o.Library, versioner: p.o.Versioner, models: p.o.Models}
		if p.o.ModelsFor != nil {
			sh.models = p.o.ModelsFor(p.o.Retriever)
		}
		return sh, nil
	}
	r, err := p.o.Scoper.Scope(ctx, library)
	if err != nil {
		return shelf{}, fmt.Errorf("opening the books: %w", err)
	}
	sh := shelf{retriever: r, models: p.o.Models}
	sh.resolver, _ = r.(ReferenceResolver)
	sh.library, _ = r.(Library)
	sh.versioner, _ = r.(Versioner)
	if p.o.ModelsFor != nil {
		sh.models = p.o.ModelsFor(r)
	}
	return sh, nil
}

// Books lists the books the questions of a library read (its own and the shared ones; "" the
// shared library alone, or the pipeline's books without a Scoper).
func (p *Pipeline) Books(ctx context.Context, library string) ([]BookInfo, error) {
	sh, err := p.shelf(ctx, library)
	if err != nil {
		return nil, err
	}
	if sh.library == nil {
		return nil, nil
	}
	return sh.library.Books(ctx)
}

// Result is an answer with the state its strategy left (for evaluation).
type Result struct {
	Answer
	State State
}

// Answer answers one question.
func (p *Pipeline) Answer(ctx context.Context, req Request) (Answer, error) {
	r, err := p.Run(ctx, req)
	return r.Answer, err
}

// Run answers one question and returns the strategy's state too (empty for a cached answer).
func (p *Pipeline) Run(ctx context.Context, req Request) (Result, error) {
	start := time.Now()
	question := strings.TrimSpace(req.Question)
	switch {
	case question == "":
		return Result{}, ErrEmptyQuestion
	case utf8.RuneCountInString(question) > MaxQuestionLength:
		return Result{}, ErrQuestionTooLong
	}
	strategy := cmp.Or(req.Strategy, p.o.Strategy)
	if !validStrategy(strategy) {
		return Result{}, &StrategyError{strategy}
	}
	sh, err := p.shelf(ctx, req.Library)
	if err != nil {
		return Result{}, err
	}
	ctx, calls := withModelCalls(ctx)
	if len(req.History) > 0 && sh.models.Rewriter != nil {
		q, err := sh.models.Rewriter.Rewrite(ctx, question, req.History)
		if err != nil {
			return Result{}, fmt.Errorf("rewriting the follow-up: %w", err)
		}
		if strings.TrimSpace(q) != "" {
			question = strings.TrimSpace(q)
		}
	}
	key, err := p.key(ctx, sh, question, strategy, req.Books)
	if err != nil {
		return Result{}, err
	}
	if p.cache != nil {
		if v, ok := p.cache.Get(key); ok {
			a := v.(Answer)
			a.Cached = true
			a.Question = question
			a.LLMCalls = int(calls.Load())
			a.Elapsed = time.Since(start)
			return Result{Answer: a}, nil
		}
	}
	res, err := p.once(ctx, key, req.Progress, func(progress ProgressFunc) (Result, error) {
		return p.run(ctx, sh, key, question, strategy, req, progress)
	})
	if err != nil {
		return Result{}, err
	}
	res.Answer.LLMCalls += int(calls.Load()) // the follow-up's rewrite; the run counted its own
	res.Answer.Question = question           // the standalone rewrite for a follow-up
	res.Answer.Elapsed = time.Since(start)
	return res, nil
}

func (p *Pipeline) run(ctx context.Context, sh shelf, key, question, strategy string, req Request, progress ProgressFunc) (Result, error) {
	st, err := p.strategy(strategy, sh)
	if err != nil {
		return Result{}, err
	}
	ctx, calls := withModelCalls(ctx) // this run's model requests, retries included
	// Retrieval gets the time left less the writer's share; when it runs out, the answer is
	// written from what was found by then.
	sctx, cancel := ctx, context.CancelFunc(func() {})
	if d, ok := ctx.Deadline(); ok {
		left := time.Until(d)
		sctx, cancel = context.WithDeadline(ctx, d.Add(-time.Duration(float64(left)*p.o.WriterShare)))
	}
	state, err := st.Execute(sctx, State{Question: question, Books: req.Books, Progress: progress})
	cancel()
	if err != nil {
		if ctx.Err() != nil || !errors.Is(sctx.Err(), context.DeadlineExceeded) || len(state.Context()) == 0 {
			return Result{}, err
		}
		p.o.Log.Warn("retrieval ran out of its share of the answer's time: answering from the passages found so far", "question", question, "error", err.Error())
	}
	state.Progress = nil // the run is over
	docs := state.Context()
	a := Answer{Strategy: strategy, Hops: state.Hops}
	if len(docs) == 0 {
		a.Text = "The books I have do not cover this: no passage matched the question."
	} else {
		text, err := sh.models.Writer.Write(ctx, question, docs, req.History)
		if err != nil {
			return Result{}, fmt.Errorf("writing the answer: %w", err)
		}
		a.Text, a.Sources, a.Context = cite(text, docs)
	}
	a.LLMCalls = int(calls.Load())
	if p.cache != nil {
		if p.o.CacheMax > 0 && p.cache.ItemCount() >= p.o.CacheMax {
			p.evictOldest()
		}
		p.cache.SetDefault(key, a)
	}
	return Result{Answer: a, State: state}, nil
}

// flight is one run under way and the callers waiting for it.
type flight struct {
	done    chan struct{}
	res     Result
	err     error
	joiners int // callers that joined the run (under Pipeline.mu)

	mu        sync.Mutex
	listeners []*listener
	events    []Progress // sent so far, replayed to a caller who joins late
}

// listener is a caller's progress func with the caller's context.
type listener struct {
	ctx context.Context
	fn  ProgressFunc
}

// listen adds a caller's progress func and replays the events sent so far to it.
func (f *flight) listen(ctx context.Context, fn ProgressFunc) *listener {
	if fn == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range f.events {
		fn(ctx, e)
	}
	l := &listener{ctx, fn}
	f.listeners = append(f.listeners, l)
	return l
}

// unlisten removes a caller who stopped waiting.
func (f *flight) unlisten(l *listener) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listeners = slices.DeleteFunc(f.listeners, func(o *listener) bool { return o == l })
}

// send passes an event to every caller waiting for the run, in order.
func (f *flight) send(_ context.Context, e Progress) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, e)
	for _, l := range f.listeners {
		l.fn(l.ctx, e)
	}
}

// once runs fn for key, or, when a run for key is under way, waits for its result. Every caller
// hears the run's progress through its own progress func (nil: none), from the start. A caller
// that joined stops waiting when its ctx is done.
func (p *Pipeline) once(ctx context.Context, key string, progress ProgressFunc, fn func(ProgressFunc) (Result, error)) (Result, error) {
	p.mu.Lock()
	f, joined := p.flights[key]
	if joined {
		f.joiners++
	} else {
		f = &flight{done: make(chan struct{})}
		p.flights[key] = f
	}
	l := f.listen(ctx, progress) // before the run can end: no event is missed
	p.mu.Unlock()
	if joined {
		select {
		case <-f.done:
		case <-ctx.Done():
			f.unlisten(l)
			return Result{}, context.Cause(ctx)
		}
		res := f.res
		res.Answer.Sources = slices.Clone(res.Answer.Sources)
		res.Answer.Context = slices.Clone(res.Answer.Context)
		return res, f.err
	}
	finished := false
	defer func() {
		if !finished { // fn panicked: the callers waiting get an error, this one the panic
			f.err = errors.New("answering the question failed unexpectedly")
		}
		p.mu.Lock()
		delete(p.flights, key)
		p.mu.Unlock()
		close(f.done)
	}()
	f.res, f.err = fn(f.send)
	finished = true
	p.mu.Lock()
	shared := f.joiners > 0
	p.mu.Unlock()
	res := f.res
	if shared {
		res.Answer.Sources = slices.Clone(res.Answer.Sources)
	}
	return res, f.err
}

// evictOldest drops the entry that expires first, keeping the cache within CACHE_MAX_ENTRIES.
func (p *Pipeline) evictOldest() {
	var (
		oldest string
		when   int64
	)
	for k, it := range p.cache.Items() {
		if oldest == "" || it.Expiration < when {
			oldest, when = k, it.Expiration
		}
	}
	if oldest != "" {
		p.cache.Delete(oldest)
	}
}

// key is the cache key: normalised question, strategy, book filter and the version of the books
// read (with a Scoper, the scope's: questions of scopes with other books never share a key).
func (p *Pipeline) key(ctx context.Context, sh shelf, question, strategy string, books []string) (string, error) {
	version := ""
	if sh.versioner != nil {
		v, err := sh.versioner.Version(ctx)
		if err != nil {
			return "", fmt.Errorf("reading the books' version: %w", err)
		}
		version = v
	}
	bs := make([]string, len(books))
	for i, b := range books {
		bs[i] = strings.ToLower(strings.TrimSpace(b))
	}
	slices.Sort(bs)
	return strings.Join([]string{NormalizeQuestion(question), strategy, strings.Join(bs, ","), version}, "\x00"), nil
}

// NormalizeQuestion folds case, punctuation and spacing, so "Can I grapple?" and
// "can i  grapple" are the same question.
func NormalizeQuestion(q string) string {
	return words.Normalize(q)
}
