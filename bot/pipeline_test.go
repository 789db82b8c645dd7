package bot_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caprag/caprag/embed"
	"github.com/caprag/caprag/internal/fakediscord"
	"github.com/caprag/caprag/offline"
	"github.com/caprag/caprag/rag"
	"github.com/caprag/caprag/samplebooks"
	"github.com/caprag/caprag/store"
)

// realPipeline is the product's pipeline, offline, over the built-in sample books.
func realPipeline(t testing.TB) *rag.Pipeline {
	t.Helper()
	ctx := context.Background()
	s := store.NewMemory(store.Options{Embedder: embed.NewLocal(embed.LocalDims)})
	books, err := samplebooks.Books(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ReplaceBooks(ctx, books, nil); err != nil {
		t.Fatal(err)
	}
	p, err := rag.NewPipeline(rag.PipelineOptions{
		Retriever: s, Resolver: s, Library: s, Versioner: s, Models: offline.Models(s),
		CacheTTL: time.Hour, CacheMax: 100,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// shownHops forwards to the real pipeline and, after each hop starts, holds the pipeline until
// the fake Discord has received an edit naming that hop (at most 10 s), as a language model's
// calls would give the bot time to. The offline models answer in milliseconds, and the throttle
// rightly drops progress that the answer overtakes; this makes the hop-2 edit certain instead of
// a matter of timing.
type shownHops struct {
	*rag.Pipeline
	fd atomic.Pointer[fakediscord.Server]
}

func (s *shownHops) Answer(ctx context.Context, req rag.Request) (rag.Answer, error) {
	if p := req.Progress; p != nil {
		req.Progress = func(ctx context.Context, ev rag.Progress) {
			fd := s.fd.Load()
			if ev.Stage != rag.HopStarted || fd == nil {
				p(ctx, ev)
				return
			}
			label := fmt.Sprintf("Hop %d", ev.Hop.N)
			before := countEdits(fd.Requests(), label)
			p(ctx, ev)
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && ctx.Err() == nil; {
				if countEdits(fd.Requests(), label) > before {
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
	}
	return s.Pipeline.Answer(ctx, req)
}

// countEdits counts the message edits whose body contains s.
func countEdits(reqs []fakediscord.Request, s string) int {
	n := 0
	for _, r := range reqs {
		if r.Method == "PATCH" && strings.Contains(string(r.Body), s) {
			n++
		}
	}
	return n
}

// TestRuleThroughTheRealPipeline runs /rule end to end on the real pipeline: deferral, a hop-2
// progress edit of a multi-hop question, the cited answer, the cache on a repeat, and a thread
// follow-up that carries the earlier question.
func TestRuleThroughTheRealPipeline(t *testing.T) {
	ans := &shownHops{Pipeline: realPipeline(t)}
	h := startWith(t, nil, ans)
	ans.fd.Store(h.fd)
	token := h.rule("What does Drowsy Mist do to the goblins?")
	final, reqs := h.finalEdit(t, token)
	if first := decode(t, reqs[0]); first.Type != 5 {
		t.Fatalf("first request is not a deferral: %s", reqs[0].Body)
	}
	var progress []string
	for _, r := range reqs[1:] {
		if m := decode(t, r); r.Method == "PATCH" && len(m.Embeds) == 0 {
			progress = append(progress, m.Content)
		}
	}
	if !containsAny(progress, "Hop 2 — following:") {
		t.Fatalf("no hop-2 progress edit among %q", progress)
	}
	e := final.Embeds[0]
	var fields []string
	for _, f := range e.Fields {
		fields = append(fields, f.Value)
	}
	if !strings.Contains(e.Description, "[1]") || !strings.Contains(strings.Join(fields, "\n"), "[2] Conditions and Hazards — ") || !strings.Contains(strings.Join(fields, "\n"), "Unconscious") {
		t.Fatalf("answer lacks its cited sources: %q / %q", e.Description, fields)
	}
	if !strings.Contains(e.Footer.Text, "multi-hop") || strings.Contains(e.Footer.Text, "cached") {
		t.Fatalf("footer %q", e.Footer.Text)
	}

	token = h.rule("what does drowsy mist do to the GOBLINS")
	final, _ = h.finalEdit(t, token)
	if !strings.Contains(final.Embeds[0].Footer.Text, "cached") {
		t.Fatalf("repeated question not from the cache: %q", final.Embeds[0].Footer.Text)
	}

	// A follow-up in the thread is answered with the earlier question as context.
	answerID := h.fd.Original(token)
	channel := "400000000000000004"
	_, _, p := h.fd.Interaction(5, channel, map[string]any{"custom_id": "caprag:ask:" + answerID, "components": []any{
		map[string]any{"type": 1, "components": []any{map[string]any{"type": 4, "custom_id": "question", "value": "and if they are restrained instead?"}}},
	}}, nil)
	h.fd.Dispatch("INTERACTION_CREATE", p)
	h.finalEditIn(t, answerID, 1)
	var answer string
	for _, r := range h.fd.Requests() {
		if r.Method == "PATCH" && strings.HasPrefix(r.Path, "/channels/"+answerID+"/messages/") && strings.Contains(string(r.Body), `"embeds"`) {
			answer = string(r.Body)
		}
	}
	if !strings.Contains(answer, "Restrained") || !strings.Contains(answer, "mist") {
		t.Fatalf("follow-up answer does not use the thread's question: %s", answer)
	}
	checkNoPings(t, h.fd.Requests())
}
