package bot

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Row 11 of issue 11: discordgo kept a rate-limit bucket for every interaction forever. Each
// token's buckets now live in a limiter that is dropped once the token has expired.
func TestInteractionLimitersAreBounded(t *testing.T) {
	now := time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC)
	l := newLimiters(func() time.Time { return now })
	for i := range 500 {
		l.get(string(rune('a'+i%26)) + strings.Repeat("x", i))
	}
	if l.len() != 500 {
		t.Fatalf("%d limiters for 500 live tokens", l.len())
	}
	first := l.get("same")
	if l.get("same") != first {
		t.Fatal("one token, two limiters")
	}
	now = now.Add(interactionLife + 2*time.Minute)
	l.get("fresh")
	if l.len() != 1 {
		t.Fatalf("%d limiters after every other token expired, want 1", l.len())
	}
}

func TestRetryTransport(t *testing.T) {
	var calls atomic.Int64
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(b))
		switch {
		case r.URL.Path == "/flaky" && n <= 2:
			w.WriteHeader(http.StatusServiceUnavailable)
		case r.URL.Path == "/html429" && n == 1:
			w.Header().Set("Retry-After", "0.01")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, "<html>rate limited</html>")
		case r.URL.Path == "/json429":
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"message":"You are being rate limited.","retry_after":0.01,"global":false}`)
		case r.URL.Path == "/gone":
			w.WriteHeader(http.StatusNotFound)
		case r.URL.Path == "/down":
			w.WriteHeader(http.StatusInternalServerError)
		default:
			io.WriteString(w, "ok")
		}
	}))
	defer srv.Close()
	c := &http.Client{Transport: retry{next: http.DefaultTransport, backoff: time.Millisecond}}
	do := func(ctx context.Context, path string) (int, int64) {
		calls.Store(0)
		bodies = nil
		req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+path, strings.NewReader(`{"content":"x"}`))
		resp, err := c.Do(req)
		if err != nil {
			return -1, calls.Load()
		}
		resp.Body.Close()
		return resp.StatusCode, calls.Load()
	}
	ctx := context.Background()
	if code, n := do(ctx, "/flaky"); code != 200 || n != 3 || bodies[2] != `{"content":"x"}` {
		t.Fatalf("503, 503, 200: got %d after %d calls, last body %q", code, n, bodies)
	}
	if code, n := do(ctx, "/html429"); code != 200 || n != 2 {
		t.Fatalf("a 429 without Discord's body: %d after %d calls", code, n)
	}
	if code, n := do(ctx, "/json429"); code != 429 || n != 1 {
		t.Fatalf("Discord's JSON 429 is discordgo's to wait out (with its bucket): %d after %d calls", code, n)
	}
	if code, n := do(ctx, "/gone"); code != 404 || n != 1 {
		t.Fatalf("404 is not retried: %d after %d calls", code, n)
	}
	if code, n := do(ctx, "/down"); code != 500 || n != maxAttempts {
		t.Fatalf("without a deadline: %d after %d calls, want %d attempts", code, n, maxAttempts)
	}
	// With a deadline, retries go on until it, however many that takes.
	dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if code, n := do(dctx, "/down"); code != 500 || n <= maxAttempts {
		t.Fatalf("with a deadline: %d after %d calls, want retries until the deadline", code, n)
	}
	// A slow answer is cut at the attempt timeout and tried again.
	var slow atomic.Int64
	slowSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slow.Add(1) == 1 {
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
			return
		}
		io.WriteString(w, "ok")
	}))
	defer slowSrv.Close()
	sc := &http.Client{Transport: retry{next: http.DefaultTransport, attempt: 100 * time.Millisecond, backoff: time.Millisecond}}
	resp, err := sc.Get(slowSrv.URL)
	if err != nil || resp.StatusCode != 200 || slow.Load() != 2 {
		t.Fatalf("slow answer: %v, %d attempts", err, slow.Load())
	}
}
