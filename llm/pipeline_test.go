package llm_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/caprag/caprag/llm"
	"github.com/caprag/caprag/rag"
)

// books is a small retriever: every query finds the grappling passage; a query naming the
// grappled condition also finds its definition (the second hop's target).
type books struct{}

func (books) Retrieve(_ context.Context, query string, _ rag.SearchOptions) ([]rag.Document, error) {
	found := []rag.Document{{ID: "grapple", Book: "SRD", Section: "Combat > Grappling", Text: "The target is grappled (see the condition).",
		Refs: []rag.Reference{{Kind: rag.RefSee, Text: "see the condition", Target: "Grappled"}}}}
	if strings.Contains(strings.ToLower(query), "grappled") {
		found = append(found, rag.Document{ID: "grappled", Book: "SRD", Section: "Appendix A > Grappled", Text: "A grappled creature's speed becomes 0."})
	}
	return found, nil
}

// TestPipelineAnswersWhateverTheModelReplies runs the real pipeline, both strategies, with the
// llm roles against the scripted server: whatever the structured roles get back (valid, fenced,
// prose, malformed once, always malformed, too slow, HTTP 500), an answer with sources comes back.
func TestPipelineAnswersWhateverTheModelReplies(t *testing.T) {
	behaviours := map[string]func(n int) reply{
		"valid": func(int) reply {
			return reply{Content: `{"queries": ["grappled condition"], "sufficient": false, "new_queries": ["Grappled condition"]}`}
		},
		"fenced": func(int) reply {
			return reply{Content: "```json\n{\"queries\": [\"grappled condition\"], \"sufficient\": true, \"new_queries\": []}\n```"}
		},
		"prose": func(int) reply {
			return reply{Content: "Here you go: {\"queries\": [\"grappled\"], \"sufficient\": false, \"new_queries\": [\"Grappled\"]} Done."}
		},
		"malformed then valid": func(n int) reply {
			if n%2 == 1 {
				return reply{Content: "no JSON here"}
			}
			return reply{Content: `{"queries": ["grappled"], "sufficient": true}`}
		},
		"always malformed": func(int) reply { return reply{Content: "I would rather not."} },
		"slow":             func(int) reply { return reply{Slow: true} },
		"HTTP 500":         func(int) reply { return reply{Status: 500, Content: "overloaded"} },
	}
	for name, structured := range behaviours {
		for _, strategy := range []string{rag.StrategyMultiHop, rag.StrategyMultiQuestion} {
			t.Run(name+"/"+strategy, func(t *testing.T) {
				srv := newScripted(t, func(req chatRequest, n int) reply {
					switch req.Role() {
					case "write":
						return reply{Content: "A grappled creature's speed becomes 0 [1][2]."}
					case "rewrite":
						return reply{Content: "What happens to the speed of a grappled creature?"}
					}
					return structured(n)
				})
				m, _ := models(t, srv.openaiConfig(300*time.Millisecond))
				p, err := rag.NewPipeline(rag.PipelineOptions{Retriever: books{}, Models: m, Strategy: strategy, MaxHops: 3})
				if err != nil {
					t.Fatal(err)
				}
				for _, req := range []rag.Request{
					{Question: "What does grappling do?"},
					{Question: "and its speed?", History: []rag.Turn{{Question: "What does grappling do?", Answer: "It grapples [1]."}}},
				} {
					a, err := p.Answer(context.Background(), req)
					if err != nil {
						t.Fatalf("Answer(%q): %v", req.Question, err)
					}
					if a.Text == "" || len(a.Sources) == 0 || a.Sources[0].Book != "SRD" || a.LLMCalls < 2 {
						t.Errorf("Answer(%q) = %+v; want a cited answer with sources and its model calls counted", req.Question, a)
					}
				}
			})
		}
	}
}

// TestPipelineReportsModelDown: when the writer's model does not answer, the pipeline's error
// says so in the user's words.
func TestPipelineReportsModelDown(t *testing.T) {
	srv := newScripted(t, always(reply{Status: 503, Content: "model loading"}))
	m, _ := models(t, srv.openaiConfig(time.Second))
	p, err := rag.NewPipeline(rag.PipelineOptions{Retriever: books{}, Models: m})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Answer(context.Background(), rag.Request{Question: "What does grappling do?"})
	if !errors.Is(err, llm.ErrNoModel) || !strings.Contains(err.Error(), "the language model did not answer: ") || !strings.Contains(err.Error(), "model loading") {
		t.Errorf("Answer error = %v; want the model's failure in the user's words", err)
	}
}
