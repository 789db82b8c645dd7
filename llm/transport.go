package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-cleanhttp"
	"github.com/hashicorp/go-retryablehttp"
)

// HTTPOptions size and bound the HTTP client shared by the models and the embedders.
type HTTPOptions struct {
	// Retries is the most retries of one request after a transient failure (0: none).
	Retries int
	// MaxWait bounds one wait between attempts; a Retry-After longer than it, or longer than the
	// request's deadline allows, is not waited for.
	MaxWait time.Duration
	// MinWait is the first backoff when the server gives no Retry-After (default 500ms).
	MinWait time.Duration
	// Conns is how many connections per host are kept open for reuse: about the number of
	// model requests in flight at once (concurrent questions × parallel queries).
	Conns int
	Log   *slog.Logger
	// Base is the transport under the retries; nil is a pooled transport sized by Conns.
	Base http.RoundTripper
}

// NewHTTPClient returns the one pooled, retrying HTTP client that every model and embedder
// request goes through (github.com/hashicorp/go-retryablehttp over a pooled transport):
//   - 408, 409, 429, 500, 502–504, 529 and connection failures are retried with bounded
//     exponential backoff that honours Retry-After (seconds, an HTTP date, or retry-after-ms);
//   - authentication, permission and spend-limit failures (401, 402, 403, an
//     "insufficient_quota" 429) never are;
//   - an HTTP 200 whose body is an error (OpenRouter) counts as the error's status;
//   - every attempt is counted, and the provider's own error message (either body shape) kept,
//     for the model call under way (see trace).
func NewHTTPClient(o HTTPOptions) *http.Client {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.MinWait <= 0 {
		o.MinWait = 500 * time.Millisecond
	}
	if o.MaxWait < o.MinWait {
		o.MaxWait = o.MinWait
	}
	if o.Conns <= 0 {
		o.Conns = 32
	}
	pooled := cleanhttp.DefaultPooledTransport()
	pooled.MaxIdleConnsPerHost = o.Conns
	pooled.MaxIdleConns = 4 * o.Conns
	pooled.IdleConnTimeout = 90 * time.Second
	var base http.RoundTripper = pooled
	if o.Base != nil {
		base = o.Base
	}
	rc := &retryablehttp.Client{
		HTTPClient:   &http.Client{Transport: inspect{next: base}},
		Logger:       retryLogger{o.Log},
		RetryWaitMin: o.MinWait,
		RetryWaitMax: o.MaxWait,
		RetryMax:     max(0, o.Retries),
		CheckRetry:   retryPolicy(o.MaxWait),
		Backoff:      backoff,
		// The last response goes back to the provider's client as it came (its body intact), so
		// the client reports it in its own words; trace keeps the parsed error too.
		ErrorHandler: retryablehttp.PassthroughErrorHandler,
	}
	return &http.Client{Transport: &retryablehttp.RoundTripper{Client: rc}}
}

// retryLogger sends retryablehttp's lines to slog at debug level, except the retries, which a
// user should see.
type retryLogger struct{ log *slog.Logger }

func (l retryLogger) Error(msg string, kv ...any) { l.log.Debug("http: "+msg, kv...) }
func (l retryLogger) Info(msg string, kv ...any)  { l.log.Debug("http: "+msg, kv...) }
func (l retryLogger) Debug(msg string, kv ...any) {
	if msg == "retrying request" {
		l.log.Warn("model request failed, retrying", kv...)
		return
	}
	l.log.Debug("http: "+msg, kv...)
}
func (l retryLogger) Warn(msg string, kv ...any) { l.log.Warn("http: "+msg, kv...) }

