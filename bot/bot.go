// Package bot runs caprag's Discord bot: the discordgo session pointed at DISCORD_API_URL,
// command registration by bulk overwrite, the gateway intents, routing of interactions and
// messages to commands/ with panic recovery, per-interaction-token rate limits for reply edits,
// and graceful shutdown.
package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/caprag/caprag/commands"
	"github.com/caprag/caprag/config"
)

// Options give the bot its optional parts and tune it beyond the settings (tests shorten the
// edit interval and the retries).
type Options struct {
	// Librarian adds and removes the servers' books (/books add, remove); nil: they are loaded
	// with the command line only.
	Librarian commands.Librarian
	// Memory keeps answers, threads, votes and uploads across restarts (state.DB); nil: in
	// this process only.
	Memory commands.Memory
	// EditInterval is the least time between two progress edits of one reply (1s when 0).
	EditInterval time.Duration
	// Ready, when set, is called once the commands are registered.
	Ready func()
	// AttemptTimeout bounds one attempt of a REST request (30 s when 0); Backoff is the first
	// wait before a retry (250 ms when 0).
	AttemptTimeout, Backoff time.Duration
}

// Intents returns the fewest gateway intents the enabled features need. Interactions need no
// intent. Follow-ups from messages in a thread need guild messages (not privileged): a message
// that mentions the bot carries its content without the privileged message-content intent,
// which is asked for only when DISCORD_MESSAGE_CONTENT=true (then replies to the bot that do not
// mention it count too).
func Intents(cfg config.Config) discordgo.Intent {
	in := discordgo.IntentsGuildMessages
	if cfg.DiscordMessageContent {
		in |= discordgo.IntentMessageContent
	}
	return in
}

// rewrite sends discordgo's requests for Discord's API to the configured base URL. discordgo's
// endpoints are package variables fixed at init, so the transport is where to redirect them.
type rewrite struct {
	base string // without trailing slash
	next http.RoundTripper
}

func (t rewrite) RoundTrip(req *http.Request) (*http.Response, error) {
	u := req.URL.String()
	if rest, ok := strings.CutPrefix(u, strings.TrimSuffix(discordgo.EndpointAPI, "/")); ok && t.base != strings.TrimSuffix(discordgo.EndpointAPI, "/") {
		nu, err := req.URL.Parse(t.base + rest)
		if err != nil {
			return nil, fmt.Errorf("bot: rewrite %s: %w", u, err)
		}
		req = req.Clone(req.Context())
		req.URL = nu
		req.Host = nu.Host
	}
	return t.next.RoundTrip(req)
}

// NewSession returns a discordgo session whose every REST call goes to cfg.DiscordAPIURL (the
// gateway address then comes from that API's /gateway answer), with transient failures retried
// (retry).
func NewSession(cfg config.Config) (*discordgo.Session, error) {
	return newSession(cfg, Options{})
}

func newSession(cfg config.Config, opt Options) (*discordgo.Session, error) {
	s, err := discordgo.New("Bot " + strings.TrimPrefix(strings.TrimSpace(cfg.DiscordToken), "Bot "))
	if err != nil {
		return nil, fmt.Errorf("bot: session: %w", err)
	}
	// No client-wide timeout: the transport times each attempt, so retries fit the request's
	// own deadline.
	s.Client = &http.Client{Transport: retry{
		next:    rewrite{base: strings.TrimRight(cfg.DiscordAPIURL, "/"), next: http.DefaultTransport},
		attempt: opt.AttemptTimeout, backoff: opt.Backoff,
	}}
	s.Identify.Intents = Intents(cfg)
	s.LogLevel = discordgo.LogWarning
	return s, nil
}

// Run connects to Discord, registers the commands and serves them until ctx ends; then it stops
// taking new work, lets running answers finish within SHUTDOWN_TIMEOUT and closes the session.
func Run(ctx context.Context, cfg config.Config, a commands.Answerer, log *slog.Logger) error {
	return RunWith(ctx, cfg, a, log, Options{})
}

