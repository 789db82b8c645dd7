// Package commands holds caprag's Discord commands as data (Definitions) and their handlers:
// /rule with live hop progress, cited answers, buttons and thread follow-ups, and /books list,
// add and remove for a server's own library. Every question reads the library of the server it
// comes from (with the shared books); players' and servers' questions are rate-limited. It
// declares the small interfaces it needs — Responder from Discord, Answerer from rag, Librarian
// for uploads and Memory for what survives a restart — so it is tested without any of them.
package commands

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"

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
	// Librarian adds and removes a server's books (/books add, /books remove); nil: those
	// subcommands say that books are loaded with the command line.
	Librarian Librarian
	// Memory keeps answers, threads, votes and uploads across restarts (state.DB); nil: in
	// this process only.
	Memory Memory
	Log    *slog.Logger
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
	// RateLimitUser and RateLimitServer are the questions a minute one player, and one server,
	// may ask (RATE_LIMIT_USER, RATE_LIMIT_SERVER; 0: no limit).
	RateLimitUser, RateLimitServer int
}

// Handler serves the commands, buttons, modals and thread messages.
type Handler struct {
	opt  Options
	log  *slog.Logger
	mem  Memory
	fair *fairUse
	// mu serialises the first follow-up of an answer (so one thread is started) and the
	// updates of a thread's history.
	mu sync.Mutex
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
	mem := opt.Memory
	if mem == nil {
		mem = newMemoryOnly(opt.Now)
	}
	return &Handler{opt: opt, log: opt.Log, mem: mem, fair: newFairUse(opt.RateLimitUser, opt.RateLimitServer, opt.Now)}
}

// maxTurns is how many earlier questions and answers of a thread a follow-up is rewritten with.
const maxTurns = 10

// manageServer is the permission that manages a server's books: Manage Server, which
// Administrator includes.
const manageServer = discordgo.PermissionManageGuild

// Definitions are the application commands, registered with one bulk overwrite.
func Definitions() []*discordgo.ApplicationCommand {
	minLen := 1
	var strategies []*discordgo.ApplicationCommandOptionChoice
	for _, s := range config.Strategies {
		strategies = append(strategies, &discordgo.ApplicationCommandOptionChoice{Name: s, Value: s})
	}
	manage := int64(manageServer)
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
			Description: "The books this server's questions are answered from",
			// Members with Manage Server see it; a server may change who does in its
			// integration settings. Adding and removing check Manage Server again.
			DefaultMemberPermissions: &manage,
			Options: []*discordgo.ApplicationCommandOption{
				{Type: discordgo.ApplicationCommandOptionSubCommand, Name: "list", Description: "List this server's books and the shared ones"},
				{Type: discordgo.ApplicationCommandOptionSubCommand, Name: "add", Description: "Add a book (PDF, Markdown or text) to this server's library", Options: []*discordgo.ApplicationCommandOption{
					{Type: discordgo.ApplicationCommandOptionAttachment, Name: "file", Description: "The book: a PDF, Markdown or text file", Required: true},
					{Type: discordgo.ApplicationCommandOptionString, Name: "name", Description: "The book's name (default: the PDF's title or the file name)", MaxLength: 100},
				}},
				{Type: discordgo.ApplicationCommandOptionSubCommand, Name: "remove", Description: "Remove a book from this server's library", Options: []*discordgo.ApplicationCommandOption{
					{Type: discordgo.ApplicationCommandOptionString, Name: "book", Description: "The book to remove", Required: true, Autocomplete: true},
				}},
			},
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
			return h.booksCommand(ctx, r, i)
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

// libraryOf is the library an interaction's questions read: its server's (with the shared
// books), or the shared books alone in a direct message.
func libraryOf(i *discordgo.Interaction) string { return i.GuildID }
