package commands

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/caprag/caprag/rag"
	"github.com/caprag/caprag/state"
)

// record returns the record of an answer message. The record is stored just after the message
// is sent (its ID comes back with it), so a click that arrives in that instant waits for it
// briefly rather than being told the answer is forgotten.
func (h *Handler) record(ctx context.Context, msgID string) (*state.Answer, error) {
	for try := 0; try < 50; try++ {
		a, ok, err := h.mem.Answer(ctx, msgID)
		if err != nil {
			return nil, err
		}
		if ok {
			return &a, nil
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil, nil
}

// forgotten is the reply to a button of an answer no longer known.
const forgotten = "I no longer remember that answer (it is too old). Ask again with /rule."

// button handles the answer buttons.
func (h *Handler) button(ctx context.Context, r Responder, i *discordgo.Interaction) error {
	id := i.MessageComponentData().CustomID
	var rec *state.Answer
	if i.Message != nil {
		var err error
		if rec, err = h.record(ctx, i.Message.ID); err != nil {
			_ = Ephemeral(ctx, r, i, "I could not read that answer's record. Try again in a moment.")
			return fmt.Errorf("button: %w", err)
		}
	}
	// An answer belongs to its server: a record of another library is never shown.
	if rec == nil || rec.Library != libraryOf(i) {
		return Ephemeral(ctx, r, i, forgotten)
	}
	switch id {
	case idSources:
		return r.Respond(ctx, i, &discordgo.InteractionResponse{
			Type: discordgo.InteractionResponseChannelMessageWithSource,
			Data: &discordgo.InteractionResponseData{Flags: discordgo.MessageFlagsEphemeral, AllowedMentions: noPings(), Embeds: sourceEmbeds(rec.Answer.Sources)},
		})
	case idUp, idDown:
		vote := "up"
		if id == idDown {
			vote = "down"
		}
		v := state.Vote{Message: i.Message.ID, User: UserID(i), Library: rec.Library, Vote: vote, Question: rec.Question, Asked: rec.Answer.Question,
			Answer: rec.Answer.Text, Strategy: rec.Answer.Strategy, Books: rec.Books, Sources: rec.Answer.Sources}
		if err := h.mem.PutVote(ctx, v); err != nil {
			_ = Ephemeral(ctx, r, i, "I could not note your feedback right now. Try again in a moment.")
			return fmt.Errorf("feedback: %w", err)
		}
		h.log.Info("feedback", "vote", vote, "question", rec.Question, "strategy", rec.Answer.Strategy, "sources", len(rec.Answer.Sources), "user", UserID(i), "message", i.Message.ID)
		return Ephemeral(ctx, r, i, "Thanks — your feedback is noted.")
	case idFollowup:
		return r.Respond(ctx, i, &discordgo.InteractionResponse{
			Type: discordgo.InteractionResponseModal,
			Data: &discordgo.InteractionResponseData{
				CustomID: idModal + i.Message.ID,
				Title:    "Ask a follow-up",
				Components: []discordgo.MessageComponent{discordgo.ActionsRow{Components: []discordgo.MessageComponent{
					discordgo.TextInput{CustomID: idModalIn, Label: "Your follow-up question", Style: discordgo.TextInputParagraph, Required: true, MinLength: 1, MaxLength: MaxQuestion},
				}}},
			},
		})
	}
	return Ephemeral(ctx, r, i, "I don't know that button.")
}

// sourceEmbeds lists the cited passages with their text, trimmed.
func sourceEmbeds(sources []rag.Source) []*discordgo.MessageEmbed {
	if len(sources) == 0 {
		return []*discordgo.MessageEmbed{{Title: "Sources", Description: "This answer cites no passage."}}
	}
	per := 3900 / len(sources)
	if per > 1000 {
		per = 1000
	}
	var b strings.Builder
	for _, s := range sources {
		fmt.Fprintf(&b, "**%s**\n%s\n\n", SourceLine(s), truncate(escape(strings.TrimSpace(s.Text)), max(per-320, 40)))
	}
	return []*discordgo.MessageEmbed{{Title: "Sources", Description: truncate(b.String(), 4000)}}
}

// modal handles the follow-up modal: the answer goes to the answer's thread.
func (h *Handler) modal(ctx context.Context, r Responder, i *discordgo.Interaction) error {
	data := i.ModalSubmitData()
	msgID, ok := strings.CutPrefix(data.CustomID, idModal)
	if !ok {
		return Ephemeral(ctx, r, i, "I don't know that form.")
	}
	var question string
	for _, row := range data.Components {
		if ar, ok := row.(*discordgo.ActionsRow); ok {
			for _, c := range ar.Components {
				if ti, ok := c.(*discordgo.TextInput); ok && ti.CustomID == idModalIn {
					question = ti.Value
				}
			}
		}
	}
	if msg := checkQuestion(question); msg != "" {
		return Ephemeral(ctx, r, i, msg)
	}
	if l := h.fair.allow(UserID(i), i.GuildID); l != nil {
		return Ephemeral(ctx, r, i, l.text())
	}
	if err := r.Respond(ctx, i, &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseDeferredChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Flags: discordgo.MessageFlagsEphemeral, AllowedMentions: noPings()},
	}); err != nil {
		return fmt.Errorf("follow-up: defer: %w", err)
	}
	threadID, c, err := h.thread(ctx, r, libraryOf(i), i.ChannelID, msgID)
	if errors.Is(err, errUnknownAnswer) {
		text := "⚠️ " + forgotten
		_, _ = r.EditResponse(ctx, i, &discordgo.WebhookEdit{Content: &text, AllowedMentions: noPings()})
		return nil
	}
	if err != nil {
		text := "⚠️ I could not start a thread for the follow-up (does the bot have the Create Public Threads permission?)."
		_, _ = r.EditResponse(ctx, i, &discordgo.WebhookEdit{Content: &text, AllowedMentions: noPings()})
		return fmt.Errorf("follow-up: start thread: %w", err)
	}
	text := fmt.Sprintf("Answering in <#%s>…", threadID)
	if _, err := r.EditResponse(ctx, i, &discordgo.WebhookEdit{Content: &text, AllowedMentions: noPings()}); err != nil {
		h.log.Warn("follow-up: acknowledge", "err", err)
	}
	return h.followup(ctx, r, threadID, "", c, question, UserID(i))
}

