package commands

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/caprag/caprag/rag"
)

// record returns the record of an answer message. The record is stored just after the message
// is sent (its ID comes back with it), so a click that arrives in that instant waits for it
// briefly rather than being told the answer is forgotten.
func (h *Handler) record(ctx context.Context, msgID string) *record {
	for try := 0; try < 50; try++ {
		if v, ok := h.answers.Get(msgID); ok {
			return v.(*record)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}

// button handles the answer buttons.
func (h *Handler) button(ctx context.Context, r Responder, i *discordgo.Interaction) error {
	id := i.MessageComponentData().CustomID
	var rec *record
	if i.Message != nil {
		rec = h.record(ctx, i.Message.ID)
	}
	if rec == nil {
		return Ephemeral(ctx, r, i, "I no longer remember that answer (the bot restarted or it is too old). Ask again with /rule.")
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
		h.log.Info("feedback", "vote", vote, "question", rec.Question, "answer_question", rec.Answer.Question,
			"strategy", rec.Answer.Strategy, "sources", len(rec.Answer.Sources), "user", UserID(i), "message", i.Message.ID)
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
	if err := r.Respond(ctx, i, &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseDeferredChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Flags: discordgo.MessageFlagsEphemeral, AllowedMentions: noPings()},
	}); err != nil {
		return fmt.Errorf("follow-up: defer: %w", err)
	}
	threadID, c, err := h.thread(ctx, r, i.ChannelID, msgID)
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
// channelID is itself a follow-up thread, that thread is used.
func (h *Handler) thread(ctx context.Context, r Responder, channelID, msgID string) (string, *conversation, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if v, ok := h.threads.Get(channelID); ok {
		return channelID, v.(*conversation), nil
	}
	v, ok := h.answers.Get(msgID)
	if !ok {
		return "", nil, fmt.Errorf("answer %s is not known", msgID)
	}
	rec := v.(*record)
	if rec.ThreadID != "" {
		if c, ok := h.threads.Get(rec.ThreadID); ok {
			return rec.ThreadID, c.(*conversation), nil
		}
	}
	th, err := r.StartThread(ctx, channelID, msgID, truncate(rec.Question, 100))
	if err != nil {
		return "", nil, err
	}
	c := &conversation{books: rec.Books, strategy: rec.Strategy}
	c.add(rag.Turn{Question: rec.Answer.Question, Answer: rec.Answer.Text})
	rec.ThreadID = th.ID
	h.threads.SetDefault(th.ID, c)
	return th.ID, c, nil
}

// followup answers a follow-up question in a thread, with the thread's history.
func (h *Handler) followup(ctx context.Context, r Responder, threadID, replyTo string, c *conversation, question, user string) error {
	s := &channelSink{r: r, channelID: threadID, replyTo: replyTo}
	if err := s.progress(ctx, lookingUp); err != nil {
		return fmt.Errorf("follow-up: %w", err)
	}
	a := ask{question: question, history: c.history(), books: c.books, strategy: c.strategy, user: user, channelID: threadID, threadID: threadID, conv: c}
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
	v, known := h.threads.Get(m.ChannelID)
	if !known {
		if !mentioned {
			return nil
		}
		// A mention outside a follow-up thread is a fresh question, answered in place.
		v = &conversation{}
	}
	question := strings.TrimSpace(mentionRE.ReplaceAllString(m.Content, ""))
	if msg := checkQuestion(question); msg != "" {
		_, err := r.Send(ctx, m.ChannelID, &discordgo.MessageSend{Content: msg, AllowedMentions: noPings(),
			Reference: &discordgo.MessageReference{MessageID: m.ID, ChannelID: m.ChannelID}})
		return err
	}
	c := v.(*conversation)
	if !known {
		s := &channelSink{r: r, channelID: m.ChannelID, replyTo: m.ID}
		if err := s.progress(ctx, lookingUp); err != nil {
			return fmt.Errorf("mention: %w", err)
		}
		_, err := h.answer(ctx, ask{question: question, user: m.Author.ID, channelID: m.ChannelID}, s)
		return err
	}
	return h.followup(ctx, r, m.ChannelID, m.ID, c, question, m.Author.ID)
}
