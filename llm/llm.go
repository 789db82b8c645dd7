// Package llm provides the model-backed roles of the answer pipeline (rag.Expander,
// rag.Analyzer, rag.Writer, rag.Rewriter) on top of langchaingo, for any OpenAI-compatible
// server (OpenAI, Ollama, vLLM, LM Studio, OpenRouter), Ollama's own API and Anthropic.
//
// Every model request runs under cfg.LLMTimeout. Structured answers (expansion, analysis) ask for
// JSON (JSON mode where the provider has one), tolerate code fences, reasoning blocks and prose
// around the JSON, retry once on malformed output and then fall back to a safe answer (expander:
// no extra query; analyzer: sufficient), which is logged. The writer's errors are returned in the
// user's words ("the language model did not answer: …").
//
// Model calls: each Expand, Analyze, Write and Rewrite invocation is one model call, except that a
// malformed structured answer costs one more request (the retry). Calls reports every request
// made, retries included.
package llm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"
	"github.com/tmc/langchaingo/llms/ollama"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/caprag/caprag/config"
	"github.com/caprag/caprag/rag"
)

// Default models when LLM_MODEL is empty.
const (
	DefaultOpenAIModel    = "gpt-4o-mini"
	DefaultOllamaModel    = "llama3.1"
	DefaultAnthropicModel = "claude-haiku-4-5"
	// DefaultOpenAIBaseURL is OpenAI's own API, used when OPENAI_BASE_URL is empty.
	DefaultOpenAIBaseURL = "https://api.openai.com/v1"
	// OllamaContextTokens is the context window asked of Ollama: room for the passages (at most
	// about 10k tokens, see maxPassagesRunes) and the answer.
	OllamaContextTokens = 16384
	// placeholderKey is sent to OpenAI-compatible servers that need no key (Ollama, vLLM, LM
	// Studio): langchaingo refuses an empty one.
	placeholderKey = "not-needed"
)

// ErrNoModel is wrapped by the writer's error when the model did not answer (down, slow, refused).
var ErrNoModel = errors.New("the language model did not answer")

// New returns the model-backed roles for cfg.LLMProvider: openai, ollama or anthropic.
// "offline" is not served here (the rule-based roles live in rag/). log may be nil.
func New(cfg config.Config, log *slog.Logger) (rag.Models, error) {
	c, err := newClient(cfg, log, nil)
	if err != nil {
		return rag.Models{}, err
	}
	return c.models(), nil
}

// client is one configured model shared by the four roles.
type client struct {
	model    llms.Model
	provider string
	name     string // the model's name
	endpoint string // where the model is served, for messages
	timeout  time.Duration
	log      *slog.Logger
	// jsonMode is true while the provider is believed to support JSON mode; an OpenAI-compatible
	// server that rejects response_format turns it off.
	jsonMode atomic.Bool
	calls    atomic.Int64
}

// newClient builds the langchaingo model for cfg. httpClient, when not nil, replaces the
// default HTTP client (tests).
func newClient(cfg config.Config, log *slog.Logger, httpClient *http.Client) (*client, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.LLMTimeout <= 0 {
		return nil, &config.Error{Var: "LLM_TIMEOUT", Value: cfg.LLMTimeout.String(), Accepted: "a positive duration such as \"90s\""}
	}
	c := &client{provider: cfg.LLMProvider, name: cfg.LLMModel, timeout: cfg.LLMTimeout}
	var err error
	switch cfg.LLMProvider {
	case "openai":
		c.model, err = newOpenAI(cfg, c, log, httpClient)
	case "ollama":
		c.endpoint = cfg.OllamaURL
		if c.name == "" {
			c.name = DefaultOllamaModel
		}
		// Ollama's default context window (2048 or 4096 tokens) silently cuts the passages.
		opts := []ollama.Option{ollama.WithServerURL(cfg.OllamaURL), ollama.WithModel(c.name), ollama.WithRunnerNumCtx(OllamaContextTokens)}
		if httpClient != nil {
			opts = append(opts, ollama.WithHTTPClient(httpClient))
		}
		c.jsonMode.Store(true)
		c.model, err = ollama.New(opts...)
	case "anthropic":
		if cfg.AnthropicAPIKey == "" {
			return nil, errors.New("llm: LLM_PROVIDER=anthropic needs ANTHROPIC_API_KEY")
		}
		if c.name == "" {
			c.name = DefaultAnthropicModel
		}
		c.endpoint = "Anthropic"
		opts := []anthropic.Option{anthropic.WithToken(cfg.AnthropicAPIKey), anthropic.WithModel(c.name)}
		if httpClient != nil {
			opts = append(opts, anthropic.WithHTTPClient(httpClient))
		}
		// Anthropic has no JSON mode: the prompts ask for JSON and the parser is tolerant.
		c.model, err = anthropic.New(opts...)
	default:
		return nil, &config.Error{Var: "LLM_PROVIDER", Value: cfg.LLMProvider, Accepted: "openai, ollama, anthropic (offline models live in rag/)"}
	}
	if err != nil {
		return nil, fmt.Errorf("llm: %s: %w", cfg.LLMProvider, err)
	}
	c.log = log.With("provider", c.provider, "model", c.name, "endpoint", c.endpoint)
	return c, nil
}

