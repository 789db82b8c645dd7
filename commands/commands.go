// Package commands holds caprag's Discord commands as data (Definitions) and their handlers:
// /rule with live hop progress, cited answers, buttons and thread follow-ups, and /books. It
// declares the small Responder it needs from Discord and the Answerer it needs from rag, so it
// is tested without either.
package commands

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/patrickmn/go-cache"

	"github.com/caprag/caprag/config"
	"github.com/caprag/caprag/rag"
)

// Answerer answers questions from the books (rag.Pipeline implements it).
type Answerer interface {
	// Answer answers req; it calls req.Progress with each hop's events, in order.
	Answer(ctx context.Context, req rag.Request) (rag.Answer, error)
	// Books lists the ingested books.
	Books(ctx context.Context, library string) ([]rag.BookInfo, error)
}

// Responder is what the handlers need from Discord. Every call carries allowed mentions that
// ping nobody (the handlers set them); rate limits and 429 retries are the implementation's job,
// with edits of one interaction's reply limited per interaction token.
type Responder interface {
	// Respond sends the interaction's initial response (deferral, message, modal, choices).
	Respond(ctx context.Context, i *discordgo.Interaction, r *discordgo.InteractionResponse) error
	// EditResponse edits the interaction's original response and returns the message.
	EditResponse(ctx context.Context, i *discordgo.Interaction, e *discordgo.WebhookEdit) (*discordgo.Message, error)
	// Followup sends a follow-up message of the interaction.
	Followup(ctx context.Context, i *discordgo.Interaction, p *discordgo.WebhookParams) (*discordgo.Message, error)
	// StartThread starts a public thread on a message.
	StartThread(ctx context.Context, channelID, messageID, name string) (*discordgo.Channel, error)
	// Send posts a message in a channel or thread.
	Send(ctx context.Context, channelID string, m *discordgo.MessageSend) (*discordgo.Message, error)
	// Edit edits a message the bot posted with Send.
	Edit(ctx context.Context, e *discordgo.MessageEdit) (*discordgo.Message, error)
}

// Limits of the /rule command.
const (
	// MaxQuestion is the longest question, in characters, that Discord accepts in the question
	// option (and the handler checks again).
	MaxQuestion = 500
	// customID prefixes of the answer buttons and the follow-up modal.
	idSources  = "caprag:sources"
	idFollowup = "caprag:followup"
	idUp       = "caprag:up"
	idDown     = "caprag:down"
	idModal    = "caprag:ask:"
	idModalIn  = "question"
)

// Options configure the handlers.
type Options struct {
	Answerer Answerer
	Log      *slog.Logger
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// EditInterval is the least time between two progress edits of one reply (1s when 0).
	EditInterval time.Duration
	// AnswerTimeout bounds one answer (config ANSWER_TIMEOUT; 2m when 0). It stays below the
	// interaction token's 15-minute life.
	AnswerTimeout time.Duration
	// MessageContent is true when the bot receives message content (DISCORD_MESSAGE_CONTENT):
	// then plain replies to the bot in a thread are follow-ups too, not only mentions.
	MessageContent bool
}

// Handler serves the commands, buttons, modals and thread messages.
type Handler struct {
	opt Options
	log *slog.Logger
	// answers maps an answer message id to its record (for the buttons); threads maps a
	// thread id to its conversation. Both are bounded in time.
	answers *cache.Cache
	threads *cache.Cache
	// mu serialises the first follow-up of an answer, so one thread is started.
	mu sync.Mutex
}

// record is an answer the bot posted.
type record struct {
	Question string
	Answer   rag.Answer
	Books    []string
	Strategy string
	Private  bool
	// ChannelID is where the message is; ThreadID the thread started on it (if any).
	ChannelID string
	ThreadID  string
}

// conversation is a follow-up thread: its earlier turns, oldest first.
type conversation struct {
	mu       sync.Mutex
	turns    []rag.Turn
	books    []string
	strategy string
}

func (c *conversation) history() []rag.Turn {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]rag.Turn(nil), c.turns...)
}

func (c *conversation) add(t rag.Turn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.turns = append(c.turns, t)
	if len(c.turns) > 10 {
		c.turns = c.turns[len(c.turns)-10:]
	}
}

// New returns the handlers.
func New(opt Options) *Handler {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.EditInterval <= 0 {
		opt.EditInterval = time.Second
	}
	if opt.AnswerTimeout <= 0 {
		opt.AnswerTimeout = 2 * time.Minute
	}
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	return &Handler{
		opt: opt, log: opt.Log,
		answers: cache.New(24*time.Hour, time.Hour),
		threads: cache.New(7*24*time.Hour, time.Hour),
	}
}

