package llm_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caprag/caprag/config"
	"github.com/caprag/caprag/llm"
	"github.com/caprag/caprag/rag"
)

const question = "How does grappling interact with the prone condition?"

var (
	docs = []rag.Document{
		{Book: "Players Handbook", Section: "Combat > Grappling", Page: 195, Text: "When you want to grab a creature... the target is grappled (see Conditions)."},
		{Book: "SRD", Section: "Appendix A > Prone", Text: "A prone creature's only movement option is to crawl."},
	}
	hints = []rag.Reference{
		{Kind: rag.RefSee, Text: "see Conditions", Target: "Grappled", Book: "SRD"},
		{Kind: rag.RefPage, Text: "p. 290", Target: "290"},
	}
)

// models builds the roles against cfg and fails the test on error.
func models(t testing.TB, cfg config.Config) (rag.Models, *logBuffer) {
	t.Helper()
	log, buf := newLog()
	m, err := llm.New(cfg, llm.Options{Log: log, HTTPClient: llm.NewHTTPClient(llm.HTTPOptions{Retries: 1, MinWait: time.Millisecond, MaxWait: 10 * time.Millisecond, Log: log})})
	if err != nil {
		t.Fatalf("llm.New: %v", err)
	}
	return m, buf
}

// calls returns the model requests made through m.
func calls(m rag.Models) int64 {
	return m.Writer.(interface{ Calls() int64 }).Calls()
}

// Each structured reply a model may give, and what the roles must make of it.
var structuredReplies = []struct {
	name    string
	expand  string
	analyze string
}{
	{"valid JSON",
		`{"queries": ["grappled condition", "prone condition", "How does grappling interact with the prone condition?"]}`,
		`{"sufficient": false, "new_queries": ["Grappled condition rules", "Grappling"]}`},
	{"fenced JSON",
		"```json\n{\"queries\": [\"grappled condition\", \"prone condition\"]}\n```",
		"```\n{\"sufficient\": false, \"new_queries\": [\"Grappled condition rules\"]}\n```"},
	{"JSON with prose",
		"Sure! Here are the queries {as asked}:\n{\"queries\": [\"grappled condition\", \"prone condition\"]}\nHope this helps.",
		"The passages mention the grappled condition but do not explain it.\n{\"sufficient\": \"false\", \"new_queries\": [\"Grappled condition rules\"]} That is all."},
	{"reasoning block and bare array",
		"<think>The user asks about {grapple}. [thinking]</think>\n[\"grappled condition\", \"prone condition\"]",
		"<think>Is it enough? {\"sufficient\": true}</think>{\"sufficient\": false, \"new_queries\": \"Grappled condition rules\"}"},
}

func TestStructuredRepliesAreParsed(t *testing.T) {
	for _, tc := range structuredReplies {
		t.Run(tc.name, func(t *testing.T) {
			srv := newScripted(t, func(req chatRequest, n int) reply {
				if req.Role() == "expand" {
					return reply{Content: tc.expand}
				}
				return reply{Content: tc.analyze}
			})
			m, _ := models(t, srv.openaiConfig(5*time.Second))
			ctx := context.Background()

			got, err := m.Expander.Expand(ctx, question, 4)
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{"grappled condition", "prone condition"}; !slices.Equal(got, want) {
				t.Errorf("Expand = %q, want %q (the question itself is never returned)", got, want)
			}

			a, err := m.Analyzer.Analyze(ctx, rag.AnalyzeInput{Question: question, Documents: llm.Facts(docs, hints), Asked: []string{"grappling"}, Max: 3})
			if err != nil {
				t.Fatal(err)
			}
			if a.Sufficient || !slices.Equal(a.NewQueries, []string{"Grappled condition rules"}) {
				t.Errorf("Analyze = %+v, want insufficient asking for the grappled rules only (Grappling was already asked)", a)
			}
			if !slices.Equal(a.Following, []string{"Grappled"}) {
				t.Errorf("Following = %q, want the hint's target", a.Following)
			}
			if n := calls(m); n != 2 {
				t.Errorf("model calls = %d, want 2 (no retry)", n)
			}
		})
	}
}

