// Package llm provides the model-backed roles of the answer pipeline (rag.Expander,
// rag.Analyzer, rag.Writer, rag.Rewriter) for any OpenAI-compatible server (OpenAI, Ollama's
// /v1, vLLM, LM Studio, OpenRouter), Ollama's native API and Anthropic's Messages API.
//
// Clients: OpenAI-compatible servers go through langchaingo (the common surface). Two
// providers go through their own maintained Go clients, behind the same roles, because
// langchaingo cannot express what they need: Ollama's native /api/chat (a JSON schema as
// format, "think": false; github.com/ollama/ollama/api) and Anthropic (a forced tool whose input
// schema is the reply's; github.com/anthropics/anthropic-sdk-go). Every request goes through
// one pooled, retrying HTTP client (NewHTTPClient), shared with the embedders.
//
// Replies are read as they are: structured replies (expansion, analysis) are constrained by a
// JSON schema the provider enforces, and still read tolerantly (fences, prose, reasoning
// however marked, renamed keys, null lists, the last JSON object); a reply cut at the output
// limit or malformed is asked again once, then the role falls back (expander: no extra query;
// analyzer: sufficient), which is logged. The writer's answer cites the passages; one citing
// nothing is asked again once, a cut one says it was cut, a refusal is said in plain words.
//
// Model calls: every HTTP request sent, retries included, is reported to the pipeline
// (rag.CountModelCalls) and counted by Calls.
package llm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
	// placeholderKey is sent to OpenAI-compatible servers that need no key (Ollama, vLLM, LM
	// Studio): langchaingo refuses an empty one.
	placeholderKey = "not-needed"
)

// Context windows assumed when LLM_CONTEXT_TOKENS is unset.
const (
	// OllamaMaxContext caps the window read from an Ollama model (/api/show): Ollama allocates
	// num_ctx whole, and 128k-token models would take gigabytes for passages that need ~10k.
	OllamaMaxContext = 16384
	// ollamaDefaultContext is used when /api/show does not say.
	ollamaDefaultContext = 4096
	// compatibleContext is assumed for an OpenAI-compatible server other than OpenAI's: the
	// default window of Ollama's /v1 and of many local servers, which cut a longer prompt's head
	// silently.
	compatibleContext = 4096
	// hostedContext is assumed for OpenAI's and Anthropic's APIs (their models hold more).
	hostedContext = 100000
)

// ErrNoModel is wrapped by the writer's error when the model did not answer (down, slow, refused).
var ErrNoModel = errors.New("the language model did not answer")

// Options are what New needs besides the settings.
type Options struct {
	// HTTPClient carries every request; nil builds one from the settings (NewHTTPClient).
	HTTPClient *http.Client
	Log        *slog.Logger
}

// HTTPOptionsFrom returns the shared HTTP client's options from the settings.
func HTTPOptionsFrom(cfg config.Config, log *slog.Logger) HTTPOptions {
	return HTTPOptions{Retries: cfg.LLMRetries, MaxWait: cfg.LLMRetryMaxWait, Conns: cfg.LLMMaxConns, Log: log}
}

// New returns the model-backed roles for cfg.LLMProvider: openai, ollama or anthropic.
// "offline" is not served here (the rule-based roles live in rag/).
func New(cfg config.Config, o Options) (rag.Models, error) {
	c, err := newClient(cfg, o)
	if err != nil {
		return rag.Models{}, err
	}
	return c.models(), nil
}

// client is one configured model shared by the four roles.
type client struct {
	be       backend
	provider string
	name     string // the model's name
	endpoint string // where the model is served, for messages
	timeout  time.Duration
	log      *slog.Logger
	calls    atomic.Int64

	// Output limits per role, in tokens.
	answerTokens, jsonTokens int
	// contentsTokens bounds the table of contents in a request (LLM_CONTENTS_TOKENS): -1 a
	// quarter of the window, 0 none.
	contentsTokens int
	// ctxTokens is the context window the prompts are fitted into; for Ollama without
	// LLM_CONTEXT_TOKENS, read from the model on first use (ctxOnce).
	ctxTokens int
	ctxOnce   sync.Once
	ollama    *ollamaNative
	warned    atomic.Bool
}

