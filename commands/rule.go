package commands

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/caprag/caprag/rag"
	"github.com/caprag/caprag/state"
)

// ask is one question to answer and where its reply goes.
type ask struct {
	question string
	books    []string
	strategy string
	private  bool
	history  []rag.Turn
	user     string
	// library is the server whose books (with the shared ones) answer; "" in a direct message.
	library string
	// channelID is where the answer is shown; threadID the follow-up thread it belongs to (the
	// answer is added to its history before it is shown, so the next follow-up sees it).
	channelID string
	threadID  string
	// expires is when the reply can no longer be edited (the interaction token's end); zero
	// for replies posted as channel messages.
	expires time.Time
}

// tokenLife is how long an interaction token lets the bot edit its reply (15 minutes), less a
// margin for the final edit.
const tokenLife = 15*time.Minute - 30*time.Second

// expiry returns when the interaction's token stops working: 15 minutes after the interaction
// was created (its snowflake's time), or after it was received when that time is implausible.
func (h *Handler) expiry(i *discordgo.Interaction) time.Time {
	now := h.opt.Now()
	created, err := discordgo.SnowflakeTimestamp(i.ID)
	if err != nil || created.After(now.Add(time.Minute)) || created.Before(now.Add(-tokenLife)) {
		created = now
	}
	return created.Add(tokenLife)
}

// sink is where an answer's reply is shown: an interaction's original response, or a message
// in a thread.
type sink interface {
	// progress replaces the reply with a progress text.
	progress(ctx context.Context, text string) error
	// final replaces the reply with the answer's first message and sends the others after it;
	// it returns the answer message (the last one, which holds the buttons).
	final(ctx context.Context, msgs [][]*discordgo.MessageEmbed, buttons []discordgo.MessageComponent) (*discordgo.Message, error)
	// fail replaces the reply with an error message.
	fail(ctx context.Context, text string) error
	// notice tells the player, in a message of its own, that the reply could not be shown (the
	// reply itself is replaced too when Discord lets it).
	notice(ctx context.Context, text string) error
}

func (h *Handler) rule(ctx context.Context, r Responder, i *discordgo.Interaction) error {
	var a ask
	for _, o := range i.ApplicationCommandData().Options {
		switch o.Name {
		case "question":
			a.question, _ = o.Value.(string)
		case "book":
			if b, _ := o.Value.(string); strings.TrimSpace(b) != "" {
				a.books = []string{strings.TrimSpace(b)}
			}
		case "strategy":
			a.strategy, _ = o.Value.(string)
		case "private":
			a.private, _ = o.Value.(bool)
		}
	}
	a.user = UserID(i)
	a.library = libraryOf(i)
	a.expires = h.expiry(i)
	if msg := checkQuestion(a.question); msg != "" {
		return Ephemeral(ctx, r, i, msg)
	}
	if l := h.fair.allow(a.user, i.GuildID); l != nil {
		return Ephemeral(ctx, r, i, l.text())
	}
	// Acknowledge first: no retrieval or model call before the deferral.
	flags := discordgo.MessageFlags(0)
	if a.private {
		flags = discordgo.MessageFlagsEphemeral
	}
	if err := r.Respond(ctx, i, &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseDeferredChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Flags: flags, AllowedMentions: noPings()},
	}); err != nil {
		return fmt.Errorf("rule: defer: %w", err)
	}
	// /rule inside a follow-up thread continues its conversation.
	t, ok, err := h.mem.Thread(ctx, i.ChannelID)
	if err != nil {
		h.log.Warn("rule: read the thread", "err", err)
	}
	a.channelID = i.ChannelID
	if ok && t.Library == a.library {
		a.history = t.Turns
		if len(a.books) == 0 {
			a.books = t.Books
		}
		a.threadID = i.ChannelID
	}
	_, err = h.answer(ctx, a, &interactionSink{r: r, i: i, private: a.private})
	return err
}

