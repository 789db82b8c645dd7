package rag_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caprag/caprag/offline"
	"github.com/caprag/caprag/rag"
)

func newPipeline(t testing.TB, c *corpus, v rag.Versioner, max int) *rag.Pipeline {
	t.Helper()
	p, err := rag.NewPipeline(rag.PipelineOptions{
		Retriever: c, Resolver: c, Versioner: v,
		Models:   rag.Models{Analyzer: &scriptedAnalyzer{}, Expander: fixedExpander{"variant"}, Writer: &echoWriter{}},
		CacheTTL: time.Hour, CacheMax: max,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDefaultExplicitInvalidStrategy(t *testing.T) {
	c := newCorpus().add("q", doc("b", "S", "t"))
	p := newPipeline(t, c, nil, 0)
	a, err := p.Answer(context.Background(), rag.Request{Question: "q"})
	if err != nil || a.Strategy != rag.StrategyMultiHop {
		t.Fatalf("default: %q, %v; want multi-hop", a.Strategy, err)
	}
	a, err = p.Answer(context.Background(), rag.Request{Question: "q", Strategy: rag.StrategyMultiQuestion})
	if err != nil || a.Strategy != rag.StrategyMultiQuestion {
		t.Fatalf("explicit: %q, %v", a.Strategy, err)
	}
	_, err = p.Answer(context.Background(), rag.Request{Question: "q", Strategy: "single-shot"})
	var se *rag.StrategyError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "multi-hop") || !strings.Contains(err.Error(), "multi-question") {
		t.Fatalf("invalid: %v; want a StrategyError naming the accepted values", err)
	}
	if _, err := rag.NewPipeline(rag.PipelineOptions{Retriever: c, Models: rag.Models{Writer: &echoWriter{}}, Strategy: "bogus"}); !errors.As(err, &se) {
		t.Fatalf("invalid default strategy: %v", err)
	}
}

func TestQuestionBounds(t *testing.T) {
	p := newPipeline(t, newCorpus(), nil, 0)
	if _, err := p.Answer(context.Background(), rag.Request{Question: "  \n "}); !errors.Is(err, rag.ErrEmptyQuestion) {
		t.Fatalf("empty: %v", err)
	}
	if _, err := p.Answer(context.Background(), rag.Request{Question: strings.Repeat("é", rag.MaxQuestionLength+1)}); !errors.Is(err, rag.ErrQuestionTooLong) {
		t.Fatalf("oversized: %v", err)
	}
	if _, err := p.Answer(context.Background(), rag.Request{Question: strings.Repeat("é", rag.MaxQuestionLength)}); err != nil {
		t.Fatalf("a question of exactly the limit: %v", err)
	}
}

func TestNothingFoundSaysSo(t *testing.T) {
	w := &echoWriter{}
	p, _ := rag.NewPipeline(rag.PipelineOptions{Retriever: newCorpus(), Models: rag.Models{Writer: w}})
	a, err := p.Answer(context.Background(), rag.Request{Question: "how do spaceships jump?"})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Sources) != 0 || !strings.Contains(a.Text, "do not cover") || w.calls.Load() != 0 {
		t.Fatalf("answer %+v (writer calls %d); want a plain 'not covered' answer without sources", a, w.calls.Load())
	}
}

func TestWriterFailureIsAnError(t *testing.T) {
	c := newCorpus().add("q", doc("b", "S", "t"))
	p, _ := rag.NewPipeline(rag.PipelineOptions{Retriever: c, Models: rag.Models{Writer: failingWriter{}}, CacheTTL: time.Hour})
	if _, err := p.Answer(context.Background(), rag.Request{Question: "q"}); err == nil || !strings.Contains(err.Error(), "model down") {
		t.Fatalf("err = %v", err)
	}
}

func TestSourcesAreNumberedAsCited(t *testing.T) {
	c := newCorpus().add("q", doc("b1", "A", "one"), doc("b2", "B", "two"))
	p := newPipeline(t, c, nil, 0)
	a, _ := p.Answer(context.Background(), rag.Request{Question: "q"})
	if len(a.Sources) != 2 || a.Sources[0].N != 1 || a.Sources[1].N != 2 || a.Sources[1].Book != "b2" || a.Sources[0].Text != "one" {
		t.Fatalf("sources %+v", a.Sources)
	}
}

func TestRepeatedQuestionComesFromTheCache(t *testing.T) {
	c := newCorpus().add("can i grapple?", doc("b", "Grappling", "yes"))
	p := newPipeline(t, c, nil, 0)
	first, err := p.Answer(context.Background(), rag.Request{Question: "Can I grapple?"})
	if err != nil || first.Cached {
		t.Fatalf("first: %+v, %v", first, err)
	}
	calls := c.calls.Load()
	second, err := p.Answer(context.Background(), rag.Request{Question: "can i   GRAPPLE"})
	if err != nil || !second.Cached || c.calls.Load() != calls {
		t.Fatalf("second: cached=%v, searches %d → %d; want a cache hit", second.Cached, calls, c.calls.Load())
	}
	if second.Text != first.Text || len(second.Sources) != len(first.Sources) || second.Question != "can i   GRAPPLE" {
		t.Fatalf("cached answer differs: %+v", second)
	}
	// Another strategy or book filter is another question.
	for _, req := range []rag.Request{{Question: "Can I grapple?", Strategy: rag.StrategyMultiQuestion}, {Question: "Can I grapple?", Books: []string{"b"}}} {
		if a, _ := p.Answer(context.Background(), req); a.Cached {
			t.Fatalf("%+v was served from the cache", req)
		}
	}
}

func TestReingestInvalidatesTheCache(t *testing.T) {
	c := newCorpus().add("q", doc("b", "S", "t"))
	v := &version{v: "1"}
	p := newPipeline(t, c, v, 0)
	p.Answer(context.Background(), rag.Request{Question: "q"})
	if a, _ := p.Answer(context.Background(), rag.Request{Question: "q"}); !a.Cached {
		t.Fatal("no cache hit before the books changed")
	}
	v.set("2")
	if a, _ := p.Answer(context.Background(), rag.Request{Question: "q"}); a.Cached {
		t.Fatal("a stale answer was served after the books changed")
	}
}

func TestCacheStaysWithinItsBound(t *testing.T) {
	c := newCorpus()
	p := newPipeline(t, c, nil, 3)
	for _, q := range []string{"q1", "q2", "q3", "q4", "q5"} {
		p.Answer(context.Background(), rag.Request{Question: q})
	}
	// The three most recent stay; the two oldest were evicted.
	var hits []string
	for _, q := range []string{"q5", "q4", "q3", "q2", "q1"} {
		if a, _ := p.Answer(context.Background(), rag.Request{Question: q}); a.Cached {
			hits = append(hits, q)
		}
	}
	if strings.Join(hits, ",") != "q5,q4,q3" {
		t.Fatalf("cache hits %v with CACHE_MAX_ENTRIES=3, want q5,q4,q3", hits)
	}
}

func TestConcurrentIdenticalQuestionsRunOnce(t *testing.T) {
	c := newCorpus().add("q", doc("b", "S", "t"))
	c.block = make(chan struct{})
	w := &echoWriter{}
	p, _ := rag.NewPipeline(rag.PipelineOptions{Retriever: c, Models: rag.Models{Writer: w}, CacheTTL: time.Hour})
	var wg sync.WaitGroup
	answers := make([]rag.Answer, 20)
	errs := make([]error, 20)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i], errs[i] = p.Answer(context.Background(), rag.Request{Question: "q"})
		}()
	}
	time.Sleep(100 * time.Millisecond) // let them all reach the pipeline
	close(c.block)
	wg.Wait()
	for i := range answers {
		if errs[i] != nil || len(answers[i].Sources) != 1 {
			t.Fatalf("answer %d: %+v, %v", i, answers[i], errs[i])
		}
	}
	if w.calls.Load() > 2 {
		t.Fatalf("the writer ran %d times for one question asked 20 times at once", w.calls.Load())
	}
}