// thread returns the follow-up thread of an answer message, starting it on first use. When
// channelID is itself a follow-up thread, that thread is used. A thread belongs to the library
// of the answer it was started on.
func (h *Handler) thread(ctx context.Context, r Responder, library, channelID, msgID string) (string, *state.Thread, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t, ok, err := h.mem.Thread(ctx, channelID); err != nil || ok {
		if ok && t.Library != library {
			return "", nil, fmt.Errorf("thread %s belongs to another library", channelID)
		}
		return channelID, &t, err
	}
	rec, ok, err := h.mem.Answer(ctx, msgID)
	if err != nil {
		return "", nil, err
	}
	if !ok || rec.Library != library {
		return "", nil, fmt.Errorf("answer %s: %w", msgID, errUnknownAnswer)
	}
	if rec.ThreadID != "" {
		if t, ok, err := h.mem.Thread(ctx, rec.ThreadID); err != nil || ok {
			return rec.ThreadID, &t, err
		}
	}
	th, err := r.StartThread(ctx, channelID, msgID, truncate(rec.Question, 100))
	if err != nil {
		return "", nil, err
	}
	t := state.Thread{Library: rec.Library, Books: rec.Books, Strategy: rec.Strategy, Turns: []rag.Turn{{Question: rec.Answer.Question, Answer: rec.Answer.Text}}}
	if err := h.mem.PutThread(ctx, th.ID, t); err != nil {
		return "", nil, err
	}
	rec.ThreadID = th.ID
	if err := h.mem.PutAnswer(ctx, msgID, rec); err != nil {
		h.log.Warn("follow-up: record the thread", "err", err)
	}
	return th.ID, &t, nil
}