// RunWith is Run with options.
func RunWith(ctx context.Context, cfg config.Config, a commands.Answerer, log *slog.Logger, opt Options) error {
	if err := cfg.RequireDiscord(); err != nil {
		return err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s, err := newSession(cfg, opt)
	if err != nil {
		return err
	}
	h := commands.New(commands.Options{
		Answerer: a, Librarian: opt.Librarian, Memory: opt.Memory, Log: log, EditInterval: opt.EditInterval,
		AnswerTimeout: cfg.AnswerTimeout, MessageContent: cfg.DiscordMessageContent,
		RateLimitUser: cfg.RateLimitUser, RateLimitServer: cfg.RateLimitServer,
	})
	// Handlers run under their own context: a signal stops new work, not running answers,
	// until the shutdown deadline.
	work, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	b := &bot{s: s, h: h, log: log, ctx: work, lims: newLimiters(time.Now)}
	s.AddHandler(func(_ *discordgo.Session, ev *discordgo.InteractionCreate) { b.interaction(ev.Interaction) })
	s.AddHandler(func(_ *discordgo.Session, ev *discordgo.MessageCreate) { b.message(ev.Message) })
	if err := s.Open(); err != nil {
		return fmt.Errorf("bot: connect to Discord: %w", err)
	}
	defer s.Close()
	if s.State == nil || s.State.User == nil {
		return errors.New("bot: Discord did not say who the bot is (no READY)")
	}
	b.botID = s.State.User.ID
	appID := b.botID
	if s.State.Application != nil && s.State.Application.ID != "" {
		appID = s.State.Application.ID
	}
	cmds, err := register(ctx, s, appID, cfg.DiscordGuildID, commands.Definitions())
	if err != nil {
		return fmt.Errorf("bot: register commands: %w", err)
	}
	where := "globally (may take up to an hour to appear)"
	if cfg.DiscordGuildID != "" {
		where = "in guild " + cfg.DiscordGuildID
	}
	log.Info("bot ready", "user", s.State.User.Username, "commands", len(cmds), "registered", where, "intents", int(s.Identify.Intents))
	h.ReportLostJobs(work, &responder{s: s, lims: b.lims})
	if opt.Ready != nil {
		opt.Ready()
	}
	<-ctx.Done()
	b.mu.Lock()
	b.closing = true
	b.mu.Unlock()
	log.Info("shutting down: finishing running answers", "deadline", cfg.ShutdownTimeout)
	done := make(chan struct{})
	go func() { b.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(cfg.ShutdownTimeout):
		log.Warn("shutdown deadline reached: cancelling running answers")
		cancelWork()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
		}
	}
	return nil
}

// internalError is what users see when a handler fails in an unexpected way (the log has the
// details).
const internalError = "⚠️ Internal error: something broke while handling this. It has been logged; please try again."

type bot struct {
	s     *discordgo.Session
	h     *commands.Handler
	log   *slog.Logger
	ctx   context.Context
	lims  *limiters
	botID string
	// mu guards closing and the wg.Add calls, so no work starts once shutdown waits.
	mu      sync.Mutex
	closing bool
	wg      sync.WaitGroup
}

// begin registers a unit of work; it returns false once the bot is shutting down.
func (b *bot) begin() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closing {
		return false
	}
	b.wg.Add(1)
	return true
}

func (b *bot) interaction(i *discordgo.Interaction) {
	r := &responder{s: b.s, lims: b.lims}
	if !b.begin() {
		_ = commands.Ephemeral(b.ctx, r, i, "The bot is restarting; please ask again in a minute.")
		return
	}
	defer b.wg.Done()
	defer func() {
		if p := recover(); p != nil {
			b.log.Error("panic in interaction handler", "panic", fmt.Sprint(p), "interaction", i.ID, "type", i.Type.String(), "user", commands.UserID(i))
			b.internalError(r, i)
		}
	}()
	if err := b.h.Interaction(b.ctx, r, i); err != nil {
		b.log.Error("interaction", "err", err, "interaction", i.ID, "type", i.Type.String(), "user", commands.UserID(i))
		if !r.responded.Load() {
			b.internalError(r, i)
		}
	}
}

// internalError tells the user something failed: a new ephemeral reply when the interaction
// has not been answered yet, else an edit of the reply.
func (b *bot) internalError(r *responder, i *discordgo.Interaction) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(b.ctx), 10*time.Second)
	defer cancel()
	text := internalError
	if r.responded.Load() {
		_, _ = r.EditResponse(ctx, i, &discordgo.WebhookEdit{Content: &text, AllowedMentions: &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}})
		return
	}
	if i.Type == discordgo.InteractionApplicationCommandAutocomplete {
		return
	}
	_ = commands.Ephemeral(ctx, r, i, text)
}

func (b *bot) message(m *discordgo.Message) {
	if !b.begin() {
		return
	}
	defer b.wg.Done()
	defer func() {
		if p := recover(); p != nil {
			b.log.Error("panic in message handler", "panic", fmt.Sprint(p), "message", m.ID, "channel", m.ChannelID)
			ctx, cancel := context.WithTimeout(context.WithoutCancel(b.ctx), 10*time.Second)
			defer cancel()
			_, _ = (&responder{s: b.s, lims: b.lims}).Send(ctx, m.ChannelID, &discordgo.MessageSend{
				Content:         internalError,
				AllowedMentions: &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}},
				Reference:       &discordgo.MessageReference{MessageID: m.ID, ChannelID: m.ChannelID},
			})
		}
	}()
	if err := b.h.Message(b.ctx, &responder{s: b.s, lims: b.lims}, m, b.botID); err != nil {
		b.log.Error("message follow-up", "err", err, "message", m.ID, "channel", m.ChannelID)
	}
}

