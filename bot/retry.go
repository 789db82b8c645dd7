package bot

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
)

// retry is the HTTP transport under discordgo: each attempt gets its own timeout, and transient
// failures — 5xx answers, a connection reset or cut, an attempt that timed out, a 429 without
// Discord's JSON body (discordgo waits out the JSON ones itself, holding the route's bucket) —
// are tried again with exponential back-off, or after the Retry-After the answer gives, for as
// long as the request's context allows: an answer's edits are tried until the interaction token
// is about to expire. Without a deadline a request is tried at most maxAttempts times. discordgo
// holds the route's rate-limit bucket while its request is in here, so retries respect it.
//
// A retried POST that Discord had in fact carried out (a 500 after the message was created)
// shows twice; losing the answer is worse.
type retry struct {
	next http.RoundTripper
	// attempt bounds one attempt (30 s when 0).
	attempt time.Duration
	// backoff is the first wait (250 ms when 0); it doubles up to maxBackoff.
	backoff time.Duration
}

const (
	maxAttempts = 5
	maxBackoff  = 8 * time.Second
	maxBody     = 32 << 20
)

func (t retry) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	attemptTimeout := cmpOr(t.attempt, 30*time.Second)
	wait := cmpOr(t.backoff, 250*time.Millisecond)
	_, hasDeadline := ctx.Deadline()
	var last *http.Response // the last failed answer, for an attempt cut by the deadline
	for n := 1; ; n++ {
		resp, err := t.once(req, attemptTimeout)
		if err == nil && !transientStatus(resp) {
			return resp, nil
		}
		if ctx.Err() != nil {
			switch {
			case err == nil:
				return resp, nil
			case last != nil:
				// The deadline cut this attempt: the caller sees Discord's last answer.
				return last, nil
			}
			return nil, err
		}
		if resp != nil {
			last = resp
		}
		next := jitter(wait)
		if resp != nil {
			if ra, ok := retryAfter(resp.Header); ok {
				next = ra
			}
		}
		if dl, ok := ctx.Deadline(); (ok && time.Now().Add(next).After(dl)) || (!hasDeadline && n >= maxAttempts) || req.Body != nil && req.GetBody == nil {
			return resp, err // out of time: the caller sees the last failure
		}
		select {
		case <-ctx.Done():
			return resp, err
		case <-time.After(next):
		}
		wait = min(2*wait, maxBackoff)
		if req.GetBody != nil {
			body, gerr := req.GetBody()
			if gerr != nil {
				return resp, err
			}
			req = req.Clone(ctx)
			req.Body = body
		}
	}
}

// once makes one attempt and reads the whole answer within the attempt's timeout.
func (t retry) once(req *http.Request, timeout time.Duration) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(req.Context(), timeout)
	defer cancel()
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("bot: reading Discord's answer: %w", err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// transientStatus reports answers worth another try: 5xx, and a 429 that discordgo cannot read
// (it waits out Discord's own JSON 429s with their bucket).
func transientStatus(resp *http.Response) bool {
	switch {
	case resp.StatusCode >= 500:
		return true
	case resp.StatusCode == http.StatusTooManyRequests:
		body, _ := io.ReadAll(resp.Body)
		resp.Body = io.NopCloser(bytes.NewReader(body))
		var rl discordgo.TooManyRequests
		return json.Unmarshal(body, &rl) != nil
	}
	return false
}

// retryAfter reads how long the answer asks to wait (Retry-After in seconds, or Discord's
// X-RateLimit-Reset-After), at most a minute.
func retryAfter(h http.Header) (time.Duration, bool) {
	for _, k := range []string{"Retry-After", "X-RateLimit-Reset-After"} {
		if s, err := strconv.ParseFloat(h.Get(k), 64); err == nil && s >= 0 {
			return min(time.Duration(s*float64(time.Second)), time.Minute), true
		}
	}
	return 0, false
}

func jitter(d time.Duration) time.Duration {
	return d/2 + time.Duration(rand.Int64N(int64(d)+1))
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// limiters holds one discordgo rate limiter per interaction token. Discord limits an
// interaction's callback, edits and follow-ups per token (and not under the bot's global
// limit); discordgo files such requests under buckets keyed by URLs that hold the token, which
// it keeps forever. Here each token's buckets live in a limiter of their own that is dropped
// once the token has expired: the memory stays bounded by the interactions of the last 15
// minutes.
type limiters struct {
	mu    sync.Mutex
	now   func() time.Time
	byTok map[string]*limiter
	// sweepAt is when expired limiters are next removed.
	sweepAt time.Time
}

type limiter struct {
	rl      *discordgo.RateLimiter
	expires time.Time
}

// interactionLife is how long an interaction token stays usable.
const interactionLife = 15 * time.Minute

func newLimiters(now func() time.Time) *limiters {
	return &limiters{now: now, byTok: map[string]*limiter{}}
}

// get returns the token's limiter, creating it on first use; expired ones are swept out.
func (l *limiters) get(token string) *discordgo.RateLimiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if now.After(l.sweepAt) {
		for k, v := range l.byTok {
			if now.After(v.expires) {
				delete(l.byTok, k)
			}
		}
		l.sweepAt = now.Add(time.Minute)
	}
	v, ok := l.byTok[token]
	if !ok {
		v = &limiter{rl: discordgo.NewRatelimiter(), expires: now.Add(interactionLife)}
		l.byTok[token] = v
	}
	return v.rl
}

// len is how many limiters are held.
func (l *limiters) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.byTok)
}