// errUnknownAnswer: the answer a follow-up is for is not known (too old, or of another server).
var errUnknownAnswer = errors.New("the answer is not known")

// addTurn adds a question and its answer to a thread's history, keeping the last maxTurns.
func (h *Handler) addTurn(ctx context.Context, threadID string, turn rag.Turn) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	t, ok, err := h.mem.Thread(ctx, threadID)
	if err != nil || !ok {
		return err
	}
	t.Turns = append(t.Turns, turn)
	if len(t.Turns) > maxTurns {
		t.Turns = t.Turns[len(t.Turns)-maxTurns:]
	}
	return h.mem.PutThread(ctx, threadID, t)
}

// followup answers a follow-up question in a thread, with the thread's history.
func (h *Handler) followup(ctx context.Context, r Responder, threadID, replyTo string, t *state.Thread, question, user string) error {
	s := &channelSink{r: r, channelID: threadID, replyTo: replyTo}
	if err := s.progress(ctx, lookingUp); err != nil {
		return fmt.Errorf("follow-up: %w", err)
	}
	a := ask{question: question, history: t.Turns, books: t.Books, strategy: t.Strategy, library: t.Library, user: user, channelID: threadID, threadID: threadID}
	_, err := h.answer(ctx, a, s)
	return err
}

// lookingUp is the first text of a reply posted in a channel, before the first hop.
const lookingUp = "🔎 Looking it up…"

var mentionRE = regexp.MustCompile(`<@!?\d+>`)

// Message handles a message in a channel the bot sees: a message in a follow-up thread that
// mentions the bot (content arrives with mentions even without the privileged intent) or, with
// the message-content intent, replies to it, is a follow-up. Other messages are ignored.
func (h *Handler) Message(ctx context.Context, r Responder, m *discordgo.Message, botID string) error {
	if m.Author == nil || m.Author.Bot || m.Author.ID == botID {
		return nil
	}
	mentioned := false
	for _, u := range m.Mentions {
		if u.ID == botID {
			mentioned = true
		}
	}
	replied := m.ReferencedMessage != nil && m.ReferencedMessage.Author != nil && m.ReferencedMessage.Author.ID == botID
	if !mentioned && !(replied && h.opt.MessageContent) {
		return nil
	}
	t, known, err := h.mem.Thread(ctx, m.ChannelID)
	if err != nil {
		return fmt.Errorf("mention: %w", err)
	}
	if known && t.Library != m.GuildID {
		known = false
	}
	if !known && !mentioned {
		return nil
	}
	question := strings.TrimSpace(mentionRE.ReplaceAllString(m.Content, ""))
	reply := func(text string) error {
		_, err := r.Send(ctx, m.ChannelID, &discordgo.MessageSend{Content: text, AllowedMentions: noPings(),
			Reference: &discordgo.MessageReference{MessageID: m.ID, ChannelID: m.ChannelID}})
		return err
	}
	if msg := checkQuestion(question); msg != "" {
		return reply(msg)
	}
	if l := h.fair.allow(m.Author.ID, m.GuildID); l != nil {
		return reply(l.text())
	}
	if !known {
		// A mention outside a follow-up thread is a fresh question, answered in place.
		s := &channelSink{r: r, channelID: m.ChannelID, replyTo: m.ID}
		if err := s.progress(ctx, lookingUp); err != nil {
			return fmt.Errorf("mention: %w", err)
		}
		_, err := h.answer(ctx, ask{question: question, user: m.Author.ID, channelID: m.ChannelID, library: m.GuildID}, s)
		return err
	}
	return h.followup(ctx, r, m.ChannelID, m.ID, &t, question, m.Author.ID)
}