// responder implements commands.Responder with the discordgo session. The requests of an
// interaction (callback, edits of the reply, follow-ups) go under rate-limit buckets of that
// interaction's own limiter (limiters): one user's rate-limited edits do not hold up another's
// (discordgo files every webhook-message edit under one shared bucket, bwmarrin/discordgo#1384),
// and no bucket outlives its token.
type responder struct {
	s         *discordgo.Session
	lims      *limiters
	responded atomic.Bool
}

// interactionRequest sends one request of interaction i under its token's limiter and returns
// the answer's body.
func (r *responder) interactionRequest(ctx context.Context, i *discordgo.Interaction, method, uri string, data any) ([]byte, error) {
	body, err := discordgo.Marshal(data)
	if err != nil {
		return nil, fmt.Errorf("bot: encode %s: %w", method, err)
	}
	bucket := r.lims.get(i.Token).LockBucket(strings.SplitN(uri, "?", 2)[0])
	return r.s.RequestWithLockedBucket(method, uri, "application/json", body, bucket, 0, discordgo.WithContext(ctx))
}

func (r *responder) Respond(ctx context.Context, i *discordgo.Interaction, resp *discordgo.InteractionResponse) error {
	_, err := r.interactionRequest(ctx, i, http.MethodPost, discordgo.EndpointInteractionResponse(i.ID, i.Token), resp)
	if err == nil {
		r.responded.Store(true)
	}
	return err
}

func (r *responder) EditResponse(ctx context.Context, i *discordgo.Interaction, e *discordgo.WebhookEdit) (*discordgo.Message, error) {
	body, err := r.interactionRequest(ctx, i, http.MethodPatch, discordgo.EndpointWebhookMessage(i.AppID, i.Token, "@original"), e)
	return message(body, err, "edit response")
}

func (r *responder) Followup(ctx context.Context, i *discordgo.Interaction, p *discordgo.WebhookParams) (*discordgo.Message, error) {
	body, err := r.interactionRequest(ctx, i, http.MethodPost, discordgo.EndpointWebhookToken(i.AppID, i.Token)+"?wait=true", p)
	return message(body, err, "follow-up")
}

// message decodes a message answer.
func message(body []byte, err error, what string) (*discordgo.Message, error) {
	if err != nil {
		return nil, err
	}
	var m discordgo.Message
	if err := discordgo.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("bot: %s: %w", what, err)
	}
	return &m, nil
}

// StartThread starts a thread under the channel's thread bucket (discordgo's own call keys it by
// message, one bucket kept per answer).
func (r *responder) StartThread(ctx context.Context, channelID, messageID, name string) (*discordgo.Channel, error) {
	uri := discordgo.EndpointChannelMessageThread(channelID, messageID)
	body, err := r.s.RequestWithBucketID(http.MethodPost, uri, &discordgo.ThreadStart{Name: name, AutoArchiveDuration: 1440}, discordgo.EndpointChannelThreads(channelID), discordgo.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	var ch discordgo.Channel
	if err := discordgo.Unmarshal(body, &ch); err != nil {
		return nil, fmt.Errorf("bot: start thread: %w", err)
	}
	return &ch, nil
}

func (r *responder) Send(ctx context.Context, channelID string, m *discordgo.MessageSend) (*discordgo.Message, error) {
	return r.s.ChannelMessageSendComplex(channelID, m, discordgo.WithContext(ctx))
}

func (r *responder) Edit(ctx context.Context, e *discordgo.MessageEdit) (*discordgo.Message, error) {
	return r.s.ChannelMessageEditComplex(e, discordgo.WithContext(ctx))
}

// register overwrites the application's commands (in one guild, or globally when guildID is
// empty). discordgo sends default_member_permissions as a string, which Discord's API
// description does not accept in a request (an integer there; a string only in its answers): the
// body is written here with the number.
func register(ctx context.Context, s *discordgo.Session, appID, guildID string, defs []*discordgo.ApplicationCommand) ([]*discordgo.ApplicationCommand, error) {
	raw, err := json.Marshal(defs)
	if err != nil {
		return nil, fmt.Errorf("bot: encode the commands: %w", err)
	}
	var body []map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		return nil, fmt.Errorf("bot: encode the commands: %w", err)
	}
	for i, d := range defs {
		if d.DefaultMemberPermissions != nil {
			body[i]["default_member_permissions"] = *d.DefaultMemberPermissions
		}
	}
	endpoint := discordgo.EndpointApplicationGlobalCommands(appID)
	if guildID != "" {
		endpoint = discordgo.EndpointApplicationGuildCommands(appID, guildID)
	}
	resp, err := s.RequestWithBucketID(http.MethodPut, endpoint, body, endpoint, discordgo.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	var cmds []*discordgo.ApplicationCommand
	if err := discordgo.Unmarshal(resp, &cmds); err != nil {
		return nil, fmt.Errorf("bot: read the registered commands: %w", err)
	}
	return cmds, nil
}
