package llm_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caprag/caprag/config"
)

// chatRequest is what the scripted server received: the OpenAI and Ollama chat request fields
// the tests check.
type chatRequest struct {
	Path           string
	Model          string `json:"model"`
	ResponseFormat *struct {
		Type string `json:"type"`
	} `json:"response_format"`
	Format  json.RawMessage `json:"format"` // Ollama
	Options struct {
		NumCtx int `json:"num_ctx"`
	} `json:"options"` // Ollama
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
}

// JSONMode reports whether the request asked for JSON (OpenAI response_format or Ollama format).
func (r chatRequest) JSONMode() bool {
	return (r.ResponseFormat != nil && r.ResponseFormat.Type != "text") || len(r.Format) > 0
}

// Text returns the content of the messages with role, joined.
func (r chatRequest) Text(role string) string {
	var parts []string
	for _, m := range r.Messages {
		if m.Role == role {
			parts = append(parts, m.Content)
		}
	}
	return strings.Join(parts, "\n")
}

// Role says which caprag role sent the request, from its system prompt.
func (r chatRequest) Role() string { return roleOf(r.Text("system")) }

// reply is a scripted answer.
type reply struct {
	Status  int    // HTTP status; 0 means 200
	Content string // the assistant's text
	Slow    bool   // never answer: wait until the client gives up
}

// scripted is an OpenAI-compatible (/v1/chat/completions) and Ollama-shaped (/api/chat) chat
// server whose replies a test scripts. It records every request.
type scripted struct {
	t      testing.TB
	srv    *httptest.Server
	script func(req chatRequest, n int) reply // n counts the requests of req's role from 1

	mu       sync.Mutex
	requests []chatRequest
	byRole   map[string]int
}

func newScripted(t testing.TB, script func(req chatRequest, n int) reply) *scripted {
	t.Helper()
	s := &scripted{t: t, script: script, byRole: map[string]int{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// always scripts the same reply for every request.
func always(r reply) func(chatRequest, int) reply {
	return func(chatRequest, int) reply { return r }
}

func (s *scripted) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req chatRequest
	if r.Method != http.MethodPost || (r.URL.Path != "/v1/chat/completions" && r.URL.Path != "/api/chat") || json.Unmarshal(body, &req) != nil {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	req.Path = r.URL.Path
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.byRole[req.Role()]++
	n := s.byRole[req.Role()]
	s.mu.Unlock()

	rep := s.script(req, n)
	if rep.Slow {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if rep.Status != 0 && rep.Status != http.StatusOK {
		w.WriteHeader(rep.Status)
		if req.Path == "/api/chat" {
			fmt.Fprintf(w, `{"error":%q}`, rep.Content)
		} else {
			fmt.Fprintf(w, `{"error":{"message":%q,"type":"server_error"}}`, rep.Content)
		}
		return
	}
	content, _ := json.Marshal(rep.Content)
	if req.Path == "/api/chat" {
		fmt.Fprintf(w, `{"model":%q,"created_at":"2026-11-23T00:00:00Z","message":{"role":"assistant","content":%s},"done":true,"done_reason":"stop"}`+"\n", req.Model, content)
		return
	}
	fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}]}`, req.Model, content)
}

// Requests returns the requests received so far.
func (s *scripted) Requests() []chatRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]chatRequest(nil), s.requests...)
}

// openaiConfig points LLM_PROVIDER=openai at the scripted server with no API key.
func (s *scripted) openaiConfig(timeout time.Duration) config.Config {
	return config.Config{LLMProvider: "openai", OpenAIBaseURL: s.srv.URL + "/v1", LLMModel: "test-model", LLMTimeout: timeout}
}

// ollamaConfig points LLM_PROVIDER=ollama at the scripted server.
func (s *scripted) ollamaConfig(timeout time.Duration) config.Config {
	return config.Config{LLMProvider: "ollama", OllamaURL: s.srv.URL, LLMModel: "test-model", LLMTimeout: timeout}
}

// logBuffer collects log lines for assertions.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newLog() (*slog.Logger, *logBuffer) {
	buf := &logBuffer{}
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})), buf
}
