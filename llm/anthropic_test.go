package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caprag/caprag/config"
	"github.com/caprag/caprag/rag"
)

// redirect sends every request to the test server, whatever host it was addressed to.
type redirect struct{ to *url.URL }

func (r redirect) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.URL.Scheme, req.URL.Host = r.to.Scheme, r.to.Host
	return http.DefaultTransport.RoundTrip(req)
}

// TestAnthropicProvider runs the roles against an Anthropic-shaped Messages API: no JSON mode
// there, so the prompt asks for JSON and the parser copes with prose.
func TestAnthropicProvider(t *testing.T) {
	type request struct {
		Path, Key string
		Model     string `json:"model"`
		System    string `json:"system"`
		MaxTokens int    `json:"max_tokens"`
		Messages  []struct {
			Role    string `json:"role"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"messages"`
	}
	var (
		mu   sync.Mutex
		reqs []request
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req.Path, req.Key = r.URL.Path, r.Header.Get("x-api-key")
		mu.Lock()
		reqs = append(reqs, req)
		mu.Unlock()
		text := "Here is my verdict:\n{\"sufficient\": false, \"new_queries\": [\"Rapid Strike\"]}"
		if strings.Contains(req.System, "You answer rules questions") {
			text = "Rapid Strike costs -3 with Trained by a Master [1]."
		}
		body, _ := json.Marshal(text)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"msg_1","type":"message","role":"assistant","model":%q,"content":[{"type":"text","text":%s}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":5}}`, req.Model, body)
	}))
	defer srv.Close()
	to, _ := url.Parse(srv.URL)

	c, err := newClient(config.Config{LLMProvider: "anthropic", AnthropicAPIKey: "sk-test", LLMTimeout: 5 * time.Second}, nil,
		&http.Client{Transport: redirect{to}})
	if err != nil {
		t.Fatal(err)
	}
	m := c.models()
	ctx := context.Background()
	a, err := m.Analyzer.Analyze(ctx, rag.AnalyzeInput{Question: "Trained by a Master and Rapid Strike?", Documents: facts(promptDocs, promptHints)})
	if err != nil || a.Sufficient || len(a.NewQueries) != 1 || a.Following[0] != "Rapid Strike" {
		t.Errorf("Analyze = %+v, %v; want insufficient following Rapid Strike", a, err)
	}
	answer, err := m.Writer.Write(ctx, "Trained by a Master and Rapid Strike?", promptDocs, nil)
	if err != nil || !strings.HasSuffix(answer, "[1].") {
		t.Errorf("Write = %q, %v", answer, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	for _, r := range reqs {
		if r.Path != "/v1/messages" || r.Key != "sk-test" || r.Model != DefaultAnthropicModel || r.MaxTokens < 1 || r.System == "" {
			t.Errorf("request %+v: want /v1/messages with the key, model %s, max_tokens and a system prompt", r, DefaultAnthropicModel)
		}
	}
	if got := reqs[0].Messages[0].Content[0].Text; !strings.Contains(got, "Rapid Strike (Basic Set)") {
		t.Errorf("analysis prompt lacks the hints:\n%s", got)
	}
}
