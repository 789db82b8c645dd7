package bot_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/caprag/caprag/embed"
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
	for _, b := range books {
		if err := s.ReplaceBook(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	slow := slowStore{s}
	p, err := rag.NewPipeline(rag.PipelineOptions{
		Retriever: slow, Resolver: slow, Library: s, Versioner: s, Models: rag.Offline(),
		CacheTTL: time.Hour, CacheMax: 100,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// slowStore takes 50 ms per search, as a store on another machine would, so that the throttled
// progress edits of each hop get through before the answer.
type slowStore struct{ *store.Local }

func (s slowStore) Retrieve(ctx context.Context, q string, o rag.SearchOptions) ([]rag.Document, error) {
	time.Sleep(50 * time.Millisecond)
	return s.Local.Retrieve(ctx, q, o)
}

func (s slowStore) Resolve(ctx context.Context, from rag.Document, ref rag.Reference, o rag.SearchOptions) ([]rag.Document, error) {
	time.Sleep(50 * time.Millisecond)
	return s.Local.Resolve(ctx, from, ref, o)
}

// TestRuleThroughTheRealPipeline runs /rule end to end on the real pipeline: deferral, a hop-2
// progress edit of a multi-hop question, the cited answer, the cache on a repeat, and a thread
// follow-up that carries the earlier question.
func TestRuleThroughTheRealPipeline(t *testing.T) {
	h := startWith(t, nil, realPipeline(t))
	token := h.rule("Can I still cast a spell while I am grappled?")
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
	if !strings.Contains(e.Description, "[1]") || !strings.Contains(strings.Join(fields, "\n"), "[2] Conditions and Hazards — ") || !strings.Contains(strings.Join(fields, "\n"), "Grappled") {
		t.Fatalf("answer lacks its cited sources: %q / %q", e.Description, fields)
	}
	if !strings.Contains(e.Footer.Text, "multi-hop") || strings.Contains(e.Footer.Text, "cached") {
		t.Fatalf("footer %q", e.Footer.Text)
	}

	token = h.rule("can i still cast a spell while i am GRAPPLED")
	final, _ = h.finalEdit(t, token)
	if !strings.Contains(final.Embeds[0].Footer.Text, "cached") {
		t.Fatalf("repeated question not from the cache: %q", final.Embeds[0].Footer.Text)
	}

	// A follow-up in the thread is answered with the earlier question as context.
	answerID := h.fd.Original(token)
	channel := "400000000000000004"
	_, _, p := h.fd.Interaction(5, channel, map[string]any{"custom_id": "caprag:ask:" + answerID, "components": []any{
		map[string]any{"type": 1, "components": []any{map[string]any{"type": 4, "custom_id": "question", "value": "and if I am restrained instead?"}}},
	}}, nil)
	h.fd.Dispatch("INTERACTION_CREATE", p)
	h.finalEditIn(t, answerID, 1)
	var answer string
	for _, r := range h.fd.Requests() {
		if r.Method == "PATCH" && strings.HasPrefix(r.Path, "/channels/"+answerID+"/messages/") && strings.Contains(string(r.Body), `"embeds"`) {
			answer = string(r.Body)
		}
	}
	if !strings.Contains(answer, "Restrained") || !strings.Contains(answer, "spell") {
		t.Fatalf("follow-up answer does not use the thread's question: %s", answer)
	}
	checkNoPings(t, h.fd.Requests())
}