// checkQuestion returns what is wrong with a question, or "".
func checkQuestion(q string) string {
	q = strings.TrimSpace(q)
	switch {
	case q == "":
		return "Please type a question, for example `/rule question: How does grappling work?`"
	case utf8.RuneCountInString(q) > MaxQuestion:
		return fmt.Sprintf("That question is too long (%d characters); please keep it under %d.", utf8.RuneCountInString(q), MaxQuestion)
	}
	return ""
}

// Time to show an answer. An interaction token lives 15 minutes (expires keeps a margin): the
// answer must leave at least deliverTime to show it, retried as long as that takes, and the
// last noticeTime of the token is kept for saying that it could not be shown. A reply posted as
// a channel message has no token: it gets deliverTime and noticeTime after the answer.
const (
	deliverTime = 2 * time.Minute
	noticeTime  = 30 * time.Second
	// progressTime bounds one progress edit with its retries: a lost progress edit is replaced
	// by the next, and the answer waits for a running one.
	progressTime = 10 * time.Second
)

// undelivered is the notice a player gets when the reply could not be shown.
const undelivered = "⚠️ Discord did not accept my reply to this question, so it is missing or incomplete here. Please ask again."

// answer runs the pipeline with progress shown in s, then shows the answer (or the error). A
// reply that Discord still refuses when its time is up is followed by a short notice.
func (h *Handler) answer(ctx context.Context, a ask, s sink) (*state.Answer, error) {
	start := h.opt.Now()
	deadline := start.Add(h.opt.AnswerTimeout)
	if !a.expires.IsZero() {
		deadline = minTime(deadline, a.expires.Add(-noticeTime-deliverTime))
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	th := newThrottle(ctx, h.opt.EditInterval, func(ctx context.Context, text string) {
		ctx, cancel := context.WithTimeout(ctx, progressTime)
		defer cancel()
		if err := s.progress(ctx, text); err != nil {
			h.log.Warn("progress edit", "err", err)
		}
	})
	var lines []string
	req := rag.Request{
		Question: strings.TrimSpace(a.question), Books: a.books, Library: a.library, Strategy: a.strategy, History: a.history,
		Progress: func(_ context.Context, p rag.Progress) {
			line := progressLine(p)
			if p.Stage == rag.HopFinished && len(lines) > 0 {
				lines[len(lines)-1] = line
			} else {
				lines = append(lines, line)
			}
			th.set(truncate(strings.Join(lines, "\n"), 1900))
		},
	}
	ans, err := h.opt.Answerer.Answer(ctx, req)
	th.stop()
	// Showing the reply has its own deadline: the answer's may be spent, the token is not.
	deliverBy := h.opt.Now().Add(deliverTime)
	if !a.expires.IsZero() {
		deliverBy = a.expires.Add(-noticeTime)
	}
	base := context.WithoutCancel(ctx)
	fctx, fcancel := context.WithDeadline(base, deliverBy)
	defer fcancel()
	if err != nil {
		if ferr := s.fail(fctx, h.errorText(ctx, err, a)); ferr != nil {
			h.log.Error("show error", "err", ferr)
			h.notify(base, s, deliverBy)
		}
		return nil, fmt.Errorf("rule: answer %q: %w", a.question, err)
	}
	if ans.Elapsed == 0 {
		ans.Elapsed = h.opt.Now().Sub(start)
	}
	if a.threadID != "" {
		if err := h.addTurn(base, a.threadID, rag.Turn{Question: ans.Question, Answer: ans.Text}); err != nil {
			h.log.Warn("thread history", "err", err)
		}
	}
	msg, err := s.final(fctx, answerMessages(ans), answerButtons(a.private))
	if err != nil {
		h.notify(base, s, deliverBy)
		return nil, fmt.Errorf("rule: show answer: %w", err)
	}
	rec := &state.Answer{Library: a.library, Question: a.question, Answer: ans, Books: a.books, Strategy: a.strategy, Private: a.private, ChannelID: a.channelID, ThreadID: a.threadID}
	if msg != nil {
		if err := h.mem.PutAnswer(base, msg.ID, *rec); err != nil {
			h.log.Warn("record the answer", "err", err)
		}
	}
	h.log.Info("answered", "question", a.question, "strategy", ans.Strategy, "hops", len(ans.Hops), "cached", ans.Cached, "sources", len(ans.Sources), "elapsed", ans.Elapsed)
	return rec, nil
}

// notify tells the player that the reply could not be shown, within noticeTime after from.
func (h *Handler) notify(ctx context.Context, s sink, from time.Time) {
	ctx, cancel := context.WithDeadline(ctx, maxTime(from, h.opt.Now()).Add(noticeTime))
	defer cancel()
	if err := s.notice(ctx, undelivered); err != nil {
		h.log.Error("notice of an undelivered reply", "err", err)
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// errorText says an answer's failure in the user's words.
func (h *Handler) errorText(ctx context.Context, err error, a ask) string {
	switch {
	case errors.Is(err, rag.ErrNoContext):
		where := "the books"
		if len(a.books) > 0 {
			where = "**" + escape(a.books[0]) + "**"
		}
		return "⚠️ I found nothing about that in " + where + ". Try other words, or see the books in the `book` option of /rule."
	case errors.Is(err, rag.ErrEmbedderMismatch):
		return "⚠️ The books must be loaded again before I can search them (the search model changed). Ask the GM to run `caprag ingest --reindex`."
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		return fmt.Sprintf("⚠️ Answering took longer than %s, so I gave up. Try again, or ask something narrower.", h.opt.AnswerTimeout)
	case errors.Is(err, context.Canceled):
		return "⚠️ The bot is restarting and could not finish this answer. Please ask again in a minute."
	}
	return "⚠️ Something went wrong while answering: the rules model or the book store did not respond. Try again in a moment."
}

// progressLine renders one hop event.
func progressLine(p rag.Progress) string {
	var line string
	if len(p.Hop.Following) > 0 {
		line = fmt.Sprintf("🔗 Hop %d — following: %s", p.Hop.N, strings.Join(p.Hop.Following, ", "))
	} else {
		line = fmt.Sprintf("🔎 Hop %d — searching: %s", p.Hop.N, strings.Join(p.Hop.Queries, "; "))
	}
	line = truncate(noLinks(line), 400)
	if p.Stage == rag.HopFinished {
		line += fmt.Sprintf(" (%d found, %d new)", p.Hop.Found, p.Hop.New)
	}
	return line
}

// Embed limits of Discord.
const (
	embedText  = 4000 // description (4096) with room to spare
	fieldValue = 1024
	// maxSourceFields bounds the sources to 5 fields (5×1024 characters) so they fit one embed.
	maxSourceFields = 5
	// embedTotal is the most characters of one message's embeds (6000) with room to spare.
	embedTotal = 5800
)

// answerMessages renders an answer as one or more messages of embeds: the text split at
// paragraph, sentence or word boundaries but never inside a citation, the numbered sources as
// fields of the last embed, and a footer with strategy, hops, seconds and cache. Consecutive
// embeds share a message while they fit Discord's limits (10 embeds, 6000 characters), so a
// short last part never stands alone. Masked links in the text are defanged.
func answerMessages(a rag.Answer) [][]*discordgo.MessageEmbed {
	chunks := split(noLinks(a.Text), embedText)
	embeds := make([]*discordgo.MessageEmbed, len(chunks))
	for n, c := range chunks {
		embeds[n] = &discordgo.MessageEmbed{Description: c, Color: 0x5865F2}
	}
	embeds[0].Title = truncate(noLinks(a.Question), 256)
	var lines []string
	for _, s := range a.Sources {
		lines = append(lines, SourceLine(s))
	}
	var fields []*discordgo.MessageEmbedField
	for _, v := range split(strings.Join(lines, "\n"), fieldValue) {
		if len(fields) == maxSourceFields || v == "" {
			break
		}
		name := "Sources"
		if len(fields) > 0 {
			name = "Sources (continued)"
		}
		fields = append(fields, &discordgo.MessageEmbedField{Name: name, Value: v})
	}
	if len(fields) == 0 {
		fields = append(fields, &discordgo.MessageEmbedField{Name: "Sources", Value: "none"})
	}
	last := embeds[len(embeds)-1]
	footer := &discordgo.MessageEmbedFooter{Text: Footer(a)}
	// One message's embeds hold at most 6000 characters: sources that do not fit under the
	// last part of the text get an embed of their own.
	withSources := *last
	withSources.Fields, withSources.Footer = fields, footer
	if embedSize(&withSources) > embedTotal {
		last = &discordgo.MessageEmbed{Color: 0x5865F2}
		embeds = append(embeds, last)
	}
	last.Fields, last.Footer = fields, footer
	var msgs [][]*discordgo.MessageEmbed
	size := 0
	for _, e := range embeds {
		n := embedSize(e)
		if k := len(msgs); k == 0 || len(msgs[k-1]) == maxEmbeds || size+n > embedTotal {
			msgs = append(msgs, nil)
			size = 0
		}
		msgs[len(msgs)-1] = append(msgs[len(msgs)-1], e)
		size += n
	}
	return msgs
}

// maxEmbeds is the most embeds of one message.
const maxEmbeds = 10

// embedSize counts an embed's characters as Discord does for its 6000-character limit (bytes,
// which are never fewer).
func embedSize(e *discordgo.MessageEmbed) int {
	n := len(e.Title) + len(e.Description)
	for _, f := range e.Fields {
		n += len(f.Name) + len(f.Value)
	}
	if e.Footer != nil {
		n += len(e.Footer.Text)
	}
	if e.Author != nil {
		n += len(e.Author.Name)
	}
	return n
}

// SourceLine renders a source as "[1] Basic Set, p. 370 — Rapid Strike".
func SourceLine(s rag.Source) string {
	line := fmt.Sprintf("[%d] %s", s.N, s.Book)
	if s.Page > 0 {
		line += fmt.Sprintf(", p. %d", s.Page)
	}
	if s.Section != "" {
		line += " — " + s.Section
	}
	return truncate(escape(line), 300)
}

// Footer renders "multi-hop · 2 hops · 3.4 s · cached".
func Footer(a rag.Answer) string {
	f := fmt.Sprintf("%s · %s · %.1f s", a.Strategy, plural(len(a.Hops), "hop"), a.Elapsed.Seconds())
	if a.Cached {
		f += " · cached"
	}
	return f
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// split cuts text into pieces of at most max bytes (max ≥ 1). A piece ends at the last
// paragraph break in the back half of its room, else the last line break there, else sentence
// end, else space — so that no piece is a stray fragment its neighbour had room for — else at
// max; never inside a "[n]" citation (one longer than max excepted), never inside a rune. Every
// piece is non-empty, so the loop always advances.
func split(text string, max int) []string {
	text = strings.TrimSpace(text)
	var parts []string
	for len(text) > max {
		cut := cutPoint(text, max)
		parts = append(parts, strings.TrimSpace(text[:cut]))
		text = strings.TrimSpace(text[cut:])
	}
	if text != "" || len(parts) == 0 {
		parts = append(parts, text)
	}
	return parts
}

// cutPoint returns where to end the first piece of text (longer than max): 0 < cut ≤ max.
func cutPoint(text string, max int) int {
	for _, sep := range []string{"\n\n", "\n", ". ", " "} {
		for end := max; ; {
			i := strings.LastIndex(text[:end], sep)
			if i < max/2 || i <= 0 {
				break
			}
			if cut := i + len(sep); !insideCitation(text, cut) {
				return cut
			}
			end = i
		}
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	if start, ok := citationAround(text, cut); ok && start > 0 {
		cut = start
	}
	if cut == 0 { // one rune longer than max: keep it whole
		_, cut = utf8.DecodeRuneInString(text)
	}
	return cut
}

// citation is a "[n]" citation as the answer writers make them: "[3]", "[1, 2]", "[4–6]".
var citation = regexp.MustCompile(`\[\d{1,4}(?:\s{0,2}[,–-]\s{0,2}\d{1,4}){0,7}\]`)

// maxCitation bounds the length of a citation (the pattern above).
const maxCitation = 96

// insideCitation reports whether cutting text at cut would split a citation.
func insideCitation(text string, cut int) bool {
	_, ok := citationAround(text, cut)
	return ok
}

// citationAround returns the start of the citation that spans cut (start < cut < end), if any.
// It looks at most maxCitation bytes either side, so a stray "[" costs nothing.
func citationAround(text string, cut int) (int, bool) {
	lo, hi := max(0, cut-maxCitation), min(len(text), cut+maxCitation)
	open := strings.LastIndexByte(text[lo:cut], '[')
	if open < 0 {
		return 0, false
	}
	open += lo
	for _, m := range citation.FindAllStringIndex(text[open:hi], -1) {
		if s, e := open+m[0], open+m[1]; s < cut && cut < e {
			return s, true
		}
	}
	return 0, false
}

var mdSpecial = regexp.MustCompile("([\\\\*_`~|>])")

// escape keeps rulebook names from turning into Markdown (and masked links).
func escape(s string) string { return noLinks(mdSpecial.ReplaceAllString(s, `\$1`)) }

// noLinks defangs masked links ("[the errata](https://…)"), which embeds and messages render as
// a link whose address is hidden: a rulebook, a book name or a model reply could carry a
// phishing link that way. Escaping the parenthesis after "]" keeps the text readable ("](" is
// shown) but it no longer forms a link. A bare address stays visible as it is.
func noLinks(s string) string {
	if !strings.Contains(s, "](") {
		return s
	}
	return strings.ReplaceAll(s, "](", `]\(`)
}

// truncate shortens s to at most n runes, ending with "…" when cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

func answerButtons(private bool) []discordgo.MessageComponent {
	row := []discordgo.MessageComponent{
		discordgo.Button{Label: "Sources", Style: discordgo.SecondaryButton, CustomID: idSources},
	}
	if !private {
		// An ephemeral answer cannot hold a thread.
		row = append(row, discordgo.Button{Label: "Ask a follow-up", Style: discordgo.PrimaryButton, CustomID: idFollowup})
	}
	row = append(row,
		discordgo.Button{Label: "👍", Style: discordgo.SecondaryButton, CustomID: idUp},
		discordgo.Button{Label: "👎", Style: discordgo.SecondaryButton, CustomID: idDown},
	)
	return []discordgo.MessageComponent{discordgo.ActionsRow{Components: row}}
}

// interactionSink shows a reply in an interaction's original response and its follow-ups.
type interactionSink struct {
	r       Responder
	i       *discordgo.Interaction
	private bool
	// shown is set once the answer's first message replaced the reply: a notice then must not
	// replace it.
	shown bool
}

// notice sends the text as a follow-up (a route of its own, which may work when edits do not),
// then tries to replace the reply with it, each in half the time left.
func (s *interactionSink) notice(ctx context.Context, text string) error {
	half := ctx
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		half, cancel = context.WithDeadline(ctx, dl.Add(-time.Until(dl)/2))
		defer cancel()
	}
	flags := discordgo.MessageFlags(0)
	if s.private {
		flags = discordgo.MessageFlagsEphemeral
	}
	_, err := s.r.Followup(half, s.i, &discordgo.WebhookParams{Content: text, Flags: flags, AllowedMentions: noPings()})
	if s.shown {
		return err
	}
	if ferr := s.fail(ctx, text); err != nil {
		return errors.Join(err, ferr)
	}
	return nil
}

func (s *interactionSink) progress(ctx context.Context, text string) error {
	_, err := s.r.EditResponse(ctx, s.i, &discordgo.WebhookEdit{Content: &text, AllowedMentions: noPings()})
	return err
}

// firstPart returns what replaces the reply for an answer's first message: no text, its
// embeds, and the buttons when the answer has one message (else they go under the last one).
func firstPart(msgs [][]*discordgo.MessageEmbed, buttons []discordgo.MessageComponent) (*string, *[]*discordgo.MessageEmbed, *[]discordgo.MessageComponent) {
	empty := ""
	first := msgs[0]
	comps := []discordgo.MessageComponent{}
	if len(msgs) == 1 {
		comps = buttons
	}
	return &empty, &first, &comps
}

func (s *interactionSink) final(ctx context.Context, msgs [][]*discordgo.MessageEmbed, buttons []discordgo.MessageComponent) (*discordgo.Message, error) {
	content, first, comps := firstPart(msgs, buttons)
	msg, err := s.r.EditResponse(ctx, s.i, &discordgo.WebhookEdit{Content: content, Embeds: first, Components: comps, AllowedMentions: noPings()})
	if err != nil {
		return nil, err
	}
	s.shown = true
	flags := discordgo.MessageFlags(0)
	if msg != nil {
		flags = msg.Flags & discordgo.MessageFlagsEphemeral
	}
	for n, embeds := range msgs[1:] {
		params := &discordgo.WebhookParams{Embeds: embeds, Flags: flags, AllowedMentions: noPings()}
		if n == len(msgs)-2 {
			params.Components = buttons
		}
		if msg, err = s.r.Followup(ctx, s.i, params); err != nil {
			return nil, err
		}
	}
	return msg, nil
}

func (s *interactionSink) fail(ctx context.Context, text string) error {
	comps := []discordgo.MessageComponent{}
	embeds := []*discordgo.MessageEmbed{}
	_, err := s.r.EditResponse(ctx, s.i, &discordgo.WebhookEdit{Content: &text, Embeds: &embeds, Components: &comps, AllowedMentions: noPings()})
	return err
}

// channelSink shows a reply as a message in a channel (a follow-up thread), edited in place.
type channelSink struct {
	r         Responder
	channelID string
	replyTo   string // message replied to, if any
	msg       *discordgo.Message
}

func (s *channelSink) send(ctx context.Context, m *discordgo.MessageSend) (*discordgo.Message, error) {
	m.AllowedMentions = noPings()
	if s.replyTo != "" {
		m.Reference = &discordgo.MessageReference{MessageID: s.replyTo, ChannelID: s.channelID}
	}
	return s.r.Send(ctx, s.channelID, m)
}

func (s *channelSink) edit(ctx context.Context, e *discordgo.MessageEdit) error {
	if s.msg == nil {
		m := &discordgo.MessageSend{}
		if e.Content != nil {
			m.Content = *e.Content
		}
		if e.Embeds != nil {
			m.Embeds = *e.Embeds
		}
		if e.Components != nil {
			m.Components = *e.Components
		}
		msg, err := s.send(ctx, m)
		if err != nil {
			return err
		}
		s.msg = msg
		return nil
	}
	e.ID, e.Channel = s.msg.ID, s.channelID
	e.AllowedMentions = noPings()
	_, err := s.r.Edit(ctx, e)
	return err
}

func (s *channelSink) progress(ctx context.Context, text string) error {
	return s.edit(ctx, &discordgo.MessageEdit{Content: &text})
}

func (s *channelSink) final(ctx context.Context, msgs [][]*discordgo.MessageEmbed, buttons []discordgo.MessageComponent) (*discordgo.Message, error) {
	content, first, comps := firstPart(msgs, buttons)
	if err := s.edit(ctx, &discordgo.MessageEdit{Content: content, Embeds: first, Components: comps}); err != nil {
		return nil, err
	}
	msg := s.msg
	s.replyTo = ""
	for n, embeds := range msgs[1:] {
		m := &discordgo.MessageSend{Embeds: embeds}
		if n == len(msgs)-2 {
			m.Components = buttons
		}
		var err error
		if msg, err = s.send(ctx, m); err != nil {
			return nil, err
		}
	}
	return msg, nil
}

// notice posts the text as a new message: the message being edited is what failed.
func (s *channelSink) notice(ctx context.Context, text string) error {
	_, err := s.send(ctx, &discordgo.MessageSend{Content: text})
	return err
}

func (s *channelSink) fail(ctx context.Context, text string) error {
	comps := []discordgo.MessageComponent{}
	embeds := []*discordgo.MessageEmbed{}
	return s.edit(ctx, &discordgo.MessageEdit{Content: &text, Embeds: &embeds, Components: &comps})
}
