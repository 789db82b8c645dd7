package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	ollamaapi "github.com/ollama/ollama/api"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"
)

// request is one model request, whatever the provider.
type request struct {
	role string
	msgs []message
	// schema, when set, is the JSON schema the reply must follow (structured roles).
	schema *schema
	// maxTokens bounds the reply.
	maxTokens int
	// temperature is sent unless the model refuses one (see fixedTemperature).
	temperature float64
}

// Why a reply ended, in the providers' common words.
const (
	finishStop    = "stop"
	finishLength  = "length"
	finishRefusal = "refusal"
	finishTools   = "tool_calls"
	finishFilter  = "content_filter"
)

// response is a provider's reply, read as it is.
type response struct {
	text string
	// reasoning is what a provider returned in a separate reasoning field (never shown).
	reasoning string
	finish    string
	refusal   string
	// promptTokens is what the provider says it read of the prompt (0: not reported).
	promptTokens int
	// toolCall is true when the model called a tool it was not asked to; toolArgs holds the
	// call's arguments (a server that parses a model's JSON reply as a tool call). For
	// Anthropic's forced tool, text holds the tool's input instead.
	toolCall bool
	toolArgs string
}

// backend sends requests in one provider's wire format.
type backend interface {
	chat(ctx context.Context, r request) (response, error)
}

// fixedTemperature reports the model families that accept no temperature but their default
// (OpenAI's reasoning models: o1, o3, o4-mini, gpt-5 and their dated versions — "only the
// default (1) value is supported").
func fixedTemperature(model string) bool {
	m := strings.ToLower(model)
	if i := strings.LastIndex(m, "/"); i >= 0 {
		m = m[i+1:] // openrouter's "openai/o4-mini"
	}
	for _, p := range []string{"o1", "o3", "o4", "gpt-5"} {
		if m == p || strings.HasPrefix(m, p+"-") {
			return true
		}
	}
	return false
}

// --- OpenAI-compatible servers, through langchaingo ---

// reasoningTokens is added to the output limit of OpenAI's reasoning models, whose
// max_completion_tokens covers their hidden reasoning as well as the reply.
const reasoningTokens = 4096

// Structured-output levels an OpenAI-compatible server is asked for, strongest first; a server
// that rejects one with HTTP 400 or 422 is asked for the next from then on.
const (
	levelSchema = iota // response_format json_schema
	levelObject        // response_format json_object
	levelPrompt        // the prompt alone asks for JSON
)

// lcOpenAI is any OpenAI-compatible chat server (OpenAI, Ollama's /v1, vLLM, LM Studio,
// OpenRouter) through langchaingo's openai package. langchaingo sets response_format per
// client, so each schema has its own client over the one shared HTTP client.
type lcOpenAI struct {
	model   string
	legacy  bool // max_tokens rather than max_completion_tokens
	newLLM  func(rf *openai.ResponseFormat) (*openai.LLM, error)
	text    *openai.LLM
	mu      sync.Mutex
	schemas map[string]*openai.LLM
	level   atomic.Int32
	onLevel func(role string, level int32, err error)
}

func newLCOpenAI(model, base, key string, legacyMaxTokens bool, hc *http.Client, onLevel func(string, int32, error)) (*lcOpenAI, error) {
	b := &lcOpenAI{model: model, legacy: legacyMaxTokens, schemas: map[string]*openai.LLM{}, onLevel: onLevel}
	b.newLLM = func(rf *openai.ResponseFormat) (*openai.LLM, error) {
		// Every setting is passed explicitly: langchaingo's openai package otherwise reads
		// OPENAI_* from the environment behind config's back.
		opts := []openai.Option{openai.WithBaseURL(base), openai.WithToken(key), openai.WithModel(model), openai.WithOrganization(""), openai.WithHTTPClient(hc)}
		if rf != nil {
			opts = append(opts, openai.WithResponseFormat(rf))
		}
		return openai.New(opts...)
	}
	var err error
	b.text, err = b.newLLM(nil)
	return b, err
}

func (b *lcOpenAI) llmFor(s *schema) (*openai.LLM, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if l, ok := b.schemas[s.name]; ok {
		return l, nil
	}
	l, err := b.newLLM(&openai.ResponseFormat{Type: "json_schema", JSONSchema: &openai.ResponseFormatJSONSchema{Name: s.name, Strict: true, Schema: s.lcProperty()}})
	if err != nil {
		return nil, err
	}
	b.schemas[s.name] = l
	return l, nil
}