func newClient(cfg config.Config, o Options) (*client, error) {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.LLMTimeout <= 0 {
		return nil, &config.Error{Var: "LLM_TIMEOUT", Value: cfg.LLMTimeout.String(), Accepted: "a positive duration such as \"90s\""}
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = NewHTTPClient(HTTPOptionsFrom(cfg, log))
	}
	contents, err := cfg.ContentsTokens()
	if err != nil {
		return nil, err
	}
	c := &client{provider: cfg.LLMProvider, name: cfg.LLMModel, timeout: cfg.LLMTimeout, ctxTokens: cfg.LLMContextTokens,
		answerTokens: orDefault(cfg.LLMAnswerMaxTokens, 1024), jsonTokens: orDefault(cfg.LLMJSONMaxTokens, 512), contentsTokens: contents}
	switch cfg.LLMProvider {
	case "openai":
		base, key := cfg.OpenAIBaseURL, cfg.OpenAIAPIKey
		if base == "" {
			if key == "" {
				return nil, errors.New("llm: LLM_PROVIDER=openai needs OPENAI_API_KEY, or OPENAI_BASE_URL for a local OpenAI-compatible server (Ollama, vLLM, LM Studio)")
			}
			base = DefaultOpenAIBaseURL
		}
		base = strings.TrimRight(base, "/")
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
		if c.ctxTokens == 0 {
			c.ctxTokens = compatibleContext
			if base == DefaultOpenAIBaseURL {
				c.ctxTokens = hostedContext
			}
		}
		be, err := newLCOpenAI(c.name, base, key, base != DefaultOpenAIBaseURL, hc, func(role string, level int32, err error) {
			log.Warn("the server rejects this structured-output request; asking for less from now on",
				"role", role, "now", []string{"json_schema", "json_object", "JSON in the prompt only"}[level], "error", err.Error())
		})
		if err != nil {
			return nil, fmt.Errorf("llm: openai: %w", err)
		}
		c.be = be
	case "ollama":
		c.endpoint = cfg.OllamaURL
		if c.name == "" {
			c.name = DefaultOllamaModel
		}
		be, err := newOllamaNative(cfg.OllamaURL, c.name, hc)
		if err != nil {
			return nil, fmt.Errorf("llm: ollama: %w", err)
		}
		c.be, c.ollama = be, be
		be.numCtx = c.ctxTokens
	case "anthropic":
		if cfg.AnthropicAPIKey == "" {
			return nil, errors.New("llm: LLM_PROVIDER=anthropic needs ANTHROPIC_API_KEY")
		}
		if c.name == "" {
			c.name = DefaultAnthropicModel
		}
		c.endpoint = cmpOr(cfg.AnthropicBaseURL, "Anthropic")
		if c.ctxTokens == 0 {
			c.ctxTokens = hostedContext
		}
		c.be = newAnthropicSDK(cfg.AnthropicBaseURL, cfg.AnthropicAPIKey, c.name, hc)
	default:
		return nil, &config.Error{Var: "LLM_PROVIDER", Value: cfg.LLMProvider, Accepted: "openai, ollama, anthropic (offline models live in rag/)"}
	}
	c.log = log.With("provider", c.provider, "model", c.name, "endpoint", c.endpoint)
	return c, nil
}

func orDefault(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
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

// contextTokens returns the window prompts are fitted into. For Ollama without
// LLM_CONTEXT_TOKENS it is the model's own (/api/show), at most OllamaMaxContext, asked once.
func (c *client) contextTokens(ctx context.Context) int {
	c.ctxOnce.Do(func() {
		if c.ollama == nil || c.ctxTokens > 0 {
			return
		}
		showCtx, cancel := context.WithTimeout(ctx, c.timeout)
		defer cancel()
		n, err := c.ollama.contextLength(showCtx)
		switch {
		case err != nil:
			c.log.Warn("could not read the model's context window; assuming the smallest common one (set LLM_CONTEXT_TOKENS)", "tokens", ollamaDefaultContext, "error", err.Error())
			n = ollamaDefaultContext
		case n == 0:
			n = ollamaDefaultContext
		}
		c.ctxTokens = min(n, OllamaMaxContext)
		c.ollama.numCtx = c.ctxTokens
		c.log.Debug("context window", "tokens", c.ctxTokens, "model_says", n)
	})
	return c.ctxTokens
}

// message is one chat message of a request.
type message struct {
	role string
	text string
	// cache marks the end of a prefix that is the same across requests (the system prompt and
	// a whole table of contents): a provider that caches prompts on request (Anthropic) is
	// asked to cache up to here.
	cache bool
}

const (
	roleSystem    = "system"
	roleUser      = "user"
	roleAssistant = "assistant"
)

func system(text string) message    { return message{role: roleSystem, text: text} }
func user(text string) message      { return message{role: roleUser, text: text} }
func assistant(text string) message { return message{role: roleAssistant, text: text} }

// call sends one request under the client's timeout: it counts every HTTP request sent
// (retries included), reports the provider's own error, and warns once when the provider read
// far fewer prompt tokens than were sent (its context window cut the prompt).
func (c *client) call(ctx context.Context, r request) (response, error) {
	c.contextTokens(ctx) // Ollama: num_ctx is known before the first request
	traced, tr := withTrace(ctx)
	callCtx, cancel := context.WithTimeout(traced, c.timeout)
	defer cancel()
	start := time.Now()
	resp, err := c.be.chat(callCtx, r)
	attempts, _, refusal := tr.snapshot()
	c.calls.Add(int64(attempts))
	rag.CountModelCalls(ctx, attempts)
	elapsed := time.Since(start)
	if err != nil {
		err = errAPI(err, tr)
		switch {
		case ctx.Err() != nil:
			// The caller's request is gone; keep its cause in the chain (langchaingo drops it).
			err = fmt.Errorf("%w: %w", context.Cause(ctx), err)
		case errors.Is(callCtx.Err(), context.DeadlineExceeded):
			// Our own deadline: say which setting bounds it.
			err = fmt.Errorf("no reply within %s (LLM_TIMEOUT): %w", c.timeout, err)
		}
		err = fmt.Errorf("%s at %s: %w", c.name, c.endpoint, err)
		c.log.Debug("model request failed", "role", r.role, "elapsed", elapsed, "attempts", attempts, "error", err.Error())
		return response{}, err
	}
	if refusal != "" && resp.refusal == "" {
		resp.refusal, resp.finish = refusal, finishRefusal
	}
	if sent := estimateTokens(r.msgs); resp.promptTokens > 0 && resp.promptTokens*2 < sent {
		level := slog.LevelDebug
		if c.warned.CompareAndSwap(false, true) {
			level = slog.LevelWarn
		}
		c.log.Log(ctx, level, "the provider read far fewer prompt tokens than were sent: its context window is smaller than LLM_CONTEXT_TOKENS and the prompt was cut; set LLM_CONTEXT_TOKENS to the server's window",
			"role", r.role, "prompt_tokens_read", resp.promptTokens, "tokens_sent_about", sent, "LLM_CONTEXT_TOKENS", c.ctxTokens)
	}
	c.log.Debug("model request", "role", r.role, "elapsed", elapsed, "attempts", attempts, "finish", resp.finish, "chars", len(resp.text))
	return resp, nil
}
