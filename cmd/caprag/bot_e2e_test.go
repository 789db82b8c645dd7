package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/caprag/caprag/bot"
	"github.com/caprag/caprag/config"
	"github.com/caprag/caprag/internal/fakediscord"
	"github.com/caprag/caprag/rag"
)

// slowProgress forwards to the real pipeline and pauses after each hop event, as a language
// model's calls would, so the bot has time to show progress (the offline models answer in
// milliseconds).
type slowProgress struct{ *rag.Pipeline }

func (s slowProgress) Answer(ctx context.Context, req rag.Request) (rag.Answer, error) {
	if p := req.Progress; p != nil {
		req.Progress = func(ctx context.Context, ev rag.Progress) {
			p(ctx, ev)
			time.Sleep(50 * time.Millisecond)
		}
	}
	return s.Pipeline.Answer(ctx, req)
}

// TestBotOnTheRealPipeline runs the bot over the built-in sample books with the offline models,
// through real discordgo and the fake Discord: a multi-hop /rule with progress and sources, the
// same question from the cache, and a thread follow-up rewritten with the earlier question.
func TestBotOnTheRealPipeline(t *testing.T) {
	fd := fakediscord.New(t)
	for k, v := range map[string]string{
		"DATA_DIR": t.TempDir(), "DISCORD_TOKEN": "test-token", "DISCORD_API_URL": fd.APIURL(),
		"DISCORD_GUILD_ID": fakediscord.GuildID, "LLM_PROVIDER": "offline", "VECTOR_STORE": "embedded",
		"EMBEDDINGS_PROVIDER": "local", "RETRIEVAL_STRATEGY": "multi-hop",
	} {
		t.Setenv(k, v)
	}
	cfg, err := config.Load()
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	a := &app{cfg: cfg, log: log}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, closePipeline, err := a.openPipeline(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer closePipeline()
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() {
		done <- bot.RunWith(ctx, cfg, slowProgress{p}, log, bot.Options{EditInterval: 20 * time.Millisecond, Ready: func() { close(ready) }})
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("bot stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("bot not ready")
	}
	defer func() { cancel(); <-done }()

	type embed struct {
		Title, Description string
		Fields             []struct{ Name, Value string }
		Footer             struct{ Text string }
	}
	type msg struct {
		Content string
		Embeds  []embed
	}
	ask := func(channel, question string) (final msg, progress []string) {
		t.Helper()
		_, token, payload := fd.Interaction(2, channel, fakediscord.SlashCommand("rule", fakediscord.Option{Name: "question", Value: question}), nil)
		sent := time.Now()
		fd.Dispatch("INTERACTION_CREATE", payload)
		reqs := fd.Wait(t, 30*time.Second, "the answer to "+question, func(rs []fakediscord.Request) bool {
			for _, r := range fakediscord.ForToken(rs, token) {
				if r.Method == "PATCH" && strings.Contains(string(r.Body), `"embeds":[{`) {
					return true
				}
			}
			return false
		})
		reqs = fakediscord.ForToken(reqs, token)
		if !strings.HasSuffix(reqs[0].Path, "/callback") || !strings.Contains(string(reqs[0].Body), `"type":5`) {
			t.Fatalf("first request is not the deferral: %s %s", reqs[0].Path, reqs[0].Body)
		}
		t.Logf("deferred %s after dispatch", reqs[0].At.Sub(sent)) // first is what is asserted, not a wall-clock bound
		for _, r := range reqs[1:] {
			var m msg
			if err := json.Unmarshal(r.Body, &m); err != nil {
				t.Fatal(err)
			}
			if len(m.Embeds) > 0 {
				final = m
			} else {
				progress = append(progress, m.Content)
			}
		}
		return final, progress
	}

	q := "Can I still cast a spell while I am grappled?"
	final, progress := ask("", q)
	if len(progress) == 0 || !strings.Contains(strings.Join(progress, "\n"), "Hop 1 — searching") {
		t.Fatalf("no hop progress shown: %q", progress)
	}
	e := final.Embeds[len(final.Embeds)-1]
	if len(e.Fields) == 0 || !strings.HasPrefix(e.Fields[0].Value, "[1] ") || !strings.Contains(final.Embeds[0].Description, "[1]") {
		t.Fatalf("answer without sources: %+v", final)
	}
	if !strings.HasPrefix(e.Footer.Text, "multi-hop · ") || strings.Contains(e.Footer.Text, "cached") {
		t.Fatalf("footer %q", e.Footer.Text)
	}
	t.Logf("progress: %q; footer: %s", progress, e.Footer.Text)

	again, _ := ask("", q)
	if f := again.Embeds[len(again.Embeds)-1].Footer.Text; !strings.HasSuffix(f, "· cached") {
		t.Fatalf("repeated question not from the cache: %q", f)
	}

	// A follow-up in the answer's thread: start it with the modal, then /rule in the thread.
	var answerID string
	for _, r := range fd.Requests() {
		if strings.HasSuffix(r.Path, "/callback") {
			answerID = fd.Original(strings.Split(r.Path, "/")[3])
			break
		}
	}
	_, _, payload := fd.Interaction(5, "", fakediscord.ModalSubmit("caprag:ask:"+answerID, "question", "And while restrained?"), nil)
	fd.Dispatch("INTERACTION_CREATE", payload)
	fd.Wait(t, 30*time.Second, "the thread answer", func(rs []fakediscord.Request) bool {
		for _, r := range rs {
			if r.Method == "PATCH" && strings.HasPrefix(r.Path, "/channels/"+answerID+"/messages/") && strings.Contains(string(r.Body), `"embeds":[{`) {
				return true
			}
		}
		return false
	})
	// The follow-up is rewritten with the thread's last question before it is searched (the
	// pipeline returns the question as typed in Answer.Question, so the progress shows the rewrite).
	_, progress = ask(answerID, "what about prone?")
	if !strings.Contains(strings.Join(progress, "\n"), "what about prone? (about: And while restrained?") {
		t.Fatalf("/rule in the thread not rewritten with the thread's last question: %q", progress)
	}
}