func TestRequestsCarryModelJSONModeAndContext(t *testing.T) {
	srv := newScripted(t, func(req chatRequest, n int) reply {
		switch req.Role() {
		case "expand":
			return reply{Content: `{"queries": ["a"]}`}
		case "analyze":
			return reply{Content: `{"sufficient": true, "new_queries": []}`}
		}
		return reply{Content: "Grappled creatures can be shoved prone [1][2]."}
	})
	m, _ := models(t, srv.openaiConfig(5*time.Second))
	ctx := context.Background()
	if _, err := m.Expander.Expand(ctx, question, 3); err != nil {
		t.Fatal(err)
	}
	a, err := m.Analyzer.Analyze(ctx, rag.AnalyzeInput{Question: question, Documents: llm.Facts(docs, hints), Asked: []string{"grappling rules"}, Max: 2})
	if err != nil || !a.Sufficient {
		t.Fatalf("Analyze = %+v, %v; want sufficient", a, err)
	}
	answer, err := m.Writer.Write(ctx, question, docs, []rag.Turn{{Question: "What is a grapple?", Answer: "A special melee attack [1]."}})
	if err != nil || answer != "Grappled creatures can be shoved prone [1][2]." {
		t.Fatalf("Write = %q, %v", answer, err)
	}

	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("got %d requests, want 3", len(reqs))
	}
	for _, r := range reqs {
		if r.Path != "/v1/chat/completions" || r.Model != "test-model" {
			t.Errorf("%s request to %s for model %q, want /v1/chat/completions and test-model", r.Role(), r.Path, r.Model)
		}
		if wantJSON := r.Role() != "write"; r.JSONMode() != wantJSON {
			t.Errorf("%s request JSON mode = %v, want %v", r.Role(), r.JSONMode(), wantJSON)
		}
	}
	if u := reqs[0].Text("user"); !strings.Contains(u, question) || !strings.Contains(reqs[0].Text("system"), "at most 3") {
		t.Errorf("expansion request lacks the question or the bound:\n%s", u)
	}
	analyze := reqs[1].Text("user")
	for _, want := range []string{
		question,
		`<passage id="1" book="Players Handbook" section="Combat › Grappling" page="195">` + "\nWhen you want to grab a creature",
		`<passage id="2" book="SRD" section="Appendix A › Prone">` + "\nA prone creature's only movement",
		`"see Conditions" in passage 1 → Grappled (SRD)`,
		`"p. 290" in passage 1 → page 290`,
		"Queries already searched:\n- grappling rules",
	} {
		if !strings.Contains(analyze, want) {
			t.Errorf("analysis prompt lacks %q:\n%s", want, analyze)
		}
	}
	write := reqs[2].Text("user")
	for _, want := range []string{"Q: What is a grapple?", `<passage id="1" book="Players Handbook"`, `<passage id="2" book="SRD"`, "Question: " + question} {
		if !strings.Contains(write, want) {
			t.Errorf("answer prompt lacks %q:\n%s", want, write)
		}
	}
	for _, want := range []string{"using only the passages", "[1]", "do not cover", "Answer in English"} {
		if !strings.Contains(reqs[2].Text("system"), want) {
			t.Errorf("answer instructions lack %q", want)
		}
	}
}

func TestMalformedReplyIsRetriedOnce(t *testing.T) {
	srv := newScripted(t, func(req chatRequest, n int) reply {
		if n == 1 {
			return reply{Content: "I think the queries are: grappled, prone"}
		}
		if req.Role() == "expand" {
			return reply{Content: `{"queries": ["grappled condition"]}`}
		}
		return reply{Content: `{"sufficient": false, "new_queries": ["Grappled"]}`}
	})
	m, logs := models(t, srv.openaiConfig(5*time.Second))
	ctx := context.Background()
	q, err := m.Expander.Expand(ctx, question, 3)
	if err != nil || !slices.Equal(q, []string{"grappled condition"}) {
		t.Errorf("Expand = %q, %v; want the retried reply's query", q, err)
	}
	a, err := m.Analyzer.Analyze(ctx, rag.AnalyzeInput{Question: question, Documents: llm.Facts(docs, nil)})
	if err != nil || a.Sufficient || !slices.Equal(a.NewQueries, []string{"Grappled"}) {
		t.Errorf("Analyze = %+v, %v; want the retried verdict", a, err)
	}
	reqs := srv.Requests()
	if len(reqs) != 4 || calls(m) != 4 {
		t.Fatalf("%d requests, %d calls counted; want 4 (each role retried once)", len(reqs), calls(m))
	}
	retry := reqs[1]
	if !strings.Contains(retry.Text("assistant"), "I think the queries are") || !strings.Contains(retry.Text("user"), "not valid") {
		t.Errorf("the retry does not show the model its bad reply and ask again: %+v", retry.Messages)
	}
	if !strings.Contains(logs.String(), "malformed or cut model reply") {
		t.Errorf("the retry was not logged:\n%s", logs)
	}
}

