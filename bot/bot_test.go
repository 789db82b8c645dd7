package bot_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caprag/caprag/bot"
	"github.com/caprag/caprag/commands"
	"github.com/caprag/caprag/config"
	"github.com/caprag/caprag/internal/fakediscord"
	"github.com/caprag/caprag/rag"
)

// scripted is a fake rag pipeline: a question containing "follow" takes two hops, "fail" fails
// after the first hop, "panic" panics; answers are cached by question.
type scripted struct {
	// shown, when set, waits until the bot has shown a progress text holding all of subs, so
	// the hop-2 edit is seen however slow the machine is.
	shown    func(subs ...string)
	mu       sync.Mutex
	cache    map[string]rag.Answer
	requests []rag.Request
}

func (s *scripted) Books(ctx context.Context, _ string) ([]rag.BookInfo, error) {
	return []rag.BookInfo{{Name: "Basic Set", Passages: 120}, {Name: "Player's Handbook", Passages: 300}}, nil
}

func (s *scripted) Answer(ctx context.Context, req rag.Request) (rag.Answer, error) {
	s.mu.Lock()
	s.requests = append(s.requests, req)
	if a, ok := s.cache[req.Question]; ok && len(req.History) == 0 {
		s.mu.Unlock()
		a.Cached = true
		return a, nil
	}
	s.mu.Unlock()
	q := req.Question
	if len(req.History) > 0 {
		q = req.History[len(req.History)-1].Question + " — " + q // the "rewrite"
	}
	progress := func(p rag.Progress) {
		if req.Progress != nil {
			req.Progress(ctx, p)
		}
	}
	progress(rag.Progress{Stage: rag.HopStarted, Hop: rag.Hop{N: 1, Queries: []string{q}}})
	if strings.Contains(q, "panic") {
		panic("scripted panic")
	}
	if strings.Contains(q, "fail") {
		return rag.Answer{}, errors.New("llm: write answer: connection refused")
	}
	if strings.Contains(q, "slow") {
		time.Sleep(300 * time.Millisecond)
	}
	if strings.Contains(q, "nothing") {
		return rag.Answer{}, fmt.Errorf("rag: %w", rag.ErrNoContext)
	}
	hops := []rag.Hop{{N: 1, Queries: []string{q}, Found: 3, New: 3}}
	progress(rag.Progress{Stage: rag.HopFinished, Hop: hops[0]})
	if strings.Contains(q, "follow") || strings.Contains(q, "two hops") {
		time.Sleep(60 * time.Millisecond) // let a progress edit through
		h2 := rag.Hop{N: 2, Queries: []string{"Rapid Strike"}, Following: []string{"Rapid Strike", "Cinematic Combat"}}
		progress(rag.Progress{Stage: rag.HopStarted, Hop: h2})
		if s.shown != nil && strings.Contains(q, "follow") {
			s.shown(req.Question, "Hop 2 — following")
		} else {
			time.Sleep(60 * time.Millisecond)
		}
		h2.Found, h2.New, h2.Sufficient = 2, 1, true
		progress(rag.Progress{Stage: rag.HopFinished, Hop: h2})
		hops = append(hops, h2)
	}
	text := "You may make two attacks at -6 [1], see also Cinematic Combat [2]."
	if strings.Contains(q, "long") {
		text = strings.Repeat("A long rule explained at length with its citation [1]. ", 150)
	}
	a := rag.Answer{
		Question: q, Strategy: "multi-hop", Text: text, Hops: hops, Elapsed: 1500 * time.Millisecond,
		Sources: []rag.Source{
			{N: 1, Book: "Basic Set", Page: 370, Section: "Rapid Strike", Text: "Rapid Strike: you may attack twice @everyone"},
			{N: 2, Book: "Basic Set", Page: 371, Section: "Cinematic Combat", Text: "Cinematic rules…"},
		},
	}
	s.mu.Lock()
	if s.cache == nil {
		s.cache = map[string]rag.Answer{}
	}
	s.cache[req.Question] = a
	s.mu.Unlock()
	return a, nil
}

func (s *scripted) last() rag.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[len(s.requests)-1]
}

