package faultproxy

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestFaults(t *testing.T) {
	var reached atomic.Int64
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		io.WriteString(w, `{"ok":true}`)
	}))
	defer api.Close()
	p := New(t, api.URL, 1,
		Rule{Match: "PATCH /edit", Every: 3, Fault: Status, Status: 503},
		Rule{Match: "POST /rate", Every: 1, Limit: 1, Fault: RateLimit, RetryAfter: 1500 * time.Millisecond, Global: true},
		Rule{Match: "POST /reset", Every: 1, Fault: Reset},
		Rule{Match: "GET /slow", Every: 1, Fault: Slow, Delay: 10 * time.Millisecond},
		Rule{Match: "GET /body", BodyContains: "needle", Every: 1, Fault: Status, Status: 500},
	)
	do := func(method, path, body string) (*http.Response, error) {
		req, _ := http.NewRequest(method, p.URL()+path, strings.NewReader(body))
		return http.DefaultClient.Do(req)
	}
	var codes []int
	for range 6 {
		resp, err := do("PATCH", "/edit", "")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
	}
	if got := codes; got[2] != 503 || got[5] != 503 || got[0] != 200 || got[4] != 200 {
		t.Fatalf("every third: %v", got)
	}
	resp, err := do("POST", "/rate", "")
	if err != nil {
		t.Fatal(err)
	}
	var rl struct {
		RetryAfter float64 `json:"retry_after"`
		Global     bool    `json:"global"`
	}
	json.NewDecoder(resp.Body).Decode(&rl)
	resp.Body.Close()
	if resp.StatusCode != 429 || rl.RetryAfter != 1.5 || !rl.Global || resp.Header.Get("Retry-After") != "1.500" || resp.Header.Get("X-RateLimit-Global") != "true" {
		t.Fatalf("429: %d %+v %v", resp.StatusCode, rl, resp.Header)
	}
	if resp, err := do("POST", "/rate", ""); err != nil || resp.StatusCode != 200 {
		t.Fatalf("a rule with Limit 1 fired twice: %v", err)
	}
	if _, err := do("POST", "/reset", ""); err == nil {
		t.Fatal("reset: the client got an answer")
	}
	if resp, err := do("GET", "/slow", ""); err != nil || resp.StatusCode != 200 {
		t.Fatalf("slow: %v", err)
	}
	if resp, _ := do("GET", "/body", "hay needle hay"); resp.StatusCode != 500 {
		t.Fatalf("body rule: %d", resp.StatusCode)
	}
	if resp, _ := do("GET", "/body", "hay"); resp.StatusCode != 200 {
		t.Fatalf("body rule without the needle: %d", resp.StatusCode)
	}
	inj, total := p.Injected()
	if inj[Status] != 3 || inj[RateLimit] != 1 || inj[Reset] != 1 || inj[Slow] != 1 || total != 12 {
		t.Fatalf("injected %v of %d", inj, total)
	}
	// Faults answered by the proxy never reach the API; slow ones do.
	if got := reached.Load(); got != 12-3-1-1 {
		t.Fatalf("the API saw %d requests", got)
	}
}

// A share is repeatable: the same seed injects the same faults.
func TestShareIsSeeded(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer api.Close()
	run := func() string {
		p := New(t, api.URL, 7, Rule{Share: 0.3, Fault: Status})
		var b strings.Builder
		for range 40 {
			resp, _ := http.Get(p.URL() + "/x")
			resp.Body.Close()
			if resp.StatusCode == 500 {
				b.WriteByte('x')
			} else {
				b.WriteByte('.')
			}
		}
		return b.String()
	}
	a, b := run(), run()
	if a != b || !strings.Contains(a, "x") || !strings.Contains(a, ".") {
		t.Fatalf("%s vs %s", a, b)
	}
}