// Two players asking the same question at the same moment share one run, and both see its hops
// as they happen: the second one hears what the run reported before it joined, then the rest.
func TestConcurrentIdenticalQuestionsBothSeeTheHops(t *testing.T) {
	c := newCorpus().add("q", doc("b", "S", "t"))
	c.block = make(chan struct{})
	p, _ := rag.NewPipeline(rag.PipelineOptions{Retriever: c, Models: rag.Models{Writer: &echoWriter{}}, CacheTTL: time.Hour})
	type caller struct {
		mu     sync.Mutex
		events []rag.Progress
		heard  chan struct{} // closed at the first event
		answer rag.Answer
		err    error
	}
	ask := func(wg *sync.WaitGroup) *caller {
		cl := &caller{heard: make(chan struct{})}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl.answer, cl.err = p.Answer(context.Background(), rag.Request{Question: "q", Progress: func(_ context.Context, e rag.Progress) {
				cl.mu.Lock()
				defer cl.mu.Unlock()
				if cl.events = append(cl.events, e); len(cl.events) == 1 {
					close(cl.heard)
				}
			}})
		}()
		return cl
	}
	wait := func(cl *caller, who string) {
		select {
		case <-cl.heard:
		case <-time.After(10 * time.Second):
			t.Fatalf("the %s caller heard no hop", who)
		}
	}
	var wg sync.WaitGroup
	first := ask(&wg)
	wait(first, "first") // its run has started hop 1 and waits on the search
	second := ask(&wg)
	wait(second, "second")
	close(c.block)
	wg.Wait()
	if n := c.calls.Load(); n != 1 {
		t.Fatalf("the question was searched %d times, want one shared run", n)
	}
	for who, cl := range map[string]*caller{"first": first, "second": second} {
		if cl.err != nil || len(cl.answer.Sources) != 1 {
			t.Fatalf("%s answer: %+v, %v", who, cl.answer, cl.err)
		}
		var stages []rag.ProgressStage
		for _, e := range cl.events {
			if e.Hop.N != 1 {
				t.Errorf("%s caller heard hop %d", who, e.Hop.N)
			}
			stages = append(stages, e.Stage)
		}
		if !slices.Equal(stages, []rag.ProgressStage{rag.HopStarted, rag.HopFinished}) {
			t.Errorf("%s caller heard %v, want hop 1 started and finished", who, stages)
		}
	}
}