// failing are the model failures after which the structured roles fall back and the writer
// reports the model in the user's words.
var failing = []struct {
	name    string
	reply   reply
	timeout time.Duration
	inError string
}{
	{"always malformed", reply{Content: "Sorry, I cannot help with that {really}."}, 5 * time.Second, ""},
	{"slow beyond the timeout", reply{Slow: true}, 150 * time.Millisecond, "no reply within 150ms"},
	{"HTTP 500", reply{Status: 500, Content: "the model crashed"}, 5 * time.Second, "the model crashed"},
	{"server down", reply{Status: -1}, 5 * time.Second, "test-model at http://127.0.0.1:"}, // Status -1: the test closes the server
}

func TestFailingModelFallsBack(t *testing.T) {
	for _, tc := range failing {
		for _, provider := range []string{"openai", "ollama"} {
			t.Run(tc.name+"/"+provider, func(t *testing.T) {
				srv := newScripted(t, always(tc.reply))
				cfg := srv.openaiConfig(tc.timeout)
				if provider == "ollama" {
					cfg = srv.ollamaConfig(tc.timeout)
				}
				failingModel(t, srv, cfg, tc.reply, tc.inError)
			})
		}
	}
}

// failingModel checks the roles against a model that fails as rep scripts.
func failingModel(t *testing.T, srv *scripted, cfg config.Config, rep reply, inError string) {
	m, logs := models(t, cfg)
	if rep.Status == -1 {
		srv.srv.Close() // nothing listens any more: connection refused
	}
	ctx := context.Background()

	q, err := m.Expander.Expand(ctx, question, 3)
	if err != nil || len(q) != 0 {
		t.Errorf("Expand = %q, %v; want no extra query and no error", q, err)
	}
	a, err := m.Analyzer.Analyze(ctx, rag.AnalyzeInput{Question: question, Documents: llm.Facts(docs, hints)})
	if err != nil || !a.Sufficient || len(a.NewQueries) != 0 {
		t.Errorf("Analyze = %+v, %v; want sufficient and no error", a, err)
	}
	r, err := m.Rewriter.Rewrite(ctx, "and when prone?", []rag.Turn{{Question: question, Answer: "x"}})
	if err != nil {
		t.Errorf("Rewrite error %v; want the follow-up unchanged", err)
	}
	if !strings.Contains(logs.String(), "query expansion failed") || !strings.Contains(logs.String(), "sufficiency analysis failed") {
		t.Errorf("fallbacks not logged:\n%s", logs)
	}
	if rep.Content == "" || rep.Status != 0 {
		if r != "and when prone?" {
			t.Errorf("Rewrite = %q, want the follow-up unchanged", r)
		}
		_, err := m.Writer.Write(ctx, question, docs, nil)
		if !errors.Is(err, llm.ErrNoModel) || !strings.HasPrefix(err.Error(), "the language model did not answer: ") || !strings.Contains(err.Error(), inError) {
			t.Errorf("Write error = %v; want %q… mentioning %q", err, llm.ErrNoModel, inError)
		}
	}
}

func TestCanceledRequestIsAnError(t *testing.T) {
	srv := newScripted(t, always(reply{Slow: true}))
	m, _ := models(t, srv.openaiConfig(5*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := m.Expander.Expand(ctx, question, 3); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Expand on an expired request: %v, want the deadline error (no fallback for a request that is gone)", err)
	}
	if _, err := m.Analyzer.Analyze(ctx, rag.AnalyzeInput{Question: question}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Analyze on an expired request: %v, want the deadline error", err)
	}
	if _, err := m.Writer.Write(ctx, question, docs, nil); !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, llm.ErrNoModel) {
		t.Errorf("Write on an expired request: %v, want the deadline error and ErrNoModel", err)
	}
}

func TestWriterFixesCitations(t *testing.T) {
	srv := newScripted(t, always(reply{Content: "<think>cite [3]?</think>You can [1, 2]; see also [7] and roll 2d6 [2]."}))
	m, _ := models(t, srv.openaiConfig(5*time.Second))
	got, err := m.Writer.Write(context.Background(), question, docs, nil)
	if want := "You can [1][2]; see also  and roll 2d6 [2]."; err != nil || got != want {
		t.Errorf("Write = %q, %v; want %q", got, err, want)
	}
}

