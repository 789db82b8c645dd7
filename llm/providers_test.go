package llm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caprag/caprag/config"
	"github.com/caprag/caprag/llm"
	"github.com/caprag/caprag/rag"
)

// The provider-shape suite: caprag's model path against fake servers that speak each
// provider's wire format as its public API documentation describes it, and that check every
// request caprag sends against that documentation. Each provider is run through each case a
// real model or server produces; the outcome asserted is what the player gets: the answer, its
// citations, the hops, and no reasoning text.
//
// Request shapes checked (from the providers' API references):
//   - OpenAI chat completions (POST /v1/chat/completions; OpenAI, Ollama /v1, LM Studio, vLLM,
//     OpenRouter): Authorization: Bearer; model; messages of {role system|user|assistant,
//     content}; response_format {type: json_schema, json_schema: {name [A-Za-z0-9_-]{1,64},
//     strict, schema: object with properties, required ⊆ properties, additionalProperties
//     false}} for the structured roles and none for the answer; max_completion_tokens
//     (OpenAI) or max_tokens (other servers), positive; temperature in [0, 2], and for OpenAI's
//     reasoning models (o1, o3, o4-mini, gpt-5) absent or 1, "the only supported value"; no
//     stream; no field outside the documented ones.
//   - Ollama native (POST /api/chat, POST /api/show {model}): stream false, think false, format
//     = the JSON schema object for structured roles and absent for the answer, options.num_ctx
//     (the model's window from /api/show, or LLM_CONTEXT_TOKENS) and options.num_predict.
//   - Anthropic Messages (POST /v1/messages): x-api-key, anthropic-version, max_tokens,
//     system as text blocks, messages alternating from user, temperature in [0, 1]; the
//     structured roles send one tool whose input_schema is an object and tool_choice
//     {type: tool, name: that tool}; the answer sends no tool.
//
// Error bodies sent: OpenAI {"error": {"message", "type", "param", "code"}}; Ollama and LM
// Studio {"error": "…"}; vLLM both {"object": "error", "message", "type", "code"} (older) and
// {"error": {…}}; Anthropic {"type": "error", "error": {"type", "message"}}; OpenRouter
// {"error": {"code", "message"}} inside an HTTP 200 once the model has started.

const (
	grappleText    = "When you grapple a creature, the target is grappled (see the condition)."
	definitionText = "A grappled creature's speed becomes 0, and it can't benefit from any bonus to its speed."
	ponder         = "PONDER" // every reasoning text carries it: it must never reach an answer
	providerQ      = "Can I still move while I am grappled?"
)

// grappleBooks finds the grappling passage and eight long unrelated passages for the question,
// and the condition's definition for a query naming the grappled condition.
type grappleBooks struct{}

func (grappleBooks) Retrieve(_ context.Context, query string, _ rag.SearchOptions) ([]rag.Document, error) {
	if strings.Contains(strings.ToLower(query), "grappled") && query != providerQ {
		return []rag.Document{{ID: "def", Book: "SRD", Section: "Conditions > Grappled", Text: definitionText}}, nil
	}
	docs := []rag.Document{{ID: "grapple", Book: "SRD", Section: "Combat > Grappling", Text: grappleText}}
	for i := range 8 {
		docs = append(docs, rag.Document{ID: fmt.Sprint("filler", i), Book: "SRD", Section: fmt.Sprintf("Equipment > Gear %d", i),
			Text: strings.Repeat(fmt.Sprintf("Item %d costs gold pieces and weighs pounds; adventurers carry it in packs. ", i), 26)})
	}
	return docs, nil
}

// Contents is the books' table of contents: every request of the analyzer carries it.
func (grappleBooks) Contents(context.Context, rag.SearchOptions) ([]rag.Heading, error) {
	return grappleTOC, nil
}