// A caller waiting on someone else's run stops waiting when its own context ends; the run goes on.
func TestAJoinedCallerStopsWaitingWithItsContext(t *testing.T) {
	c := newCorpus().add("q", doc("b", "S", "t"))
	c.block = make(chan struct{})
	p, _ := rag.NewPipeline(rag.PipelineOptions{Retriever: c, Models: rag.Models{Writer: &echoWriter{}}})
	started := make(chan struct{})
	var once sync.Once
	done := make(chan error, 1)
	go func() {
		_, err := p.Answer(context.Background(), rag.Request{Question: "q", Progress: func(context.Context, rag.Progress) { once.Do(func() { close(started) }) }})
		done <- err
	}()
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	joined := make(chan struct{})
	var joinOnce sync.Once
	errc := make(chan error, 1)
	go func() {
		_, err := p.Answer(ctx, rag.Request{Question: "q", Progress: func(context.Context, rag.Progress) { joinOnce.Do(func() { close(joined) }) }})
		errc <- err
	}()
	<-joined
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("the joined caller got %v, want context.Canceled", err)
	}
	close(c.block)
	if err := <-done; err != nil {
		t.Fatalf("the run itself failed: %v", err)
	}
}

func TestFollowUpIsRewrittenWithHistory(t *testing.T) {
	c := newCorpus().add("what about prone? (about: can i grapple?)", doc("b", "Prone", "crawl"))
	p, _ := rag.NewPipeline(rag.PipelineOptions{Retriever: c, Models: rag.Models{Writer: &echoWriter{}, Rewriter: offline.Rewriter{}}})
	a, err := p.Answer(context.Background(), rag.Request{Question: "what about prone?", History: []rag.Turn{{Question: "Can I grapple?", Answer: "Yes [1]"}}})
	if err != nil || len(a.Sources) != 1 || a.Sources[0].Section != "Prone" {
		t.Fatalf("follow-up: %+v, %v; searched %v", a, err, c.searched())
	}
}