func (b *lcOpenAI) chat(ctx context.Context, r request) (response, error) {
	for {
		level := b.level.Load()
		if r.schema == nil {
			level = levelPrompt
		}
		model := b.text
		maxTokens := r.maxTokens
		if fixedTemperature(b.model) {
			// OpenAI's reasoning models count their hidden reasoning in the limit.
			maxTokens += reasoningTokens
		}
		opts := []llms.CallOption{llms.WithModel(b.model), llms.WithMaxTokens(maxTokens)}
		if b.legacy {
			// Servers other than OpenAI's document max_tokens (OpenAI's own deprecated it for
			// max_completion_tokens, which its reasoning models require).
			opts = append(opts, openai.WithLegacyMaxTokensField())
		}
		if fixedTemperature(b.model) {
			opts = append(opts, llms.WithTemperature(1))
		} else {
			opts = append(opts, llms.WithTemperature(r.temperature))
		}
		switch level {
		case levelSchema:
			l, err := b.llmFor(r.schema)
			if err != nil {
				return response{}, err
			}
			model = l
		case levelObject:
			opts = append(opts, llms.WithJSONMode())
		}
		resp, err := model.GenerateContent(ctx, lcMessages(r.msgs), opts...)
		if err != nil {
			var apiErr *APIError
			if level < levelPrompt && errors.As(errAPI(err, traceOf(ctx)), &apiErr) && rejectsFormat(apiErr) {
				if b.level.CompareAndSwap(level, level+1) && b.onLevel != nil {
					b.onLevel(r.role, level+1, apiErr)
				}
				continue
			}
			return response{}, err
		}
		var out response
		for _, ch := range resp.Choices {
			if ch == nil {
				continue
			}
			out.text += ch.Content
			out.reasoning += ch.ReasoningContent
			if out.finish == "" {
				out.finish = ch.StopReason
			}
			for _, tc := range ch.ToolCalls {
				out.toolCall = true
				if tc.FunctionCall != nil {
					out.toolArgs += tc.FunctionCall.Arguments
				}
			}
			if ch.FuncCall != nil {
				out.toolCall, out.toolArgs = true, out.toolArgs+ch.FuncCall.Arguments
			}
			if n, ok := ch.GenerationInfo["PromptTokens"].(int); ok && out.promptTokens == 0 {
				out.promptTokens = n
			}
		}
		return out, nil
	}
}

// rejectsFormat reports a refusal of the structured-output request itself: 400 or 422, about
// the response format (or saying nothing at all).
func rejectsFormat(e *APIError) bool {
	if e.Status != http.StatusBadRequest && e.Status != http.StatusUnprocessableEntity {
		return false
	}
	m := strings.ToLower(e.Message)
	return m == "" || strings.Contains(m, "response_format") || strings.Contains(m, "json_schema") ||
		strings.Contains(m, "json_object") || strings.Contains(m, "schema") || strings.Contains(m, "format")
}

func lcMessages(msgs []message) []llms.MessageContent {
	out := make([]llms.MessageContent, len(msgs))
	for i, m := range msgs {
		role := llms.ChatMessageTypeHuman
		switch m.role {
		case roleSystem:
			role = llms.ChatMessageTypeSystem
		case roleAssistant:
			role = llms.ChatMessageTypeAI
		}
		out[i] = llms.TextParts(role, m.text)
	}
	return out
}

// --- Ollama's native API, through github.com/ollama/ollama/api ---

// ollamaNative is Ollama's /api/chat through Ollama's own Go client. langchaingo's ollama
// package sends format "json" only and cannot send a schema or "think": false; Ollama's client
// sends the request Ollama documents: format = the JSON schema, think false, stream false,
// options.num_ctx and num_predict.
type ollamaNative struct {
	client *ollamaapi.Client
	model  string
	numCtx int
}

func newOllamaNative(base, model string, hc *http.Client) (*ollamaNative, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("OLLAMA_URL: %w", err)
	}
	return &ollamaNative{client: ollamaapi.NewClient(u, hc), model: model}, nil
}

// contextLength asks Ollama for the model's context window (/api/show, model_info's
// "<architecture>.context_length"); 0 when it does not say.
func (b *ollamaNative) contextLength(ctx context.Context) (int, error) {
	show, err := b.client.Show(ctx, &ollamaapi.ShowRequest{Model: b.model})
	if err != nil {
		return 0, err
	}
	for k, v := range show.ModelInfo {
		if strings.HasSuffix(k, ".context_length") {
			if f, ok := v.(float64); ok && f > 0 {
				return int(f), nil
			}
		}
	}
	return 0, nil
}

