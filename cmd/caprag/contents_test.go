package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caprag/caprag/config"
	"github.com/caprag/caprag/llm"
	"github.com/caprag/caprag/passage"
	"github.com/caprag/caprag/rag"
)

// A model-backed analyzer is shown the books' table of contents in its request, and a title it
// names from there — one written with the heading above it, as titles many sections share are
// — is fetched as that section: on the SRD, through the OpenAI wire format, the whole pipeline.
func TestModelNamesASectionFromTheTableOfContents(t *testing.T) {
	var (
		mu     sync.Mutex
		named  string
		tocSaw bool
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct{ Role, Content string } `json:"messages"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		sys := req.Messages[0].Content
		toc := ""
		for _, m := range req.Messages[1:] {
			if strings.HasPrefix(m.Content, "Table of contents of the books") {
				toc = m.Content
			}
		}
		content := "The books say so [1]."
		if strings.Contains(sys, "judge whether") {
			mu.Lock()
			content = `{"missing":[],"new_queries":[],"sufficient":true}`
			if named == "" {
				// name the last creature's actions the table lists ("Zombie > Actions": a
				// title every creature's stat block shares)
				tocSaw = toc != ""
				for _, line := range strings.Split(toc, "\n") {
					_, titles, _ := strings.Cut(line, ": ")
					for _, ti := range strings.Split(titles, "; ") {
						if strings.HasSuffix(ti, " > Actions") {
							named = ti
						}
					}
				}
				q, _ := json.Marshal(named)
				content = fmt.Sprintf(`{"missing":["a rule"],"new_queries":[%s],"sufficient":false}`, q)
			}
			mu.Unlock()
		}
		body, _ := json.Marshal(content)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}]}`, body)
	}))
	defer srv.Close()
	s := loadCorpus(t, corpora(t)["srd51"][0])
	m, err := llm.New(config.Config{LLMProvider: "openai", OpenAIBaseURL: srv.URL + "/v1", LLMModel: "m", LLMTimeout: time.Minute, LLMContextTokens: 100000, LLMRetries: 1, LLMRetryMaxWait: time.Second}, llm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := rag.NewPipeline(rag.PipelineOptions{Retriever: s, Resolver: s, Models: m, Strategy: rag.StrategyMultiHop, MaxHops: 3})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Run(context.Background(), rag.Request{Question: "How does grappling work?"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("named %q", named)
	if !tocSaw || named == "" {
		t.Fatalf("the analyzer's request showed no table of contents with a shared title (named %q)", named)
	}
	if !slices.ContainsFunc(res.State.Context(), func(d rag.Document) bool {
		return strings.HasSuffix(d.Section, named) && passage.LastHeading(d.Section) == passage.LastHeading(named)
	}) {
		var got []string
		for _, d := range res.State.Context() {
			got = append(got, d.Section)
		}
		t.Errorf("%q named from the table of contents was not fetched; context %q", named, got)
	}
	// fetched as that section, not searched for
	if hops := res.State.Hops; len(hops) < 2 || hops[1].Found > 2 {
		t.Errorf("the second hop found %+v, want the one section named", hops)
	}
}
