package llm

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caprag/caprag/config"
	"github.com/caprag/caprag/rag"
)

// TestRetryPolicy: transient failures are retried (and every attempt counted), failures a
// retry cannot fix are not, and a Retry-After beyond the bound is not waited for.
func TestRetryPolicy(t *testing.T) {
	type reply struct {
		status int
		body   string
		header map[string]string
	}
	ok := reply{200, `{"ok":true}`, nil}
	for _, tc := range []struct {
		name     string
		replies  []reply
		attempts int
		status   int
	}{
		{"429 with Retry-After, then OK", []reply{{429, `{"error":{"message":"slow down"}}`, map[string]string{"Retry-After": "0.01"}}, ok}, 2, 200},
		{"529 overloaded, then OK", []reply{{529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, nil}, ok}, 2, 200},
		{"503, 502, then OK", []reply{{503, `{"error":"loading model"}`, nil}, {502, "bad gateway", nil}, ok}, 3, 200},
		{"408 and 409 are transient", []reply{{408, "", nil}, {409, "", nil}, ok}, 3, 200},
		{"500 every time: bounded", []reply{{500, "", nil}, {500, "", nil}, {500, "", nil}, {500, "", nil}, {500, "", nil}}, 4, 500},
		{"spent quota (429 insufficient_quota)", []reply{{429, `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`, nil}, ok}, 1, 429},
		{"no credits (402)", []reply{{402, `{"error":{"code":402,"message":"Insufficient credits"}}`, nil}, ok}, 1, 402},
		{"bad key (401)", []reply{{401, `{"error":{"message":"Incorrect API key"}}`, nil}, ok}, 1, 401},
		{"bad request (400)", []reply{{400, `{"error":"'response_format.type' must be 'json_schema' or 'text'"}`, nil}, ok}, 1, 400},
		{"Retry-After beyond the bound", []reply{{429, `{"error":{"message":"slow down"}}`, map[string]string{"Retry-After": "120"}}, ok}, 1, 429},
		{"an error in an HTTP 200 (OpenRouter), then OK", []reply{{200, `{"error":{"code":502,"message":"Provider returned error"}}`, nil}, ok}, 2, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				rep := tc.replies[min(int(n.Add(1))-1, len(tc.replies)-1)]
				for k, v := range rep.header {
					w.Header().Set(k, v)
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(rep.status)
				io.WriteString(w, rep.body)
			}))
			defer srv.Close()
			hc := NewHTTPClient(HTTPOptions{Retries: 3, MinWait: time.Millisecond, MaxWait: 50 * time.Millisecond})
			ctx, tr := withTrace(context.Background())
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader(`{"x":1}`))
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			attempts, apiErr, _ := tr.snapshot()
			if int(n.Load()) != tc.attempts || attempts != tc.attempts || resp.StatusCode != tc.status {
				t.Errorf("server saw %d requests, trace counted %d, final status %d; want %d attempts ending in %d (last error %v)",
					n.Load(), attempts, resp.StatusCode, tc.attempts, tc.status, apiErr)
			}
			if tc.status != 200 && apiErr == nil {
				t.Errorf("the provider's error was not kept")
			}
		})
	}
}

func TestBackoffHonoursRetryAfter(t *testing.T) {
	h := func(k, v string) *http.Response {
		return &http.Response{Header: http.Header{http.CanonicalHeaderKey(k): {v}}}
	}
	for _, tc := range []struct {
		resp *http.Response
		want time.Duration
	}{
		{h("Retry-After", "3"), 3 * time.Second},
		{h("Retry-After", "1.5"), 1500 * time.Millisecond},
		{h("retry-after-ms", "250"), 250 * time.Millisecond},
		{h("Retry-After", "3600"), 10 * time.Second}, // capped
		{h("Retry-After", time.Now().Add(2*time.Second).UTC().Format(http.TimeFormat)), 2 * time.Second},
		{&http.Response{Header: http.Header{}}, 400 * time.Millisecond}, // attempt 2: 100ms doubled twice
	} {
		got := backoff(100*time.Millisecond, 10*time.Second, 2, tc.resp)
		if got > tc.want || got < tc.want-time.Second {
			t.Errorf("backoff(%v) = %v, want %v", tc.resp.Header, got, tc.want)
		}
	}
}

func TestErrorBodyShapes(t *testing.T) {
	for body, want := range map[string]string{
		`{"error":"'response_format.type' must be 'json_schema'"}`:                     "'response_format.type' must be 'json_schema'",
		`{"error":{"message":"Rate limit reached","type":"rate_limit_error"}}`:         "Rate limit reached",
		`{"object":"error","message":"max_tokens too large","type":"BadRequestError"}`: "max_tokens too large",
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`:  "Overloaded",
		`{"error":{"code":429,"message":"Provider rate limited"}}`:                     "Provider rate limited",
		"upstream connect error": "upstream connect error",
	} {
		if got := readAPIError(400, http.Header{}, []byte(body)); got.Message != want {
			t.Errorf("readAPIError(%s).Message = %q, want %q", body, got.Message, want)
		}
	}
}

// TestPoolServesConcurrentQuestions: 20 requests at a time, three times over, open about 20
// connections, not a new one for most requests (Go's default keeps 2 idle per host).
func TestPoolServesConcurrentQuestions(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(5 * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{}`)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	hc := NewHTTPClient(HTTPOptions{Conns: 32})
	for range 3 {
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				resp, err := hc.Post(srv.URL, "application/json", strings.NewReader("{}"))
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			})
		}
		wg.Wait()
	}
	if n := conns.Load(); n > 24 {
		t.Errorf("60 requests, 20 at a time, opened %d connections; want about 20", n)
	}
}

// TestPromptCutByTheServerIsReported: a provider that read far fewer prompt tokens than were
// sent (its context window cut the prompt) is reported once, naming LLM_CONTEXT_TOKENS.
func TestPromptCutByTheServerIsReported(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Yes [1]."},"finish_reason":"stop"}],"usage":{"prompt_tokens":2048,"completion_tokens":3,"total_tokens":2051}}`)
	}))
	defer srv.Close()
	var logs strings.Builder
	var mu sync.Mutex
	log := slogTo(&logs, &mu)
	c, err := newClient(config.Config{LLMProvider: "openai", OpenAIBaseURL: srv.URL + "/v1", LLMModel: "m", LLMTimeout: 5 * time.Second, LLMContextTokens: 32768}, Options{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	var docs []rag.Document
	for range 6 {
		docs = append(docs, rag.Document{Book: "B", Text: strings.Repeat("A long rule about grappling and movement. ", 70)})
	}
	for range 2 {
		if _, err := c.models().Writer.Write(context.Background(), "Can I move?", docs, nil); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if n := strings.Count(logs.String(), "level=WARN msg=\"the provider read far fewer prompt tokens"); n != 1 || !strings.Contains(logs.String(), "LLM_CONTEXT_TOKENS") {
		t.Errorf("%d warnings, want one naming LLM_CONTEXT_TOKENS:\n%s", n, logs.String())
	}
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func slogTo(w io.Writer, mu *sync.Mutex) *slog.Logger {
	return slog.New(slog.NewTextHandler(lockedWriter{w, mu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