// APIError is a provider's error reply, read from either body shape: {"error": "…"} (Ollama,
// LM Studio), {"error": {"message": "…", "type": "…", "code": …}} (OpenAI, Anthropic,
// OpenRouter, vLLM) or {"object": "error", "message": "…"} (older vLLM).
type APIError struct {
	Status     int
	Message    string
	Type, Code string
	// RetryAfter is what the server asked to wait (0 when it did not say).
	RetryAfter time.Duration
	// InBody is true for an error carried by an HTTP 200 (OpenRouter).
	InBody bool
}

func (e *APIError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	s := fmt.Sprintf("HTTP %d", e.Status)
	if e.InBody {
		s = fmt.Sprintf("error %d in an HTTP 200 reply", e.Status)
	}
	if e.Status == 529 {
		s += " (overloaded)"
	}
	return s + ": " + msg
}

// NoRetry reports whether the error is one a retry cannot fix: authentication, permission,
// payment or a spent quota.
func (e *APIError) NoRetry() bool {
	switch e.Status {
	case 401, 402, 403:
		return true
	}
	s := strings.ToLower(e.Type + " " + e.Code + " " + e.Message)
	for _, w := range []string{"insufficient_quota", "quota exceeded", "exceeded your current quota", "billing", "credit balance", "spend limit", "spending limit", "insufficient credits", "payment required", "authentication", "permission"} {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// readAPIError parses an error body of any known shape; the message is the body itself when
// it is no JSON.
func readAPIError(status int, h http.Header, body []byte) *APIError {
	e := &APIError{Status: status, RetryAfter: retryAfter(h)}
	var shape struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(body, &shape) != nil {
		e.Message = truncate(strings.TrimSpace(string(body)), 300)
		return e
	}
	e.Message, e.Type, e.Code = shape.Message, shape.Type, rawString(shape.Code)
	var text string
	var obj struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	switch {
	case json.Unmarshal(shape.Error, &text) == nil:
		e.Message = text
	case json.Unmarshal(shape.Error, &obj) == nil:
		e.Message, e.Type, e.Code = cmpOr(obj.Message, e.Message), cmpOr(obj.Type, e.Type), cmpOr(rawString(obj.Code), e.Code)
	}
	return e
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// rawString renders a JSON string or number as text.
func rawString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return strings.Trim(string(raw), `"`)
}

// retryAfter reads Retry-After (seconds or an HTTP date) and retry-after-ms.
func retryAfter(h http.Header) time.Duration {
	if ms := h.Get("retry-after-ms"); ms != "" {
		if v, err := strconv.ParseFloat(ms, 64); err == nil && v > 0 {
			return time.Duration(v * float64(time.Millisecond))
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, time.Until(t))
	}
	return 0
}

// transient reports whether a status is worth another attempt.
func transient(status int) bool {
	switch status {
	case 408, 409, 429, 500, 502, 503, 504, 529:
		return true
	}
	return false
}

// retryPolicy decides retries: transient statuses and connection failures, unless the failure
// is one a retry cannot fix, the server asks for a wait beyond maxWait, or the request's
// deadline comes first.
func retryPolicy(maxWait time.Duration) retryablehttp.CheckRetry {
	return func(ctx context.Context, resp *http.Response, err error) (bool, error) {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		if err != nil {
			return retryablehttp.DefaultRetryPolicy(ctx, resp, err)
		}
		if !transient(resp.StatusCode) {
			return false, nil
		}
		apiErr := peekAPIError(resp)
		if apiErr.NoRetry() || apiErr.RetryAfter > maxWait {
			return false, nil
		}
		if d, ok := ctx.Deadline(); ok && time.Until(d) < apiErr.RetryAfter {
			return false, nil
		}
		return true, nil
	}
}

// backoff waits what the server asked (Retry-After), else doubles from min, never beyond max.
func backoff(minWait, maxWait time.Duration, attempt int, resp *http.Response) time.Duration {
	if resp != nil {
		if d := retryAfter(resp.Header); d > 0 {
			return min(d, maxWait)
		}
	}
	d := minWait << min(attempt, 16)
	if d <= 0 || d > maxWait {
		d = maxWait
	}
	return d
}

// peekAPIError reads a response's error body and puts it back for the next reader.
func peekAPIError(resp *http.Response) *APIError {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return readAPIError(resp.StatusCode, resp.Header, b)
}

// inspect is the innermost layer: for each attempt it counts the request in the model call's
// trace, turns an HTTP 200 that carries an error into that error's status, and records the
// provider's error and a refusal the client library would not report.
type inspect struct{ next http.RoundTripper }

func (t inspect) RoundTrip(req *http.Request) (*http.Response, error) {
	tr := traceOf(req.Context())
	tr.attempt()
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if !strings.Contains(resp.Header.Get("Content-Type"), "json") && resp.StatusCode == http.StatusOK {
		return resp, nil // a stream (NDJSON, SSE) or a file: read by its client
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("reading the reply: %w", err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	if resp.StatusCode != http.StatusOK {
		tr.failed(readAPIError(resp.StatusCode, resp.Header, b))
		return resp, nil
	}
	if !bytes.Contains(b, []byte(`"error"`)) && !bytes.Contains(b, []byte(`"refusal"`)) {
		tr.ok() // the common case, read without decoding (embeddings replies are large)
		return resp, nil
	}
	var body struct {
		Error   json.RawMessage `json:"error"`
		Choices []struct {
			Message struct {
				Refusal *string `json:"refusal"`
			} `json:"message"`
		} `json:"choices"`
	}
	if json.Unmarshal(b, &body) != nil {
		return resp, nil
	}
	if len(body.Error) > 0 && string(body.Error) != "null" && len(body.Choices) == 0 {
		e := readAPIError(http.StatusOK, resp.Header, b)
		e.InBody = true
		e.Status = http.StatusBadGateway
		if c, err := strconv.Atoi(e.Code); err == nil && c >= 400 && c <= 599 {
			e.Status = c
		}
		tr.failed(e)
		resp.StatusCode, resp.Status = e.Status, fmt.Sprintf("%d %s", e.Status, http.StatusText(e.Status))
		return resp, nil
	}
	tr.ok()
	for _, c := range body.Choices {
		if c.Message.Refusal != nil && *c.Message.Refusal != "" {
			tr.refused(*c.Message.Refusal)
		}
	}
	return resp, nil
}

// trace is what the transport saw during one model call: how many requests were sent
// (retries included), the provider's last error and a refusal.
type trace struct {
	mu       sync.Mutex
	attempts int
	err      *APIError
	refusal  string
}

type traceKey struct{}

// withTrace returns a context whose requests are recorded in a new trace.
func withTrace(ctx context.Context) (context.Context, *trace) {
	tr := &trace{}
	return context.WithValue(ctx, traceKey{}, tr), tr
}

// traceOf returns the context's trace, or a throwaway one (embedder requests).
func traceOf(ctx context.Context) *trace {
	if tr, ok := ctx.Value(traceKey{}).(*trace); ok {
		return tr
	}
	return &trace{}
}

func (t *trace) attempt() { t.mu.Lock(); t.attempts++; t.mu.Unlock() }
func (t *trace) failed(e *APIError) {
	t.mu.Lock()
	t.err = e
	t.mu.Unlock()
}
func (t *trace) ok() { t.mu.Lock(); t.err = nil; t.mu.Unlock() }
func (t *trace) refused(s string) {
	t.mu.Lock()
	t.refusal = s
	t.mu.Unlock()
}

// snapshot returns the attempts, the last error and the refusal.
func (t *trace) snapshot() (int, *APIError, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.attempts, t.err, t.refusal
}

// errAPI returns the provider's error behind err when the transport saw one.
func errAPI(err error, tr *trace) error {
	if _, apiErr, _ := tr.snapshot(); apiErr != nil {
		var have *APIError
		if !errors.As(err, &have) {
			return apiErr
		}
	}
	return err
}