// Definitions are the application commands, registered with one bulk overwrite.
func Definitions() []*discordgo.ApplicationCommand {
	minLen := 1
	var strategies []*discordgo.ApplicationCommandOptionChoice
	for _, s := range config.Strategies {
		strategies = append(strategies, &discordgo.ApplicationCommandOptionChoice{Name: s, Value: s})
	}
	return []*discordgo.ApplicationCommand{
		{
			Name:        "rule",
			Type:        discordgo.ChatApplicationCommand,
			Description: "Answer a rules question from the group's books, with sources",
			Options: []*discordgo.ApplicationCommandOption{
				{Type: discordgo.ApplicationCommandOptionString, Name: "question", Description: "Your rules question", Required: true, MinLength: &minLen, MaxLength: MaxQuestion},
				{Type: discordgo.ApplicationCommandOptionString, Name: "book", Description: "Search only this book", Autocomplete: true},
				{Type: discordgo.ApplicationCommandOptionString, Name: "strategy", Description: "How to search the books", Choices: strategies},
				{Type: discordgo.ApplicationCommandOptionBoolean, Name: "private", Description: "Only you see the answer"},
			},
		},
		{
			Name:        "books",
			Type:        discordgo.ChatApplicationCommand,
			Description: "List the books the bot answers from",
		},
	}
}

// noPings are the allowed mentions of every message: nobody is pinged.
func noPings() *discordgo.MessageAllowedMentions {
	return &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}
}

// Interaction handles one interaction. Errors are shown to the user by the handler; the
// returned error is for the log.
func (h *Handler) Interaction(ctx context.Context, r Responder, i *discordgo.Interaction) error {
	switch i.Type {
	case discordgo.InteractionApplicationCommand:
		switch i.ApplicationCommandData().Name {
		case "rule":
			return h.rule(ctx, r, i)
		case "books":
			return h.books(ctx, r, i)
		}
	case discordgo.InteractionApplicationCommandAutocomplete:
		return h.autocomplete(ctx, r, i)
	case discordgo.InteractionMessageComponent:
		return h.button(ctx, r, i)
	case discordgo.InteractionModalSubmit:
		return h.modal(ctx, r, i)
	}
	return Ephemeral(ctx, r, i, "I don't know that command; try /rule or /books.")
}

// Ephemeral answers an interaction with a message only its user sees.
func Ephemeral(ctx context.Context, r Responder, i *discordgo.Interaction, text string) error {
	return r.Respond(ctx, i, &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Content: text, Flags: discordgo.MessageFlagsEphemeral, AllowedMentions: noPings()},
	})
}

// UserID returns the id of the user who sent the interaction.
func UserID(i *discordgo.Interaction) string {
	if i.Member != nil && i.Member.User != nil {
		return i.Member.User.ID
	}
	if i.User != nil {
		return i.User.ID
	}
	return ""
}

func (h *Handler) books(ctx context.Context, r Responder, i *discordgo.Interaction) error {
	books, err := h.opt.Answerer.Books(ctx, libraryOf(i))
	if err != nil {
		_ = Ephemeral(ctx, r, i, "I could not read the list of books: the book store did not answer. Try again in a moment.")
		return err
	}
	if len(books) == 0 {
		return Ephemeral(ctx, r, i, "No books are loaded yet. The GM loads them with `caprag ingest PATH`.")
	}
	var b strings.Builder
	for _, bk := range books {
		line := "**" + escape(bk.Name) + "** — " + plural(bk.Passages, "passage") + "\n"
		if b.Len()+len(line) > 4000 {
			b.WriteString("…")
			break
		}
		b.WriteString(line)
	}
	return r.Respond(ctx, i, &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{
			Flags:           discordgo.MessageFlagsEphemeral,
			AllowedMentions: noPings(),
			Embeds:          []*discordgo.MessageEmbed{{Title: plural(len(books), "book"), Description: b.String()}},
		},
	})
}

func (h *Handler) autocomplete(ctx context.Context, r Responder, i *discordgo.Interaction) error {
	var typed string
	for _, o := range i.ApplicationCommandData().Options {
		if o.Focused {
			typed, _ = o.Value.(string)
		}
	}
	books, err := h.opt.Answerer.Books(ctx, libraryOf(i))
	if err != nil {
		h.log.Warn("autocomplete: list books", "err", err)
	}
	choices := []*discordgo.ApplicationCommandOptionChoice{}
	typed = strings.ToLower(strings.TrimSpace(typed))
	for _, b := range books {
		if len(choices) == 25 {
			break
		}
		if typed == "" || strings.Contains(strings.ToLower(b.Name), typed) {
			name := truncate(b.Name, 100)
			choices = append(choices, &discordgo.ApplicationCommandOptionChoice{Name: name, Value: name})
		}
	}
	return r.Respond(ctx, i, &discordgo.InteractionResponse{
		Type: discordgo.InteractionApplicationCommandAutocompleteResult,
		Data: &discordgo.InteractionResponseData{Choices: choices},
	})
}

// libraryOf is the library an interaction's questions read: its server's (with the shared
// books), or the shared books alone in a direct message.
func libraryOf(i *discordgo.Interaction) string { return i.GuildID }