func newOpenAI(cfg config.Config, c *client, log *slog.Logger, httpClient *http.Client) (llms.Model, error) {
	base, key := cfg.OpenAIBaseURL, cfg.OpenAIAPIKey
	if base == "" {
		if key == "" {
			return nil, errors.New("LLM_PROVIDER=openai needs OPENAI_API_KEY, or OPENAI_BASE_URL for a local OpenAI-compatible server (Ollama, vLLM, LM Studio)")
		}
		base = DefaultOpenAIBaseURL
	}
	c.endpoint = base
	if key == "" {
		key = placeholderKey
	}
	if c.name == "" {
		c.name = DefaultOpenAIModel
		if base != DefaultOpenAIBaseURL {
			log.Warn("LLM_MODEL is not set: asking the OpenAI-compatible server for the OpenAI default model; set LLM_MODEL to a model it serves",
				"model", c.name, "base_url", base)
		}
	}
	// Pass every setting explicitly: langchaingo's openai package otherwise reads OPENAI_* from
	// the environment behind config's back.
	opts := []openai.Option{openai.WithBaseURL(base), openai.WithToken(key), openai.WithModel(c.name), openai.WithOrganization("")}
	if httpClient != nil {
		opts = append(opts, openai.WithHTTPClient(httpClient))
	}
	c.jsonMode.Store(true)
	return openai.New(opts...)
}

// models returns the four roles backed by c.
func (c *client) models() rag.Models {
	return rag.Models{
		Expander: &Expander{c: c},
		Analyzer: &Analyzer{c: c},
		Writer:   &Writer{c: c},
		Rewriter: &Rewriter{c: c},
	}
}

// Calls returns how many model requests c made, retries included.
func (c *client) Calls() int64 { return c.calls.Load() }

// message is one chat message of a request.
type message struct {
	role llms.ChatMessageType
	text string
}

func system(text string) message    { return message{llms.ChatMessageTypeSystem, text} }
func user(text string) message      { return message{llms.ChatMessageTypeHuman, text} }
func assistant(text string) message { return message{llms.ChatMessageTypeAI, text} }

// generate sends one request under the client's timeout and returns the model's text, without
// any reasoning block. json asks for JSON mode where the provider supports it.
func (c *client) generate(ctx context.Context, role string, msgs []message, json bool, temperature float64) (string, error) {
	content := make([]llms.MessageContent, len(msgs))
	for i, m := range msgs {
		content[i] = llms.TextParts(m.role, m.text)
	}
	opts := []llms.CallOption{llms.WithModel(c.name), llms.WithTemperature(temperature)}
	useJSON := json && c.jsonMode.Load()
	if useJSON {
		opts = append(opts, llms.WithJSONMode())
	}
	callCtx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	start := time.Now()
	c.calls.Add(1)
	resp, err := c.model.GenerateContent(callCtx, content, opts...)
	if err != nil && useJSON && c.provider == "openai" && rejectsJSONMode(err) {
		// Some OpenAI-compatible servers (LM Studio) accept only json_schema: ask again
		// without JSON mode and rely on the prompt and the tolerant parser from now on.
		c.jsonMode.Store(false)
		c.log.Warn("the server rejects JSON mode; asking for JSON in the prompt only", "role", role, "error", err.Error())
		c.calls.Add(1)
		resp, err = c.model.GenerateContent(callCtx, content, opts[:2]...)
	}
	elapsed := time.Since(start)
	if err != nil {
		switch {
		case ctx.Err() != nil:
			// The caller's request is gone; keep its cause in the chain (langchaingo drops it).
			err = fmt.Errorf("%w: %w", context.Cause(ctx), err)
		case errors.Is(callCtx.Err(), context.DeadlineExceeded):
			// Our own deadline: say which setting bounds it.
			err = fmt.Errorf("no reply within %s (LLM_TIMEOUT): %w", c.timeout, err)
		}
		err = fmt.Errorf("%s at %s: %w", c.name, c.endpoint, err)
		c.log.Debug("model request failed", "role", role, "elapsed", elapsed, "error", err.Error())
		return "", err
	}
	var b strings.Builder
	for _, ch := range resp.Choices {
		if ch != nil {
			b.WriteString(ch.Content)
		}
	}
	text := strings.TrimSpace(stripReasoning(b.String()))
	c.log.Debug("model request", "role", role, "elapsed", elapsed, "chars", len(text))
	if text == "" {
		return "", errors.New("the reply was empty")
	}
	return text, nil
}

// rejectsJSONMode reports whether err is a server's refusal of the response_format field.
func rejectsJSONMode(err error) bool {
	s := err.Error()
	return strings.Contains(s, "response_format") || strings.Contains(s, "json_object") || strings.Contains(s, "json_schema")
}