var grappleTOC = []rag.Heading{{Book: "SRD", Section: "Combat > Grappling"}, {Book: "SRD", Section: "Conditions > Grappled"}, {Book: "SRD", Section: "Conditions > Prone"}}

// flavour is one provider's server.
type flavour struct {
	name   string
	wire   string // "openai", "ollama", "anthropic"
	model  string
	hosted bool // the default base URL (OpenAI's, Anthropic's), redirected to the fake
	// errBody renders an error reply; inBody sends it with HTTP 200 (OpenRouter, once the
	// model started).
	errBody func(status int, msg string) string
	inBody  bool
}

func openaiErr(status int, msg string) string {
	typ := map[int]string{429: "rate_limit_error", 400: "invalid_request_error"}[status]
	return fmt.Sprintf(`{"error":{"message":%q,"type":%q,"param":null,"code":null}}`, msg, cmpOr(typ, "server_error"))
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

var flavours = []flavour{
	{name: "OpenAI", wire: "openai", model: "o4-mini", hosted: true, errBody: openaiErr},
	{name: "Ollama native", wire: "ollama", model: "qwen3:8b", errBody: func(_ int, m string) string { return fmt.Sprintf(`{"error":%q}`, m) }},
	{name: "Ollama /v1", wire: "openai", model: "qwen3:8b", errBody: func(_ int, m string) string {
		return fmt.Sprintf(`{"error":{"message":%q,"type":"api_error","param":null,"code":null}}`, m)
	}},
	{name: "Anthropic", wire: "anthropic", model: "claude-haiku-4-5", hosted: true, errBody: func(s int, m string) string {
		typ := map[int]string{429: "rate_limit_error", 529: "overloaded_error"}[s]
		return fmt.Sprintf(`{"type":"error","error":{"type":%q,"message":%q}}`, cmpOr(typ, "api_error"), m)
	}},
	{name: "LM Studio", wire: "openai", model: "qwen2.5-7b-instruct", errBody: func(_ int, m string) string { return fmt.Sprintf(`{"error":%q}`, m) }},
	{name: "vLLM (object error)", wire: "openai", model: "Qwen/Qwen3-8B", errBody: func(s int, m string) string {
		return fmt.Sprintf(`{"object":"error","message":%q,"type":"BadRequestError","param":null,"code":%d}`, m, s)
	}},
	{name: "vLLM (nested error)", wire: "openai", model: "Qwen/Qwen3-8B", errBody: func(s int, m string) string {
		return fmt.Sprintf(`{"error":{"message":%q,"type":"BadRequestError","param":null,"code":%d}}`, m, s)
	}},
	{name: "OpenRouter", wire: "openai", model: "deepseek/deepseek-r1", inBody: true, errBody: func(s int, m string) string {
		return fmt.Sprintf(`{"error":{"code":%d,"message":%q,"metadata":{"provider_name":"Fake"}}}`, s, m)
	}},
}

// say is what the model (or the server) does with one request.
type say struct {
	text       string
	finish     string // "", "length", "tool_calls"
	refusal    string
	toolArgs   string // the reply is a tool call with these arguments
	status     int    // an error reply
	retryAfter bool
	slow       bool // never answer: wait for the client to give up
}

// providerCase is a behaviour of a real model or server, and what the player must get.
type providerCase struct {
	name    string
	analyze func(n int, verdict string) say
	write   func(n int, answer string) say
	ctx4k   bool // the server's context window is 4096 tokens and it cuts a longer prompt's head
	timeout time.Duration
	// what the player gets
	hops     int
	cut      bool   // the answer says it was cut
	declined string // the answer says this instead of citing
}

func plain(_ int, s string) say { return say{text: s} }

var providerCases = []providerCase{
	{name: "clean", analyze: plain, write: plain, hops: 2},
	{name: "fenced", analyze: func(_ int, v string) say { return say{text: "```json\n" + v + "\n```"} }, write: plain, hops: 2},
	{name: "prose-wrapped", analyze: func(_ int, v string) say {
		return say{text: "Here is my verdict on the passages {as asked}:\n" + v + "\nI hope this helps!"}
	}, write: plain, hops: 2},
	{name: "renamed keys", analyze: func(_ int, v string) say {
		if strings.Contains(v, `"sufficient":true`) {
			return say{text: `{"enough": "yes"}`}
		}
		return say{text: `{"is_sufficient": false, "search_queries": ["Grappled condition"]}`}
	}, write: plain, hops: 2},
	{name: "null queries", analyze: func(_ int, v string) say {
		if strings.Contains(v, `"sufficient":true`) {
			return say{text: `{"missing": null, "new_queries": null, "sufficient": true}`}
		}
		return say{text: `{"missing": ["Grappled condition"], "new_queries": null, "sufficient": false}`}
	}, write: plain, hops: 2},
	{name: "think-prefixed", analyze: func(_ int, v string) say {
		return say{text: "<think>" + ponder + ` maybe {"sufficient": true, "new_queries": []}</think>` + "\n" + v}
	}, write: func(_ int, a string) say {
		return say{text: "<think>" + ponder + " the answer is yes [1].</think>\n" + a}
	}, hops: 2},
	{name: "lone </think>", analyze: func(_ int, v string) say {
		return say{text: ponder + ` Okay, {"sufficient": true} would be wrong.` + "\n</think>\n\n" + v}
	}, write: func(_ int, a string) say {
		return say{text: ponder + " Let me check passage [1] first.\n</think>\n\n" + a}
	}, hops: 2},
	{name: "unclosed think", analyze: func(n int, v string) say {
		if n == 1 {
			return say{text: "<think>" + ponder + ` The passages mention {"sufficient": true`, finish: "length"}
		}
		return say{text: v}
	}, write: func(n int, a string) say {
		if n == 1 {
			return say{text: "<think>" + ponder + " Grappling [1] means", finish: "length"}
		}
		return say{text: a}
	}, hops: 2},
	{name: "truncated", analyze: func(n int, v string) say {
		if n == 1 {
			return say{text: `{"missing": ["Grap`, finish: "length"}
		}
		return say{text: v}
	}, write: func(_ int, a string) say {
		return say{text: a[:strings.Index(a, ".")+1] + " Grappling is", finish: "length"}
	}, hops: 2, cut: true},
	{name: "refusal", analyze: func(int, string) say { return say{refusal: "I can't help with that request."} },
		write: func(int, string) say { return say{refusal: "I can't help with that request."} }, hops: 1, declined: "can't help with that"},
	{name: "tool_calls", analyze: func(_ int, v string) say { return say{toolArgs: v, finish: "tool_calls"} },
		write: func(n int, a string) say {
			if n == 1 {
				return say{toolArgs: `{"query": "grappled"}`, finish: "tool_calls"}
			}
			return say{text: a}
		}, hops: 2},
	{name: "429 then OK", analyze: func(n int, v string) say {
		if n == 1 {
			return say{status: 429, text: "Rate limit reached, retry shortly", retryAfter: true}
		}
		return say{text: v}
	}, write: plain, hops: 2},
	{name: "529", analyze: func(n int, v string) say {
		if n == 1 {
			return say{status: 529, text: "Overloaded"}
		}
		return say{text: v}
	}, write: func(n int, a string) say {
		if n == 1 {
			return say{status: 529, text: "Overloaded"}
		}
		return say{text: a}
	}, hops: 2},
	{name: "4k context", analyze: plain, write: plain, ctx4k: true, hops: 2},
	{name: "slow", analyze: func(int, string) say { return say{slow: true} }, write: plain, timeout: 300 * time.Millisecond, hops: 1},
}

// fakeProvider serves one flavour through one case.
type fakeProvider struct {
	t     *testing.T
	fl    flavour
	tc    providerCase
	srv   *httptest.Server
	mu    sync.Mutex
	calls map[string]int
	chats int // chat requests received, errors included
	most  int // the most prompt tokens received in one request
}

var passageID = regexp.MustCompile(`<passage id="(\d+)"[^>]*>\n([^\n]*)`)

// answerFor writes the answer a good model gives from the passages of a writer prompt.
func answerFor(prompt string) string {
	ids := map[string]string{}
	for _, m := range passageID.FindAllStringSubmatch(prompt, -1) {
		switch {
		case strings.HasPrefix(m[2], "A grappled creature"):
			ids["def"] = m[1]
		case strings.HasPrefix(m[2], "When you grapple"):
			ids["grapple"] = m[1]
		}
	}
	if ids["def"] == "" {
		return fmt.Sprintf("The passages say a grapple makes the target grappled [%s], but not what that does.", ids["grapple"])
	}
	return fmt.Sprintf("No: a grappled creature's speed becomes 0 [%s]. A grapple is what makes you grappled (Passage %s).", ids["def"], ids["grapple"])
}

func (f *fakeProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req map[string]any
	if r.Method != http.MethodPost || json.Unmarshal(body, &req) != nil {
		f.t.Errorf("%s %s: not a POST with a JSON body", r.Method, r.URL.Path)
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	if f.fl.wire == "ollama" && r.URL.Path == "/api/show" {
		if req["model"] != f.fl.model {
			f.t.Errorf("/api/show body %s: want {\"model\": %q}", body, f.fl.model)
		}
		window := 8192
		if f.tc.ctx4k {
			window = 4096
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"details":{"family":"qwen3"},"model_info":{"general.architecture":"qwen3","qwen3.context_length":%d}}`, window)
		return
	}
	want := map[string]string{"openai": "/v1/chat/completions", "ollama": "/api/chat", "anthropic": "/v1/messages"}[f.fl.wire]
	if r.URL.Path != want {
		f.t.Errorf("request to %s, want %s", r.URL.Path, want)
		http.NotFound(w, r)
		return
	}
	sys, prompt := f.check(r, req)
	role := roleOf(sys)
	tokens := (len(sys) + len(prompt)) / 4
	f.mu.Lock()
	f.calls[role]++
	n := f.calls[role]
	f.chats++
	f.most = max(f.most, tokens)
	f.mu.Unlock()

	var s say
	switch role {
	case "analyze":
		verdict := `{"missing":["the grappled condition"],"new_queries":["Grappled condition"],"sufficient":false}`
		if strings.Contains(prompt, "speed becomes 0") {
			verdict = `{"missing":[],"new_queries":[],"sufficient":true}`
		}
		s = f.tc.analyze(n, verdict)
	case "write":
		s = f.tc.write(n, answerFor(prompt))
	case "expand":
		// multi-hop's first hop searches the expander's queries beside the question
		s = say{text: `{"queries":["grappling"]}`}
	default:
		f.t.Errorf("unexpected role of request: system %q", sys)
	}
	if f.tc.ctx4k && tokens > 4096 {
		// The server keeps the prompt's tail: the instructions are gone.
		s = say{text: "This text is about equipment and gold pieces."}
		tokens = 4096
	}
	if s.slow {
		<-r.Context().Done()
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if s.status != 0 {
		if s.retryAfter {
			w.Header().Set("Retry-After", "1")
			w.Header().Set("retry-after-ms", "30")
		}
		if f.fl.inBody {
			fmt.Fprint(w, f.fl.errBody(s.status, s.text))
			return
		}
		w.WriteHeader(s.status)
		fmt.Fprint(w, f.fl.errBody(s.status, s.text))
		return
	}
	f.reply(w, req, s, tokens)
}

// roleOf names the caprag role of a request from its system prompt.
func roleOf(sys string) string {
	switch {
	case strings.Contains(sys, "judge whether"):
		return "analyze"
	case strings.Contains(sys, "You answer rules questions"):
		return "write"
	case strings.Contains(sys, "search queries that together"):
		return "expand"
	case strings.Contains(sys, "standalone question"):
		return "rewrite"
	}
	return "unknown"
}

func (f *fakeProvider) reply(w http.ResponseWriter, req map[string]any, s say, tokens int) {
	model, _ := req["model"].(string)
	switch f.fl.wire {
	case "openai":
		msg := map[string]any{"role": "assistant", "content": s.text, "refusal": nil}
		finish := cmpOr(s.finish, "stop")
		if s.refusal != "" {
			msg["content"], msg["refusal"] = nil, s.refusal
		}
		if s.toolArgs != "" {
			msg["content"] = nil
			msg["tool_calls"] = []any{map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "answer", "arguments": s.toolArgs}}}
		}
		json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   map[string]any{"prompt_tokens": tokens, "completion_tokens": 20, "total_tokens": tokens + 20},
		})
	case "ollama":
		msg := map[string]any{"role": "assistant", "content": s.text}
		if s.refusal != "" {
			msg["content"] = "I'm sorry, but " + strings.ToLower(s.refusal[:1]) + s.refusal[1:] // Ollama has no refusal field
		}
		if s.toolArgs != "" {
			var args map[string]any
			json.Unmarshal([]byte(s.toolArgs), &args)
			msg["content"] = ""
			msg["tool_calls"] = []any{map[string]any{"function": map[string]any{"name": "answer", "arguments": args}}}
		}
		reason := "stop"
		if s.finish == "length" {
			reason = "length"
		}
		json.NewEncoder(w).Encode(map[string]any{"model": model, "created_at": "2026-11-23T00:00:00Z", "message": msg,
			"done": true, "done_reason": reason, "prompt_eval_count": tokens, "eval_count": 20})
	case "anthropic":
		var content []any
		stop := "end_turn"
		tool := ""
		if tc, ok := req["tool_choice"].(map[string]any); ok {
			tool, _ = tc["name"].(string)
		}
		switch {
		case s.refusal != "":
			stop = "refusal"
			content = append(content, map[string]any{"type": "text", "text": s.refusal})
		case s.toolArgs != "" && tool == "":
			content = append(content, map[string]any{"type": "tool_use", "id": "toolu_1", "name": "search", "input": json.RawMessage(s.toolArgs)})
			stop = "tool_use"
		case tool != "" && (json.Valid([]byte(strings.TrimSpace(s.text))) || s.toolArgs != "") && s.finish != "length":
			in := cmpOr(s.toolArgs, s.text)
			content = append(content, map[string]any{"type": "tool_use", "id": "toolu_1", "name": tool, "input": json.RawMessage(in)})
			stop = "tool_use"
		default:
			content = append(content, map[string]any{"type": "text", "text": s.text})
		}
		if s.finish == "length" {
			stop = "max_tokens"
		}
		if content == nil {
			content = []any{}
		}
		json.NewEncoder(w).Encode(map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": model,
			"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": map[string]any{"input_tokens": tokens, "output_tokens": 20}})
	}
}

// allowed are the documented request fields of each wire format.
var allowed = map[string][]string{
	"openai": {"model", "messages", "temperature", "top_p", "n", "stop", "max_tokens", "max_completion_tokens", "response_format",
		"stream", "stream_options", "seed", "tools", "tool_choice", "frequency_penalty", "presence_penalty", "reasoning_effort", "logprobs", "top_logprobs", "user"},
	"ollama":    {"model", "messages", "format", "options", "stream", "keep_alive", "think", "tools"},
	"anthropic": {"model", "messages", "max_tokens", "system", "temperature", "tools", "tool_choice", "metadata", "stop_sequences", "stream", "top_k", "top_p", "thinking", "service_tier"},
}

var schemaName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// check asserts the request against the provider's documented shape and returns its system and
// user texts.
func (f *fakeProvider) check(r *http.Request, req map[string]any) (sys, prompt string) {
	t, fl := f.t, f.fl
	bad := func(format string, args ...any) { t.Errorf("%s request: "+format, append([]any{fl.name}, args...)...) }
	for k := range req {
		if !slices.Contains(allowed[fl.wire], k) {
			bad("field %q is not in the documented request", k)
		}
	}
	if req["model"] != fl.model {
		bad("model %v, want %q", req["model"], fl.model)
	}
	msgs, _ := req["messages"].([]any)
	if len(msgs) == 0 {
		bad("no messages")
	}
	var roles []string
	var cached []string // the text of the content blocks marked for caching (Anthropic)
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		role, _ := mm["role"].(string)
		roles = append(roles, role)
		text := ""
		switch c := mm["content"].(type) {
		case string:
			text = c
		case []any:
			for _, b := range c {
				bm, _ := b.(map[string]any)
				if bm["type"] != "text" {
					bad("content block of type %v", bm["type"])
				}
				s, _ := bm["text"].(string)
				text += s
				if cc, ok := bm["cache_control"]; ok {
					if ccm, _ := cc.(map[string]any); fl.wire != "anthropic" || len(ccm) != 1 || ccm["type"] != "ephemeral" {
						bad("cache_control %v on a %s content block", cc, fl.wire)
					}
					cached = append(cached, s)
				}
			}
		}
		if text == "" {
			bad("an empty %s message", role)
		}
		switch role {
		case "system":
			sys += text
		case "user":
			prompt += text
		case "assistant":
		default:
			bad("message role %q", role)
		}
	}
	temp, hasTemp := req["temperature"].(float64)
	isWriter := roleOf(sys) == "write"
	if fl.wire == "anthropic" {
		sys = ""
		blocks, _ := req["system"].([]any)
		for _, b := range blocks {
			bm, _ := b.(map[string]any)
			s, _ := bm["text"].(string)
			sys += s
		}
		isWriter = roleOf(sys) == "write"
	}
	switch fl.wire {
	case "openai":
		if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
			bad("no Authorization: Bearer header")
		}
		if roles[0] != "system" {
			bad("the first message is %q, want the system prompt", roles[0])
		}
		if s, ok := req["stream"].(bool); ok && s {
			bad("stream true")
		}
		tokensField, otherField := "max_tokens", "max_completion_tokens"
		if fl.hosted {
			tokensField, otherField = otherField, tokensField
		}
		if n, _ := req[tokensField].(float64); n < 1 {
			bad("%s = %v, want a positive limit", tokensField, req[tokensField])
		}
		if _, ok := req[otherField]; ok {
			bad("%s sent beside %s", otherField, tokensField)
		}
		if strings.HasPrefix(fl.model, "o4") && hasTemp && temp != 1 {
			bad("temperature %v for %s, which supports only the default (1)", temp, fl.model)
		}
		if hasTemp && (temp < 0 || temp > 2) {
			bad("temperature %v outside [0, 2]", temp)
		}
		rf, _ := req["response_format"].(map[string]any)
		switch {
		case isWriter && rf != nil:
			bad("the answer asks for response_format %v", rf)
		case !isWriter && rf == nil:
			bad("a structured role sends no response_format")
		case !isWriter:
			if rf["type"] != "json_schema" {
				bad("response_format type %v, want json_schema", rf["type"])
			}
			js, _ := rf["json_schema"].(map[string]any)
			name, _ := js["name"].(string)
			if !schemaName.MatchString(name) {
				bad("json_schema name %q", name)
			}
			checkSchema(bad, js["schema"])
		}
	case "ollama":
		if s, ok := req["stream"].(bool); !ok || s {
			bad("stream = %v, want false (Ollama streams by default)", req["stream"])
		}
		if th, ok := req["think"].(bool); !ok || th {
			bad("think = %v, want false", req["think"])
		}
		opts, _ := req["options"].(map[string]any)
		wantCtx := 8192.0
		if f.tc.ctx4k {
			wantCtx = 4096
		}
		if opts["num_ctx"] != wantCtx {
			bad("options.num_ctx = %v, want the model's window %v", opts["num_ctx"], wantCtx)
		}
		if n, _ := opts["num_predict"].(float64); n < 1 {
			bad("options.num_predict = %v", opts["num_predict"])
		}
		format, hasFormat := req["format"]
		switch {
		case isWriter && hasFormat:
			bad("the answer sends format %v", format)
		case !isWriter:
			checkSchema(bad, format)
		}
	case "anthropic":
		// The table of contents the expander and the analyzer are shown, whole in Anthropic's
		// window, is the end of the prefix to cache; nothing else is marked (in a 4k window the
		// analyzer's may be cut, and then is not marked).
		switch role := roleOf(sys); {
		case role == "analyze" || role == "expand":
			if len(cached) > 1 || len(cached) == 1 && !strings.HasPrefix(cached[0], "Table of contents of the books") || len(cached) == 0 && !f.tc.ctx4k {
				bad("the %s request's blocks marked for caching: %q, want the table of contents", role, cached)
			}
		case len(cached) > 0:
			bad("a %s request marks %q for caching", role, cached)
		}
		if r.Header.Get("x-api-key") != "sk-ant-test" || r.Header.Get("anthropic-version") == "" {
			bad("headers x-api-key %q, anthropic-version %q", r.Header.Get("x-api-key"), r.Header.Get("anthropic-version"))
		}
		if n, _ := req["max_tokens"].(float64); n < 1 {
			bad("max_tokens = %v", req["max_tokens"])
		}
		if hasTemp && (temp < 0 || temp > 1) {
			bad("temperature %v outside [0, 1]", temp)
		}
		for i, role := range roles {
			if want := []string{"user", "assistant"}[i%2]; role != want {
				bad("message %d has role %q, want %q (alternating from user)", i, role, want)
			}
		}
		tools, _ := req["tools"].([]any)
		tc, _ := req["tool_choice"].(map[string]any)
		switch {
		case isWriter && (len(tools) > 0 || tc != nil):
			bad("the answer sends tools")
		case !isWriter:
			if len(tools) != 1 || tc["type"] != "tool" {
				bad("tools %v, tool_choice %v: want one tool, forced", tools, tc)
				break
			}
			tool, _ := tools[0].(map[string]any)
			if name, _ := tool["name"].(string); !schemaName.MatchString(name) || tc["name"] != name {
				bad("tool name %q, tool_choice %v", name, tc)
			}
			checkSchema(bad, tool["input_schema"])
		}
	}
	return sys, prompt
}

// checkSchema asserts an object schema: properties, required among them.
func checkSchema(bad func(string, ...any), v any) {
	s, _ := v.(map[string]any)
	if s["type"] != "object" {
		bad("schema type %v, want object", s["type"])
		return
	}
	props, _ := s["properties"].(map[string]any)
	if len(props) == 0 {
		bad("schema without properties")
	}
	req, _ := s["required"].([]any)
	for _, r := range req {
		if _, ok := props[r.(string)]; !ok {
			bad("required %v is not a property", r)
		}
	}
}

// redirect sends every request to the fake, whatever host it was addressed to.
type redirect struct{ to *url.URL }

func (r redirect) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.URL.Scheme, req.URL.Host = r.to.Scheme, r.to.Host
	return http.DefaultTransport.RoundTrip(req)
}

func (f *fakeProvider) config() (config.Config, *http.Client) {
	timeout := cmpOrDur(f.tc.timeout, 5*time.Second)
	cfg := config.Config{LLMProvider: f.fl.wire, LLMModel: f.fl.model, LLMTimeout: timeout, LLMAnswerMaxTokens: 700, LLMJSONMaxTokens: 300}
	switch f.fl.wire {
	case "openai":
		if !f.fl.hosted {
			cfg.OpenAIBaseURL = f.srv.URL + "/v1"
		}
		cfg.OpenAIAPIKey = "sk-test"
	case "ollama":
		cfg.OllamaURL = f.srv.URL
	case "anthropic":
		cfg.AnthropicAPIKey = "sk-ant-test"
	}
	if f.tc.ctx4k && f.fl.wire != "ollama" {
		cfg.LLMContextTokens = 4096
	}
	to, _ := url.Parse(f.srv.URL)
	return cfg, llm.NewHTTPClient(llm.HTTPOptions{Retries: 2, MinWait: 5 * time.Millisecond, MaxWait: 2 * time.Second, Base: redirect{to}})
}

func cmpOrDur(a, b time.Duration) time.Duration {
	if a != 0 {
		return a
	}
	return b
}

func TestProviderShapes(t *testing.T) {
	for _, fl := range flavours {
		for _, tc := range providerCases {
			t.Run(fl.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				f := &fakeProvider{t: t, fl: fl, tc: tc, calls: map[string]int{}}
				f.srv = httptest.NewServer(f)
				defer f.srv.Close()
				cfg, hc := f.config()
				log, logs := newLog()
				m, err := llm.New(cfg, llm.Options{HTTPClient: hc, Log: log})
				if err != nil {
					t.Fatal(err)
				}
				p, err := rag.NewPipeline(rag.PipelineOptions{Retriever: grappleBooks{}, Models: m, Strategy: rag.StrategyMultiHop, MaxHops: 3, MaxQueries: 2})
				if err != nil {
					t.Fatal(err)
				}
				a, err := p.Answer(context.Background(), rag.Request{Question: providerQ})
				if err != nil {
					t.Fatalf("Answer: %v\n%s", err, logs)
				}
				assertOutcome(t, tc, a)
				f.mu.Lock()
				defer f.mu.Unlock()
				if a.LLMCalls != f.chats {
					t.Errorf("llm_calls = %d, the server received %d requests (retries must be counted)", a.LLMCalls, f.chats)
				}
				if tc.ctx4k && f.most > 4096 {
					t.Errorf("a request of about %d tokens was sent to a 4096-token model", f.most)
				}
			})
		}
	}
}

func assertOutcome(t *testing.T, tc providerCase, a rag.Answer) {
	t.Helper()
	if len(a.Hops) != tc.hops {
		t.Errorf("%d hops, want %d: %+v", len(a.Hops), tc.hops, a.Hops)
	}
	for _, leak := range []string{ponder, "think>", "<think"} {
		if strings.Contains(a.Text, leak) {
			t.Errorf("reasoning reached the answer (%q): %q", leak, a.Text)
		}
	}
	if strings.Contains(a.Text, cutNoteWords) != tc.cut {
		t.Errorf("answer %q: says it was cut = %v, want %v", a.Text, !tc.cut, tc.cut)
	}
	if tc.declined != "" {
		if !strings.Contains(a.Text, tc.declined) {
			t.Errorf("answer %q does not say the model declined (%q)", a.Text, tc.declined)
		}
		return
	}
	if len(a.Sources) == 0 || !strings.Contains(a.Text, "[1]") {
		t.Fatalf("answer %q cites nothing (sources %+v)", a.Text, a.Sources)
	}
	if tc.hops == 2 && (a.Sources[0].Section != "Conditions > Grappled" || !strings.Contains(a.Text, "speed becomes 0 [1]")) {
		t.Errorf("answer %q, first source %q: want the condition's definition cited as [1]", a.Text, a.Sources[0].Section)
	}
	if len(a.Context) < len(a.Sources) {
		t.Errorf("context (%d) lacks passages the sources (%d) have", len(a.Context), len(a.Sources))
	}
}

const cutNoteWords = "cut short"