func TestRewriterMakesStandaloneQuestion(t *testing.T) {
	srv := newScripted(t, always(reply{Content: "Standalone question: \"Can a grappled creature stand up from prone?\"\n"}))
	m, _ := models(t, srv.openaiConfig(5*time.Second))
	ctx := context.Background()
	got, err := m.Rewriter.Rewrite(ctx, "and can it stand up?", []rag.Turn{{Question: question, Answer: "It stays grappled [1]."}})
	if err != nil || got != "Can a grappled creature stand up from prone?" {
		t.Errorf("Rewrite = %q, %v", got, err)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || !strings.Contains(reqs[0].Text("user"), "Q: "+question+"\nA: It stays grappled [1].") || !strings.Contains(reqs[0].Text("user"), "Follow-up question: and can it stand up?") {
		t.Errorf("rewrite request lacks the history or the follow-up: %+v", reqs)
	}
	if got, _ := m.Rewriter.Rewrite(ctx, "first question", nil); got != "first question" || len(srv.Requests()) != 1 {
		t.Errorf("Rewrite without history = %q after %d requests; want the question as is, no request", got, len(srv.Requests()))
	}
}

func TestOllamaProvider(t *testing.T) {
	srv := newScripted(t, func(req chatRequest, n int) reply {
		switch req.Role() {
		case "expand":
			return reply{Content: "```json\n{\"queries\": [\"prone\"]}\n```"}
		case "analyze":
			return reply{Content: `{"sufficient": true}`}
		}
		return reply{Content: "Yes [1]."}
	})
	m, _ := models(t, srv.ollamaConfig(5*time.Second))
	ctx := context.Background()
	q, err := m.Expander.Expand(ctx, question, 2)
	if err != nil || !slices.Equal(q, []string{"prone"}) {
		t.Errorf("Expand = %q, %v", q, err)
	}
	if a, err := m.Analyzer.Analyze(ctx, rag.AnalyzeInput{Question: question, Documents: llm.Facts(docs, nil)}); err != nil || !a.Sufficient {
		t.Errorf("Analyze = %+v, %v", a, err)
	}
	if s, err := m.Writer.Write(ctx, question, docs, nil); err != nil || s != "Yes [1]." {
		t.Errorf("Write = %q, %v", s, err)
	}
	for _, r := range srv.Requests() {
		if r.Path != "/api/chat" || r.Model != "test-model" || r.JSONMode() != (r.Role() != "write") || r.Options.NumCtx != 4096 {
			t.Errorf("%s request: path %s, model %q, format %q, num_ctx %d", r.Role(), r.Path, r.Model, r.Format, r.Options.NumCtx)
		}
	}
}

func TestServerRejectingJSONModeIsAskedWithoutIt(t *testing.T) {
	srv := newScripted(t, func(req chatRequest, n int) reply {
		if req.ResponseFormat != nil {
			return reply{Status: 400, Content: "'response_format.type' must be 'json_schema' or 'text'"}
		}
		return reply{Content: `{"queries": ["prone"]}`}
	})
	m, _ := models(t, srv.openaiConfig(5*time.Second))
	for range 2 {
		if q, err := m.Expander.Expand(context.Background(), question, 2); err != nil || !slices.Equal(q, []string{"prone"}) {
			t.Errorf("Expand = %q, %v", q, err)
		}
	}
	var formats []string
	for _, r := range srv.Requests() {
		f := "none"
		if r.ResponseFormat != nil {
			f = r.ResponseFormat.Type
		}
		formats = append(formats, f)
	}
	if want := []string{"json_schema", "json_object", "none", "none"}; !slices.Equal(formats, want) {
		t.Errorf("response formats asked = %q, want %q: each refused once, then the prompt alone from then on", formats, want)
	}
}

func TestNewRejectsIncompleteSettings(t *testing.T) {
	for _, cfg := range []config.Config{
		{LLMProvider: "openai", LLMTimeout: time.Second},
		{LLMProvider: "anthropic", LLMTimeout: time.Second},
		{LLMProvider: "offline", LLMTimeout: time.Second},
		{LLMProvider: "openai", OpenAIAPIKey: "k", LLMTimeout: 0},
	} {
		if _, err := llm.New(cfg, llm.Options{}); err == nil {
			t.Errorf("New(%+v) succeeded, want an error naming the missing setting", cfg)
		}
	}
	m, err := llm.New(config.Config{LLMProvider: "anthropic", AnthropicAPIKey: "k", LLMTimeout: time.Second}, llm.Options{})
	if err != nil || m.Writer == nil || m.Expander == nil || m.Analyzer == nil || m.Rewriter == nil {
		t.Errorf("New(anthropic) = %+v, %v", m, err)
	}
}
