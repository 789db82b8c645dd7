package fakediscord

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// recorder is a testing.TB that collects Errorf calls instead of failing.
type recorder struct {
	*testing.T
	mu     sync.Mutex
	errors []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func TestInvalidRequestsFailTheTest(t *testing.T) {
	rec := &recorder{T: t}
	s := New(rec)
	send := func(method, path, body string) int {
		req, _ := http.NewRequest(method, s.APIURL()+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bot x")
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := send("POST", "/interactions/300000000000000001/tok/callback", `{"type":5,"data":{"flags":64}}`); code != 204 || len(rec.errors) != 0 {
		t.Fatalf("valid deferral: %d %q", code, rec.errors)
	}
	if code := send("PATCH", "/webhooks/"+AppID+"/tok/messages/@original", `{"content":5}`); code != 400 || len(rec.errors) != 1 {
		t.Fatalf("invalid edit: %d %q", code, rec.errors)
	}
	if code := send("POST", "/no/such/route", `{}`); code != 400 || len(rec.errors) != 2 {
		t.Fatalf("unknown route: %d %q", code, rec.errors)
	}
	s.Fail429("PATCH /webhooks/", 1)
	if code := send("PATCH", "/webhooks/"+AppID+"/tok/messages/@original", `{"content":"hi"}`); code != 429 {
		t.Fatalf("injected 429: %d", code)
	}
	if code := send("PATCH", "/webhooks/"+AppID+"/tok/messages/@original", `{"content":"hi"}`); code != 200 {
		t.Fatalf("after the 429: %d", code)
	}
}
