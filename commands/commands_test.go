package commands

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/caprag/caprag/rag"
)

func TestSplitNeverCutsACitation(t *testing.T) {
	text := strings.Repeat("word ", 5) + "[12]" + strings.Repeat("x", 30)
	for max := 8; max < len(text); max++ {
		parts := split(text, max)
		if got := strings.Join(parts, " "); strings.ReplaceAll(got, " ", "") != strings.ReplaceAll(text, " ", "") {
			t.Fatalf("max %d: text changed: %q", max, parts)
		}
		for _, p := range parts {
			if strings.Count(p, "[") != strings.Count(p, "]") {
				t.Fatalf("max %d: citation cut: %q", max, parts)
			}
		}
	}
	long := strings.Repeat("A rule [1]. ", 1000)
	for _, p := range split(long, embedText) {
		if len(p) > embedText || !strings.HasSuffix(p, ".") {
			t.Fatalf("part of %d bytes ends %q", len(p), p[len(p)-10:])
		}
	}
}

func TestAnswerEmbeds(t *testing.T) {
	a := rag.Answer{Question: "q", Strategy: "multi-hop", Text: "Yes [1].", Hops: make([]rag.Hop, 2), Elapsed: 3400 * time.Millisecond, Cached: true,
		Sources: []rag.Source{{N: 1, Book: "Basic Set", Page: 370, Section: "Rapid Strike"}, {N: 2, Book: "SRD", Section: "Grappled"}}}
	m := answerMessages(a)
	if len(m) != 1 || len(m[0]) != 1 {
		t.Fatalf("%d messages", len(m))
	}
	e := m[0]
	if e[0].Fields[0].Value != "[1] Basic Set, p. 370 — Rapid Strike\n[2] SRD — Grappled" {
		t.Fatalf("sources %q", e[0].Fields[0].Value)
	}
	if e[0].Footer.Text != "multi-hop · 2 hops · 3.4 s · cached" {
		t.Fatalf("footer %q", e[0].Footer.Text)
	}
}

func TestThrottleLatestWins(t *testing.T) {
	var mu sync.Mutex
	var sent []string
	release := make(chan struct{})
	th := newThrottle(context.Background(), time.Millisecond, func(_ context.Context, s string) {
		mu.Lock()
		sent = append(sent, s)
		n := len(sent)
		mu.Unlock()
		if n == 1 {
			<-release // the first edit is slow; texts set meanwhile collapse
		}
	})
	th.set("one")
	for len(snapshot(&mu, &sent)) == 0 {
		time.Sleep(time.Millisecond)
	}
	th.set("two")
	th.set("three")
	close(release)
	for len(snapshot(&mu, &sent)) < 2 {
		time.Sleep(time.Millisecond)
	}
	th.stop()
	if got := snapshot(&mu, &sent); strings.Join(got, ",") != "one,three" {
		t.Fatalf("sent %q, want one then the latest", got)
	}
}

func snapshot(mu *sync.Mutex, s *[]string) []string {
	mu.Lock()
	defer mu.Unlock()
	return append([]string(nil), *s...)
}

func TestCheckQuestion(t *testing.T) {
	if checkQuestion(" \n ") == "" || checkQuestion(strings.Repeat("é", MaxQuestion+1)) == "" || checkQuestion(strings.Repeat("é", MaxQuestion)) != "" {
		t.Fatal("question limits")
	}
}

func TestAnswerEmbedsFitDiscordLimits(t *testing.T) {
	var sources []rag.Source
	for n := 1; n <= 60; n++ {
		sources = append(sources, rag.Source{N: n, Book: strings.Repeat("Book ", 10), Page: n, Section: strings.Repeat("Section ", 10)})
	}
	a := rag.Answer{Question: "q", Strategy: "multi-hop", Text: strings.Repeat("Rule text [1]. ", 300), Sources: sources}
	if err := checkMessages(answerMessages(a), true); err != nil {
		t.Fatal(err)
	}
}

func TestTokenExpiry(t *testing.T) {
	now := time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC)
	h := New(Options{Now: func() time.Time { return now }})
	snowflake := func(at time.Time) string {
		return fmt.Sprint((at.UnixMilli() - 1420070400000) << 22)
	}
	// Created five minutes ago: ten minutes of token left, less the margin.
	if got := h.expiry(&discordgo.Interaction{ID: snowflake(now.Add(-5 * time.Minute))}); !got.Equal(now.Add(-5 * time.Minute).Add(tokenLife)) {
		t.Fatalf("expiry %s", got)
	}
	// An implausible id counts from receipt.
	if got := h.expiry(&discordgo.Interaction{ID: "300000000000000005"}); !got.Equal(now.Add(tokenLife)) {
		t.Fatalf("expiry %s", got)
	}
}

// refuse is a Responder that fails the test on any call.
type refuse struct{ t *testing.T }

func (r refuse) Respond(context.Context, *discordgo.Interaction, *discordgo.InteractionResponse) error {
	r.t.Fatal("unexpected Respond")
	return nil
}
func (r refuse) EditResponse(context.Context, *discordgo.Interaction, *discordgo.WebhookEdit) (*discordgo.Message, error) {
	r.t.Fatal("unexpected EditResponse")
	return nil, nil
}
func (r refuse) Followup(context.Context, *discordgo.Interaction, *discordgo.WebhookParams) (*discordgo.Message, error) {
	r.t.Fatal("unexpected Followup")
	return nil, nil
}
func (r refuse) StartThread(context.Context, string, string, string) (*discordgo.Channel, error) {
	r.t.Fatal("unexpected StartThread")
	return nil, nil
}
func (r refuse) Send(context.Context, string, *discordgo.MessageSend) (*discordgo.Message, error) {
	r.t.Fatal("unexpected Send")
	return nil, nil
}
func (r refuse) Edit(context.Context, *discordgo.MessageEdit) (*discordgo.Message, error) {
	r.t.Fatal("unexpected Edit")
	return nil, nil
}

func TestMessagesTheBotIgnores(t *testing.T) {
	h := New(Options{})
	bot := &discordgo.User{ID: "1", Bot: true}
	player := &discordgo.User{ID: "2"}
	for name, m := range map[string]*discordgo.Message{
		"own message":        {Author: bot, Content: "hi", Mentions: []*discordgo.User{bot}},
		"other bot":          {Author: &discordgo.User{ID: "3", Bot: true}, Mentions: []*discordgo.User{bot}},
		"no mention":         {Author: player, Content: "grapple?"},
		"reply, no content":  {Author: player, ReferencedMessage: &discordgo.Message{Author: bot}},
		"mention of someone": {Author: player, Content: "<@2> hi", Mentions: []*discordgo.User{player}},
	} {
		if err := h.Message(context.Background(), refuse{t}, m, "1"); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
}
