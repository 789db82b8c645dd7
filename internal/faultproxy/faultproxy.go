// Package faultproxy is an HTTP proxy for tests that puts the faults of a remote API between a
// client and a fake of that API: 5xx answers, 429s with Retry-After (in Discord's shape),
// connection resets and slow answers, on a share of the requests. Rules match requests by method
// and path prefix (and optionally a body substring) and fire on every nth matching request or
// with a seeded probability, so a run is repeatable; the proxy counts what it injected.
package faultproxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// Fault is what a rule does to a request it fires on.
type Fault int

// Faults. Status, RateLimit and Reset answer without forwarding the request (the API never sees
// it); Slow forwards it and delays the answer, as a slow server does (the API has acted on it).
const (
	// Status answers with Rule.Status (500 when 0) and a JSON error body.
	Status Fault = iota
	// RateLimit answers 429 with Discord's body ({"retry_after", "global"}) and headers
	// (Retry-After, X-RateLimit-*), for Rule.RetryAfter (50 ms when 0).
	RateLimit
	// Reset closes the connection without an answer (TCP reset).
	Reset
	// Slow delays the API's answer by Rule.Delay.
	Slow
)

func (f Fault) String() string {
	return [...]string{"status", "rate limit", "reset", "slow"}[f]
}

// Rule injects one fault.
type Rule struct {
	// Match is "METHOD /path/prefix" ("PATCH /api/v9/webhooks/"); "" matches every request, a
	// method alone every request with that method.
	Match string
	// BodyContains, when set, must occur in the request body.
	BodyContains string
	// Every fires the rule on every nth matching request (1: all of them); Share fires it with
	// this probability instead (when Every is 0).
	Every int
	Share float64
	// Limit is the most times the rule fires (0: no limit).
	Limit int

	Fault      Fault
	Status     int
	RetryAfter time.Duration
	Global     bool
	Delay      time.Duration
}

// Proxy is a running fault-injecting proxy.
type Proxy struct {
	srv   *httptest.Server
	proxy *httputil.ReverseProxy

	mu       sync.Mutex
	rules    []Rule
	seen     []int // matching requests per rule
	fired    []int // faults injected per rule
	rng      *rand.Rand
	injected map[Fault]int
	total    int
}

// New starts a proxy in front of target (an http:// base URL); it stops when the test ends.
// The first matching rule that fires decides a request's fate.
func New(tb testing.TB, target string, seed uint64, rules ...Rule) *Proxy {
	tb.Helper()
	u, err := url.Parse(target)
	if err != nil {
		tb.Fatal(err)
	}
	p := &Proxy{
		rules: rules, seen: make([]int, len(rules)), fired: make([]int, len(rules)),
		rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), injected: map[Fault]int{},
	}
	p.proxy = &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(u) },
		FlushInterval: -1,
	}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	tb.Cleanup(p.srv.Close)
	return p
}

// URL is the proxy's base URL (use it in place of the target's).
func (p *Proxy) URL() string { return p.srv.URL }

// Injected returns how many times each fault was injected, and how many requests passed.
func (p *Proxy) Injected() (map[Fault]int, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[Fault]int{}
	for k, v := range p.injected {
		out[k] = v
	}
	return out, p.total
}

// pick returns the rule that fires for a request, if any.
func (p *Proxy) pick(method, path string, body []byte) (Rule, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total++
	key := method + " " + path
	for i, r := range p.rules {
		if r.Match != "" && !strings.HasPrefix(key, r.Match) {
			continue
		}
		if r.BodyContains != "" && !bytes.Contains(body, []byte(r.BodyContains)) {
			continue
		}
		p.seen[i]++
		if r.Limit > 0 && p.fired[i] >= r.Limit {
			continue
		}
		fire := false
		switch {
		case r.Every > 0:
			fire = p.seen[i]%r.Every == 0
		case r.Share > 0:
			fire = p.rng.Float64() < r.Share
		}
		if fire {
			p.fired[i]++
			p.injected[r.Fault]++
			return r, true
		}
	}
	return Rule{}, false
}

func (p *Proxy) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	req.Body = io.NopCloser(bytes.NewReader(body))
	r, ok := p.pick(req.Method, req.URL.Path, body)
	if !ok {
		p.proxy.ServeHTTP(w, req)
		return
	}
	switch r.Fault {
	case Status:
		status := r.Status
		if status == 0 {
			status = http.StatusInternalServerError
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]any{"message": fmt.Sprintf("%d: %s", status, http.StatusText(status)), "code": 0})
	case RateLimit:
		ra := r.RetryAfter
		if ra == 0 {
			ra = 50 * time.Millisecond
		}
		secs := ra.Seconds()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", fmt.Sprintf("%.3f", secs))
		w.Header().Set("X-RateLimit-Limit", "5")
		w.Header().Set("X-RateLimit-Remaining", "0")
		w.Header().Set("X-RateLimit-Reset-After", fmt.Sprintf("%.3f", secs))
		if r.Global {
			w.Header().Set("X-RateLimit-Global", "true")
			w.Header().Set("X-RateLimit-Scope", "global")
		} else {
			w.Header().Set("X-RateLimit-Scope", "user")
		}
		w.WriteHeader(http.StatusTooManyRequests)
		_ = json.NewEncoder(w).Encode(map[string]any{"message": "You are being rate limited.", "retry_after": secs, "global": r.Global})
	case Reset:
		hj, ok := w.(http.Hijacker)
		if !ok {
			panic("faultproxy: cannot hijack the connection")
		}
		conn, _, err := hj.Hijack()
		if err != nil {
			return
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // close with RST, not FIN
		}
		conn.Close()
	case Slow:
		rec := httptest.NewRecorder()
		p.proxy.ServeHTTP(rec, req)
		time.Sleep(r.Delay)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	}
}
