package commands

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/caprag/caprag/rag"
)

// refusing is a Responder whose edits with embeds (the answer) fail, as Discord's would when it
// keeps answering 5xx; it records the deadline each call had and what was sent.
type refusing struct {
	mu        sync.Mutex
	deadlines map[string]time.Time
	followups []string
	edits     []string
}

func (r *refusing) note(ctx context.Context, what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if dl, ok := ctx.Deadline(); ok {
		r.deadlines[what] = dl
	}
}

func (r *refusing) Respond(context.Context, *discordgo.Interaction, *discordgo.InteractionResponse) error {
	return nil
}
func (r *refusing) EditResponse(ctx context.Context, _ *discordgo.Interaction, e *discordgo.WebhookEdit) (*discordgo.Message, error) {
	if e.Embeds != nil && len(*e.Embeds) > 0 {
		r.note(ctx, "final")
		return nil, errors.New("HTTP 503 Service Unavailable")
	}
	r.mu.Lock()
	r.edits = append(r.edits, *e.Content)
	r.mu.Unlock()
	return &discordgo.Message{ID: "1"}, nil
}
func (r *refusing) Followup(ctx context.Context, _ *discordgo.Interaction, p *discordgo.WebhookParams) (*discordgo.Message, error) {
	r.note(ctx, "notice")
	r.mu.Lock()
	r.followups = append(r.followups, p.Content)
	r.mu.Unlock()
	return &discordgo.Message{ID: "2"}, nil
}
func (r *refusing) StartThread(context.Context, string, string, string) (*discordgo.Channel, error) {
	return nil, errors.New("no")
}
func (r *refusing) Send(context.Context, string, *discordgo.MessageSend) (*discordgo.Message, error) {
	return nil, errors.New("no")
}
func (r *refusing) Edit(context.Context, *discordgo.MessageEdit) (*discordgo.Message, error) {
	return nil, errors.New("no")
}

type oneAnswer struct{ books }

func (oneAnswer) Answer(context.Context, rag.Request) (rag.Answer, error) {
	return rag.Answer{Question: "q", Text: "Yes [1].", Sources: []rag.Source{{N: 1, Book: "B"}}}, nil
}

// Row 4 of issue 11: the final edit had 20 s and no notice when it failed. It now has until the
// interaction token is about to expire (retried underneath for that long), and a reply that
// still cannot be shown is followed by a notice, which also replaces the progress message.
func TestUndeliveredAnswerGetsANotice(t *testing.T) {
	now := time.Now()
	h := New(Options{Answerer: oneAnswer{}})
	r := &refusing{deadlines: map[string]time.Time{}}
	i := &discordgo.Interaction{ID: snowflakeAt(now), Type: discordgo.InteractionApplicationCommand, Data: discordgo.ApplicationCommandInteractionData{
		Name: "rule", Options: []*discordgo.ApplicationCommandInteractionDataOption{{Name: "question", Type: discordgo.ApplicationCommandOptionString, Value: "Can I?"}},
	}}
	err := h.Interaction(context.Background(), r, i)
	if err == nil || !strings.Contains(err.Error(), "show answer") {
		t.Fatalf("err %v", err)
	}
	expires := now.Add(tokenLife)
	if dl := r.deadlines["final"]; dl.Before(expires.Add(-noticeTime - time.Minute)) {
		t.Fatalf("the final edit's deadline is %s after the question; the token allows %s", dl.Sub(now).Round(time.Second), expires.Sub(now).Round(time.Second))
	}
	if len(r.followups) != 1 || r.followups[0] != undelivered {
		t.Fatalf("follow-ups %q, want the notice", r.followups)
	}
	if last := r.edits[len(r.edits)-1]; last != undelivered {
		t.Fatalf("the reply still shows %q", last)
	}
}

func snowflakeAt(at time.Time) string {
	return strconv.FormatInt((at.UnixMilli()-1420070400000)<<22, 10)
}