// BenchmarkCachedAnswer measures the pipeline time of a cache hit.
func BenchmarkCachedAnswer(b *testing.B) {
	c := newCorpus().add("q", doc("b", "S", "t"))
	p := newPipeline(b, c, &version{v: "1"}, 0)
	p.Answer(context.Background(), rag.Request{Question: "q"})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a, _ := p.Answer(context.Background(), rag.Request{Question: "q"})
		if !a.Cached {
			b.Fatal("not cached")
		}
	}
}

// stalling analyzer waits for its context to end, as a model past its deadline does.
type stalling struct{}

func (stalling) Analyze(ctx context.Context, _ rag.AnalyzeInput) (rag.Analysis, error) {
	<-ctx.Done()
	return rag.Analysis{}, ctx.Err()
}

// deadlineWriter records whether its context still had time left.
type deadlineWriter struct{ left time.Duration }

func (w *deadlineWriter) Write(ctx context.Context, _ string, docs []rag.Document, _ []rag.Turn) (string, error) {
	d, _ := ctx.Deadline()
	w.left = time.Until(d)
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	return docs[0].Section + " [1]", nil
}

// TestWriterKeepsItsShareOfTheDeadline: retrieval that stalls stops at its share of the
// answer's time, and the answer is written, in time, from what was found.
func TestWriterKeepsItsShareOfTheDeadline(t *testing.T) {
	c := newCorpus().add("q", doc("core", "Grappling", "grab"))
	w := &deadlineWriter{}
	p, err := rag.NewPipeline(rag.PipelineOptions{Retriever: c, Models: rag.Models{Analyzer: stalling{}, Writer: w}, WriterShare: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	a, err := p.Answer(ctx, rag.Request{Question: "q"})
	if err != nil {
		t.Fatalf("Answer: %v; want the answer written from the first hop's passages", err)
	}
	if a.Text != "Grappling [1]" || len(a.Sources) != 1 {
		t.Errorf("answer %q, sources %+v", a.Text, a.Sources)
	}
	if w.left <= 0 {
		t.Errorf("the writer started with %s left", w.left)
	}
}

// scopes is a fake Scoper: each library's corpus, with its version.
type scopes map[string]*versioned

type versioned struct {
	*corpus
	v string
}

func (v *versioned) Version(context.Context) (string, error) { return v.v, nil }

func (s scopes) Scope(_ context.Context, library string) (rag.Retriever, error) {
	return s[library], nil
}

// TestScopedQuestionsReadTheirLibrary: with a Scoper, a question reads its Request.Library's
// books only, and a cached answer of one library is never given in another whose books differ,
// even for the same question.
func TestScopedQuestionsReadTheirLibrary(t *testing.T) {
	s := scopes{
		"":  {newCorpus().add("fumble", doc("SRD", "Fumbles", "No fumble rule.")), "shared"},
		"A": {newCorpus().add("fumble", doc("House A", "Fumbles", "Drop your weapon on a 1.")), "shared|A1"},
		"B": {newCorpus().add("fumble", doc("House B", "Fumbles", "Lose your next turn on a 1.")), "shared|B1"},
	}
	p, err := rag.NewPipeline(rag.PipelineOptions{Scoper: s, Models: rag.Models{Writer: &echoWriter{}}, Strategy: rag.StrategyMultiQuestion, CacheTTL: time.Hour, CacheMax: 10})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, lib := range []string{"A", "B", "", "A", "B"} {
		a, err := p.Answer(ctx, rag.Request{Question: "fumble", Library: lib})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"": "SRD", "A": "House A", "B": "House B"}[lib]
		if len(a.Sources) != 1 || a.Sources[0].Book != want {
			t.Fatalf("library %q answered from %+v, want %s", lib, a.Sources, want)
		}
	}
	for lib, c := range s {
		if n := c.calls.Load(); n != 1 {
			t.Errorf("library %q searched %d times, want once (then the cache)", lib, n)
		}
	}
}