func (b *ollamaNative) chat(ctx context.Context, r request) (response, error) {
	stream := false
	req := &ollamaapi.ChatRequest{
		Model:  b.model,
		Stream: &stream,
		Think:  &ollamaapi.ThinkValue{Value: false},
		Options: map[string]any{
			"num_ctx":     b.numCtx,
			"num_predict": r.maxTokens,
			"temperature": r.temperature,
		},
	}
	if r.schema != nil {
		raw, err := json.Marshal(r.schema.root)
		if err != nil {
			return response{}, err
		}
		req.Format = raw
	}
	for _, m := range r.msgs {
		req.Messages = append(req.Messages, ollamaapi.Message{Role: string(m.role), Content: m.text})
	}
	var out response
	err := b.client.Chat(ctx, req, func(resp ollamaapi.ChatResponse) error {
		out.text += resp.Message.Content
		out.reasoning += resp.Message.Thinking
		for _, tc := range resp.Message.ToolCalls {
			out.toolCall = true
			if b, err := json.Marshal(tc.Function.Arguments); err == nil {
				out.toolArgs += string(b)
			}
		}
		if resp.Done {
			out.finish = resp.DoneReason
			out.promptTokens = resp.PromptEvalCount
		}
		return nil
	})
	return out, err
}

// --- Anthropic's Messages API, through github.com/anthropics/anthropic-sdk-go ---

// anthropicSDK is Anthropic's Messages API (or a gateway speaking it) through Anthropic's own Go
// client: a structured role forces its one tool (tool_choice {"type": "tool"}), whose input
// schema is the reply's schema. langchaingo's anthropic package cannot force a tool.
type anthropicSDK struct {
	client anthropic.Client
	model  string
}

func newAnthropicSDK(base, key, model string, hc *http.Client) *anthropicSDK {
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(), // only config/ reads the environment
		option.WithAPIKey(key),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0), // the shared client retries
	}
	if base != "" {
		opts = append(opts, option.WithBaseURL(base))
	}
	return &anthropicSDK{client: anthropic.NewClient(opts...), model: model}
}

func (b *anthropicSDK) chat(ctx context.Context, r request) (response, error) {
	params := anthropic.MessageNewParams{
		Model:     anthropic.Model(b.model),
		MaxTokens: int64(r.maxTokens),
	}
	if !fixedTemperature(b.model) {
		params.Temperature = anthropic.Float(r.temperature)
	}
	last := ""
	for _, m := range r.msgs {
		block := anthropic.NewTextBlock(m.text)
		if m.cache {
			// the prefix up to here is the same for every question on the same books
			block = anthropic.ContentBlockParamUnion{OfText: &anthropic.TextBlockParam{Text: m.text, CacheControl: anthropic.NewCacheControlEphemeralParam()}}
		}
		switch {
		case m.role == roleSystem:
			params.System = append(params.System, anthropic.TextBlockParam{Text: m.text})
			continue
		case m.role == last:
			// Turns alternate: a second message of the same role joins the previous turn.
			prev := &params.Messages[len(params.Messages)-1]
			prev.Content = append(prev.Content, block)
		case m.role == roleAssistant:
			params.Messages = append(params.Messages, anthropic.NewAssistantMessage(block))
		default:
			params.Messages = append(params.Messages, anthropic.NewUserMessage(block))
		}
		last = m.role
	}
	if r.schema != nil {
		params.Tools = []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{
			Name:        r.schema.name,
			Description: anthropic.String(r.schema.description),
			InputSchema: anthropic.ToolInputSchemaParam{Properties: r.schema.root.Properties, Required: r.schema.root.Required},
		}}}
		params.ToolChoice = anthropic.ToolChoiceParamOfTool(r.schema.name)
	}
	msg, err := b.client.Messages.New(ctx, params)
	if err != nil {
		return response{}, err
	}
	out := response{promptTokens: int(msg.Usage.InputTokens)}
	for _, c := range msg.Content {
		switch c.Type {
		case "text":
			if r.schema == nil {
				out.text += c.Text
			}
		case "thinking":
			out.reasoning += c.Thinking
		case "tool_use":
			if r.schema != nil && c.Name == r.schema.name {
				out.text = string(c.Input)
			} else {
				out.toolCall = true
			}
		}
	}
	switch msg.StopReason {
	case anthropic.StopReasonMaxTokens:
		out.finish = finishLength
	case anthropic.StopReasonRefusal:
		out.finish = finishRefusal
	case anthropic.StopReasonToolUse:
		if r.schema == nil {
			out.finish = finishTools
		} else {
			out.finish = finishStop
		}
	default:
		out.finish = finishStop
	}
	if r.schema != nil && out.text == "" && out.finish == finishStop {
		// A gateway that ignored the forced tool: read the text as the reply.
		for _, c := range msg.Content {
			if c.Type == "text" {
				out.text += c.Text
			}
		}
	}
	return out, nil
}