type harness struct {
	fd   *fakediscord.Server
	ans  *scripted
	stop func() error
}

func start(t testing.TB, mod func(*config.Config)) *harness {
	t.Helper()
	// shown looks at the fake's requests; the fake exists once the bot runs (an atomic pointer:
	// the race detector does not see the gateway's socket as synchronisation).
	var fdp atomic.Pointer[fakediscord.Server]
	ans := &scripted{shown: func(subs ...string) {
		seen := 0
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			fd := fdp.Load()
			if fd == nil {
				continue
			}
			reqs := fd.Requests()
			for _, r := range reqs[seen:] {
				all := r.Method == "PATCH"
				for _, sub := range subs {
					all = all && bytes.Contains(r.Body, []byte(sub))
				}
				if all {
					return
				}
			}
			seen = len(reqs)
		}
	}}
	h := startWith(t, mod, ans)
	fdp.Store(h.fd)
	h.ans = ans
	return h
}

// startWith runs the bot against the fake Discord with the given answerer; opts adjust the
// bot's options.
func startWith(t testing.TB, mod func(*config.Config), ans commands.Answerer, opts ...func(*bot.Options)) *harness {
	t.Helper()
	return startOn(t, fakediscord.New(t), mod, ans, opts...)
}

// startOn runs the bot against a running fake Discord (a second bot on the same fake is a
// restart).
func startOn(t testing.TB, fd *fakediscord.Server, mod func(*config.Config), ans commands.Answerer, opts ...func(*bot.Options)) *harness {
	t.Helper()
	cfg := config.Config{
		DiscordToken: "test-token", DiscordAPIURL: fd.APIURL(), DiscordGuildID: fakediscord.GuildID,
		AnswerTimeout: 20 * time.Second, ShutdownTimeout: 5 * time.Second,
	}
	if mod != nil {
		mod(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	bopt := bot.Options{EditInterval: 20 * time.Millisecond, Ready: func() { close(ready) }}
	for _, o := range opts {
		o(&bopt)
	}
	go func() {
		done <- bot.RunWith(ctx, cfg, ans, log, bopt)
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("bot stopped: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("bot not ready")
	}
	var once sync.Once
	var runErr error
	h := &harness{fd: fd, stop: func() error {
		once.Do(func() { cancel(); runErr = <-done })
		return runErr
	}}
	t.Cleanup(func() { _ = h.stop() })
	return h
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// rule dispatches /rule and returns the interaction token.
func (h *harness) rule(question string, opts ...fakediscord.Option) string {
	return h.ruleIn("", question, opts...)
}

func (h *harness) ruleIn(channel, question string, opts ...fakediscord.Option) string {
	opts = append([]fakediscord.Option{{Name: "question", Value: question}}, opts...)
	_, token, p := h.fd.Interaction(2, channel, fakediscord.SlashCommand("rule", opts...), nil)
	h.fd.Dispatch("INTERACTION_CREATE", p)
	return token
}

type message struct {
	Content string `json:"content"`
	Flags   int    `json:"flags"`
	Embeds  []struct {
		Title       string `json:"title"`
		Description string `json:"description"`
		Fields      []struct{ Name, Value string }
		Footer      struct{ Text string }
	} `json:"embeds"`
	Components      []json.RawMessage `json:"components"`
	AllowedMentions *struct {
		Parse []string `json:"parse"`
	} `json:"allowed_mentions"`
	Type int `json:"type"`
	Data *struct {
		Flags           int    `json:"flags"`
		Content         string `json:"content"`
		Choices         []struct{ Name, Value string }
		CustomID        string `json:"custom_id"`
		AllowedMentions *struct {
			Parse []string `json:"parse"`
		} `json:"allowed_mentions"`
	} `json:"data"`
}

func decode(t testing.TB, r fakediscord.Request) message {
	t.Helper()
	var m message
	if err := r.JSON(&m); err != nil {
		t.Fatalf("%s %s: %v: %s", r.Method, r.Path, err, r.Body)
	}
	return m
}

// finalEdit waits for the edit of the token's original response that carries an embed.
func (h *harness) finalEdit(t testing.TB, token string) (message, []fakediscord.Request) {
	t.Helper()
	var final message
	reqs := h.fd.Wait(t, 60*time.Second, "the answer of "+token, func(rs []fakediscord.Request) bool {
		for _, r := range fakediscord.ForToken(rs, token) {
			if r.Method == "PATCH" && r.Status == 200 {
				if m := decode(t, r); len(m.Embeds) > 0 || strings.HasPrefix(m.Content, "⚠️") {
					final = m
					return true
				}
			}
		}
		return false
	})
	return final, fakediscord.ForToken(reqs, token)
}

func TestRuleEndToEnd(t *testing.T) {
	h := start(t, nil)
	// Registration: one bulk overwrite in the guild; only the guild-messages intent.
	var put int
	for _, r := range h.fd.Requests() {
		if r.Method == "PUT" && r.Path == "/applications/"+fakediscord.AppID+"/guilds/"+fakediscord.GuildID+"/commands" {
			put++
		}
	}
	if put != 1 {
		t.Fatalf("want one bulk overwrite of the guild commands, got %d", put)
	}
	sent := time.Now()
	token := h.rule("Can I follow up a Rapid Strike with a feint?")
	final, reqs := h.finalEdit(t, token)

	first := reqs[0]
	if first.Method != "POST" || !strings.HasSuffix(first.Path, "/callback") || decode(t, first).Type != 5 {
		t.Fatalf("first request is not a deferral: %s %s %s", first.Method, first.Path, first.Body)
	}
	// Discord wants the deferral within 3 s; that it comes first, before any progress edit (so
	// before retrieval reports anything), is what this test asserts — a wall-clock bound would
	// measure the machine's load, not the bot.
	t.Logf("deferred %s after dispatch", first.At.Sub(sent))
	var progress []string
	for _, r := range reqs[1:] {
		if m := decode(t, r); r.Method == "PATCH" && len(m.Embeds) == 0 {
			progress = append(progress, m.Content)
		}
	}
	if !containsAny(progress, "🔗 Hop 2 — following: Rapid Strike, Cinematic Combat") {
		t.Fatalf("no hop-2 progress edit among %q", progress)
	}
	e := final.Embeds[0]
	if !strings.Contains(e.Description, "[1]") || len(e.Fields) == 0 || !strings.Contains(e.Fields[0].Value, "[1] Basic Set, p. 370 — Rapid Strike") {
		t.Fatalf("answer lacks its sources: %+v", e)
	}
	if !strings.Contains(e.Footer.Text, "multi-hop · 2 hops · 1.5 s") || strings.Contains(e.Footer.Text, "cached") {
		t.Fatalf("footer %q", e.Footer.Text)
	}
	if len(final.Components) == 0 {
		t.Fatal("answer has no buttons")
	}
	checkNoPings(t, h.fd.Requests())

	// The same question again comes from the cache.
	token = h.rule("Can I follow up a Rapid Strike with a feint?")
	final, _ = h.finalEdit(t, token)
	if !strings.Contains(final.Embeds[0].Footer.Text, "cached") {
		t.Fatalf("repeated question not from the cache: %q", final.Embeds[0].Footer.Text)
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
}

func containsAny(ss []string, sub string) bool {
	for _, s := range ss {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// checkNoPings asserts that every message the bot sent allows no mention.
func checkNoPings(t *testing.T, reqs []fakediscord.Request) {
	t.Helper()
	for _, r := range reqs {
		if len(r.Body) == 0 || r.Body[0] != '{' || r.Method == "PUT" || strings.HasSuffix(r.Path, "/threads") {
			continue
		}
		m := decode(t, r)
		am := m.AllowedMentions
		if strings.HasSuffix(r.Path, "/callback") {
			if m.Type == 8 || m.Type == 9 {
				continue // autocomplete choices and modals are not messages
			}
			am = nil
			if m.Data != nil {
				am = m.Data.AllowedMentions
			}
		}
		if am == nil || len(am.Parse) != 0 {
			t.Errorf("%s %s allows mentions: %s", r.Method, r.Path, r.Body)
		}
	}
}

func TestRuleBadQuestions(t *testing.T) {
	h := start(t, nil)
	for _, tc := range []struct{ q, want string }{
		{"   ", "Please type a question"},
		{strings.Repeat("grapple ", 80), "too long"},
	} {
		token := h.rule(tc.q)
		reqs := h.fd.Wait(t, 10*time.Second, "the refusal", func(rs []fakediscord.Request) bool { return len(fakediscord.ForToken(rs, token)) > 0 })
		m := decode(t, fakediscord.ForToken(reqs, token)[0])
		if m.Type != 4 || m.Data == nil || m.Data.Flags != 64 || !strings.Contains(m.Data.Content, tc.want) {
			t.Errorf("question %q: got %+v", tc.q, m)
		}
	}
	token := h.rule("@everyone <@&123456789012345678> how does grappling work?")
	final, _ := h.finalEdit(t, token)
	if !strings.Contains(final.Embeds[0].Title, "@everyone") {
		t.Fatalf("title %q", final.Embeds[0].Title)
	}
	checkNoPings(t, h.fd.Requests())
}

func TestRuleRetriesA429(t *testing.T) {
	h := start(t, nil)
	h.fd.Fail429("PATCH /webhooks/", 2)
	token := h.rule("Can I follow up a Rapid Strike?")
	final, reqs := h.finalEdit(t, token)
	if len(final.Embeds) == 0 {
		t.Fatal("no answer")
	}
	var limited int
	for _, r := range reqs {
		if r.Status == 429 {
			limited++
		}
	}
	if limited != 2 {
		t.Fatalf("want 2 rate-limited edits retried, saw %d", limited)
	}
}

func TestRuleModelFails(t *testing.T) {
	h := start(t, nil)
	for q, want := range map[string]string{
		"this will fail":    "Something went wrong",
		"nothing matches":   "found nothing",
		"this causes panic": "Internal error",
	} {
		final, _ := h.finalEdit(t, h.rule(q))
		if !strings.Contains(final.Content, want) {
			t.Errorf("%q: reply %q, want %q", q, final.Content, want)
		}
	}
}

func TestRulePrivate(t *testing.T) {
	h := start(t, nil)
	token := h.rule("Is this private?", fakediscord.Option{Name: "private", Value: true}, fakediscord.Option{Name: "book", Value: "Basic Set"}, fakediscord.Option{Name: "strategy", Value: "multi-question"})
	h.finalEdit(t, token)
	first := fakediscord.ForToken(h.fd.Requests(), token)[0]
	if m := decode(t, first); m.Type != 5 || m.Data == nil || m.Data.Flags != 64 {
		t.Fatalf("private answer not deferred as ephemeral: %s", first.Body)
	}
	req := h.ans.last()
	if req.Strategy != "multi-question" || len(req.Books) != 1 || req.Books[0] != "Basic Set" {
		t.Fatalf("request %+v", req)
	}
}

func TestAutocompleteAndBooks(t *testing.T) {
	h := start(t, nil)
	_, token, p := h.fd.Interaction(4, "", fakediscord.SlashCommand("rule", fakediscord.Option{Name: "question", Value: "x"}, fakediscord.Option{Name: "book", Value: "hand", Focused: true}), nil)
	h.fd.Dispatch("INTERACTION_CREATE", p)
	reqs := h.fd.Wait(t, 10*time.Second, "choices", func(rs []fakediscord.Request) bool { return len(fakediscord.ForToken(rs, token)) > 0 })
	m := decode(t, fakediscord.ForToken(reqs, token)[0])
	if m.Type != 8 || len(m.Data.Choices) != 1 || m.Data.Choices[0].Value != "Player's Handbook" {
		t.Fatalf("choices %s", fakediscord.ForToken(reqs, token)[0].Body)
	}
	_, token, p = h.fd.Interaction(2, "", fakediscord.SlashCommand("books"), nil)
	h.fd.Dispatch("INTERACTION_CREATE", p)
	reqs = h.fd.Wait(t, 10*time.Second, "books", func(rs []fakediscord.Request) bool { return len(fakediscord.ForToken(rs, token)) > 0 })
	body := string(fakediscord.ForToken(reqs, token)[0].Body)
	if !strings.Contains(body, "Basic Set") || !strings.Contains(body, "120 passages") || !strings.Contains(body, `"flags":64`) {
		t.Fatalf("books %s", body)
	}
}

func TestLongAnswerSplits(t *testing.T) {
	h := start(t, nil)
	token := h.rule("a long question")
	h.finalEdit(t, token)
	reqs := h.fd.Wait(t, 10*time.Second, "follow-up parts", func(rs []fakediscord.Request) bool {
		for _, r := range fakediscord.ForToken(rs, token) {
			if r.Method == "POST" && !strings.HasSuffix(r.Path, "/callback") {
				return true
			}
		}
		return false
	})
	for _, r := range fakediscord.ForToken(reqs, token) {
		for _, e := range decode(t, r).Embeds {
			if d := e.Description; strings.LastIndex(d, "[") > strings.LastIndex(d, "]") || len(d) > 4096 {
				t.Errorf("part cut mid-citation or too long: …%s", d[max(0, len(d)-40):])
			}
		}
	}
}

// finalEditIn waits until n answers were shown in a thread.
func (h *harness) finalEditIn(t testing.TB, thread string, n int) {
	t.Helper()
	h.fd.Wait(t, 10*time.Second, fmt.Sprintf("%d answers in thread %s", n, thread), func(rs []fakediscord.Request) bool {
		got := 0
		for _, r := range rs {
			if r.Method == "PATCH" && strings.HasPrefix(r.Path, "/channels/"+thread+"/messages/") && strings.Contains(string(r.Body), `"embeds"`) {
				got++
			}
		}
		return got >= n
	})
}

// click presses a button of a message and returns the interaction token.
func (h *harness) click(channel, messageID, customID string) string {
	msg := h.fd.Message(messageID)
	_, token, p := h.fd.Interaction(3, channel, map[string]any{"custom_id": customID, "component_type": 2}, msg)
	h.fd.Dispatch("INTERACTION_CREATE", p)
	return token
}

func TestButtonsAndThreadFollowUps(t *testing.T) {
	h := start(t, nil)
	token := h.rule("How does Rapid Strike work?")
	h.finalEdit(t, token)
	answerID := h.fd.Original(token)
	channel := "400000000000000004"

	// Sources: ephemeral passage texts.
	tk := h.click(channel, answerID, "caprag:sources")
	reqs := h.fd.Wait(t, 10*time.Second, "sources", func(rs []fakediscord.Request) bool { return len(fakediscord.ForToken(rs, tk)) > 0 })
	if body := string(fakediscord.ForToken(reqs, tk)[0].Body); !strings.Contains(body, "you may attack twice") || !strings.Contains(body, `"flags":64`) {
		t.Fatalf("sources %s", body)
	}
	// Feedback is acknowledged.
	tk = h.click(channel, answerID, "caprag:down")
	reqs = h.fd.Wait(t, 10*time.Second, "feedback", func(rs []fakediscord.Request) bool { return len(fakediscord.ForToken(rs, tk)) > 0 })
	if body := string(fakediscord.ForToken(reqs, tk)[0].Body); !strings.Contains(body, "feedback") {
		t.Fatalf("feedback %s", body)
	}
	// Ask a follow-up opens a modal…
	tk = h.click(channel, answerID, "caprag:followup")
	reqs = h.fd.Wait(t, 10*time.Second, "modal", func(rs []fakediscord.Request) bool { return len(fakediscord.ForToken(rs, tk)) > 0 })
	m := decode(t, fakediscord.ForToken(reqs, tk)[0])
	if m.Type != 9 || m.Data.CustomID != "caprag:ask:"+answerID {
		t.Fatalf("modal %s", fakediscord.ForToken(reqs, tk)[0].Body)
	}
	// …whose answer goes to a thread started on the answer, with the earlier question.
	_, tk, p := h.fd.Interaction(5, channel, fakediscord.ModalSubmit("caprag:ask:"+answerID, "question", "and against two foes?"), nil)
	h.fd.Dispatch("INTERACTION_CREATE", p)
	thread := answerID
	h.finalEditIn(t, thread, 1)
	reqs = h.fd.Requests()
	var threads int
	for _, r := range reqs {
		if strings.HasSuffix(r.Path, "/messages/"+answerID+"/threads") {
			threads++
		}
	}
	if threads != 1 {
		t.Fatalf("want one thread started on the answer, got %d", threads)
	}
	req := h.ans.last()
	if len(req.History) != 1 || req.History[0].Question != "How does Rapid Strike work?" {
		t.Fatalf("follow-up history %+v", req.History)
	}
	// The thread's answer is to the rewritten question, which uses the earlier one.
	var shown bool
	for _, r := range reqs {
		if r.Method == "PATCH" && strings.HasPrefix(r.Path, "/channels/"+thread+"/messages/") &&
			strings.Contains(string(r.Body), "How does Rapid Strike work? — and against two foes?") {
			shown = true
		}
	}
	if !shown {
		t.Fatal("the thread's answer does not show the rewritten question")
	}

	// A message in the thread mentioning the bot is a follow-up too, with both turns.
	h.fd.Dispatch("MESSAGE_CREATE", map[string]any{
		"id": h.fd.NewID(), "channel_id": thread, "guild_id": fakediscord.GuildID, "type": 0,
		"content": "<@" + fakediscord.BotID + "> what about a third?", "timestamp": time.Now().UTC().Format(time.RFC3339),
		"author":   map[string]any{"id": "500000000000000005", "username": "player"},
		"mentions": []any{map[string]any{"id": fakediscord.BotID, "username": "caprag", "bot": true}},
	})
	h.finalEditIn(t, thread, 2)
	if req := h.ans.last(); len(req.History) != 2 || req.Question != "what about a third?" {
		t.Fatalf("mention follow-up %+v", req)
	}
	// /rule inside the thread continues it.
	tk = h.ruleIn(thread, "and a fourth?")
	h.finalEdit(t, tk)
	if req := h.ans.last(); len(req.History) != 3 {
		t.Fatalf("/rule in thread history %+v", req.History)
	}
	checkNoPings(t, h.fd.Requests())
}

func TestConcurrentRules(t *testing.T) {
	h := start(t, nil)
	const n = 50
	began := time.Now()
	tokens := make([]string, n)
	for i := range tokens {
		tokens[i] = h.rule(fmt.Sprintf("question %d, two hops", i))
	}
	for _, tk := range tokens {
		final, _ := h.finalEdit(t, tk)
		if len(final.Embeds) == 0 {
			t.Fatalf("%s: no answer", tk)
		}
	}
	t.Logf("%d concurrent /rule (2 hops each) answered in %s", n, time.Since(began))
}

// BenchmarkDeferral measures the time from an INTERACTION_CREATE leaving the fake gateway to the
// deferral reaching the fake REST server (ns/op), through real discordgo and the OpenAPI check.
func BenchmarkDeferral(b *testing.B) {
	h := start(b, nil)
	b.ResetTimer()
	var total time.Duration
	for i := 0; i < b.N; i++ {
		sent := time.Now()
		token := h.rule(fmt.Sprintf("bench %d", i))
		reqs := h.fd.Wait(b, 10*time.Second, "deferral", func(rs []fakediscord.Request) bool { return len(fakediscord.ForToken(rs, token)) > 0 })
		total += fakediscord.ForToken(reqs, token)[0].At.Sub(sent)
		h.finalEdit(b, token)
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N), "µs-to-defer/op")
}

func TestIntentsAndNoToken(t *testing.T) {
	if got := bot.Intents(config.Config{}); got != 1<<9 {
		t.Fatalf("default intents %d, want guild messages only", got)
	}
	if got := bot.Intents(config.Config{DiscordMessageContent: true}); got != 1<<9|1<<15 {
		t.Fatalf("message-content intents %d", got)
	}
	if err := bot.Run(context.Background(), config.Config{}, &scripted{}, nil); !errors.Is(err, config.ErrNoDiscordToken) {
		t.Fatalf("no token: %v", err)
	}
}

// TestEditsRateLimitedPerInteraction shows one user's rate-limited edits do not hold up another
// user's answer: discordgo's shared webhook-edit bucket (bwmarrin/discordgo#1384) would make B's
// edits wait behind A's 429 back-off.
func TestEditsRateLimitedPerInteraction(t *testing.T) {
	h := start(t, nil)
	_, tokenA, pa := h.fd.Interaction(2, "", fakediscord.SlashCommand("rule", fakediscord.Option{Name: "question", Value: "slow user"}), nil)
	h.fd.Fail429After("PATCH /webhooks/"+fakediscord.AppID+"/"+tokenA+"/", 1, 2)
	h.fd.Dispatch("INTERACTION_CREATE", pa)
	h.fd.Wait(t, 10*time.Second, "A's rate-limited edit", func(rs []fakediscord.Request) bool {
		for _, r := range fakediscord.ForToken(rs, tokenA) {
			if r.Status == 429 {
				return true
			}
		}
		return false
	})
	tokenB := h.rule("fast user")
	h.finalEdit(t, tokenB)
	_, reqs := h.finalEdit(t, tokenA)
	var aDone, bDone time.Time
	for _, r := range h.fd.Requests() {
		if r.Method == "PATCH" && r.Status == 200 && strings.Contains(string(r.Body), `"embeds"`) {
			switch {
			case strings.Contains(r.Path, tokenA):
				aDone = r.At
			case strings.Contains(r.Path, tokenB):
				bDone = r.At
			}
		}
	}
	if !bDone.Before(aDone) {
		t.Fatalf("B's answer (%s) waited for A's rate limit (A answered %s); A: %d requests", bDone.Format(time.StampMilli), aDone.Format(time.StampMilli), len(reqs))
	}
}

// TestShutdownFinishesRunningAnswers: a signal stops the bot, but an answer under way lands.
func TestShutdownFinishesRunningAnswers(t *testing.T) {
	h := start(t, nil)
	token := h.rule("a slow question")
	h.fd.Wait(t, 10*time.Second, "the deferral", func(rs []fakediscord.Request) bool { return len(fakediscord.ForToken(rs, token)) > 0 })
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	final, _ := h.finalEdit(t, token)
	if len(final.Embeds) == 0 {
		t.Fatalf("answer under way at shutdown did not land: %+v", final)
	}
}

// TestReplyFollowUpsNeedMessageContent: a reply to the bot's answer in its thread without a
// mention is a follow-up only with DISCORD_MESSAGE_CONTENT=true (its content is empty otherwise).
func TestReplyFollowUpsNeedMessageContent(t *testing.T) {
	for _, content := range []bool{false, true} {
		t.Run(fmt.Sprint("message-content=", content), func(t *testing.T) {
			h := start(t, func(c *config.Config) { c.DiscordMessageContent = content })
			token := h.rule("How does Rapid Strike work?")
			h.finalEdit(t, token)
			answerID := h.fd.Original(token)
			// Open the thread through the follow-up modal.
			_, _, p := h.fd.Interaction(5, "", fakediscord.ModalSubmit("caprag:ask:"+answerID, "question", "and two foes?"), nil)
			h.fd.Dispatch("INTERACTION_CREATE", p)
			h.fd.Wait(t, 10*time.Second, "the modal's answer", func([]fakediscord.Request) bool {
				h.ans.mu.Lock()
				defer h.ans.mu.Unlock()
				return len(h.ans.requests) == 2
			})
			h.finalEditIn(t, answerID, 1)
			h.fd.Dispatch("MESSAGE_CREATE", map[string]any{
				"id": h.fd.NewID(), "channel_id": answerID, "guild_id": fakediscord.GuildID, "type": 19,
				"content": "what about three?", "timestamp": time.Now().UTC().Format(time.RFC3339),
				"author":             map[string]any{"id": "500000000000000005", "username": "player"},
				"mentions":           []any{},
				"referenced_message": map[string]any{"id": answerID, "channel_id": answerID, "content": "", "author": map[string]any{"id": fakediscord.BotID, "username": "caprag", "bot": true}},
			})
			if content {
				h.finalEditIn(t, answerID, 2)
				return
			}
			time.Sleep(300 * time.Millisecond) // give an unwanted answer time to start
			h.ans.mu.Lock()
			n := len(h.ans.requests)
			h.ans.mu.Unlock()
			if n != 2 {
				t.Fatalf("a reply without mention was answered without the message-content intent")
			}
		})
	}
}
