package commands

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/caprag/caprag/state"
	"github.com/caprag/caprag/uploads"
)

// Librarian adds and removes the books of a server's library (uploads.Jobs implements it).
type Librarian interface {
	// Add fetches, checks and stores an uploaded book, calling progress in order; the library
	// is unchanged when it fails (uploads' errors say why).
	Add(ctx context.Context, u uploads.Upload, progress func(uploads.Progress)) (uploads.Result, error)
	// Remove deletes a book; uploads.ErrNoBook when the library has none of that name.
	Remove(ctx context.Context, library, book string) error
}

// canManage reports whether the member who sent the interaction may change the server's books:
// Manage Server or Administrator in the interaction's permissions. Discord hides /books from
// others by default; this check holds whatever the server's integration settings say.
func canManage(i *discordgo.Interaction) bool {
	if i.GuildID == "" || i.Member == nil {
		return false
	}
	return i.Member.Permissions&(manageServer|discordgo.PermissionAdministrator) != 0
}

// booksCommand routes /books list, add and remove.
func (h *Handler) booksCommand(ctx context.Context, r Responder, i *discordgo.Interaction) error {
	data := i.ApplicationCommandData()
	sub := "list"
	var opts []*discordgo.ApplicationCommandInteractionDataOption
	if len(data.Options) > 0 && data.Options[0].Type == discordgo.ApplicationCommandOptionSubCommand {
		sub, opts = data.Options[0].Name, data.Options[0].Options
	}
	switch sub {
	case "list":
		return h.listBooks(ctx, r, i)
	case "add", "remove":
		switch {
		case i.GuildID == "":
			return Ephemeral(ctx, r, i, "Books are added and removed in a server, for that server. Here I answer from the shared books.")
		case !canManage(i):
			return Ephemeral(ctx, r, i, "⛔ Only members with the **Manage Server** permission can add or remove this server's books.")
		case h.opt.Librarian == nil:
			return Ephemeral(ctx, r, i, "This bot's books are loaded by its operator with `caprag ingest`.")
		}
		if sub == "add" {
			return h.addBook(ctx, r, i, data, opts)
		}
		return h.removeBook(ctx, r, i, opts)
	}
	return Ephemeral(ctx, r, i, "I don't know that command; try /books list.")
}

// listBooks shows the server's books and the shared ones, with their passage counts.
func (h *Handler) listBooks(ctx context.Context, r Responder, i *discordgo.Interaction) error {
	books, err := h.opt.Answerer.Books(ctx, libraryOf(i))
	if err != nil {
		_ = Ephemeral(ctx, r, i, "I could not read the list of books: the book store did not answer. Try again in a moment.")
		return err
	}
	if len(books) == 0 {
		return Ephemeral(ctx, r, i, "No books are loaded yet. Add one with `/books add`, or the bot's operator loads shared books with `caprag ingest PATH`.")
	}
	var own, shared strings.Builder
	for _, bk := range books {
		b := &shared
		if bk.Library != "" {
			b = &own
		}
		line := "**" + escape(bk.Name) + "** — " + plural(bk.Passages, "passage") + "\n"
		if own.Len()+shared.Len()+len(line) > 3800 {
			b.WriteString("…\n")
			break
		}
		b.WriteString(line)
	}
	var desc string
	if i.GuildID != "" {
		desc = "__This server's books__\n" + cmpText(own.String(), "none yet: `/books add` adds one\n")
		if shared.Len() > 0 {
			desc += "\n__Shared books__\n" + shared.String()
		}
	} else {
		desc = shared.String()
	}
	return r.Respond(ctx, i, &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{
			Flags:           discordgo.MessageFlagsEphemeral,
			AllowedMentions: noPings(),
			Embeds:          []*discordgo.MessageEmbed{{Title: plural(len(books), "book"), Description: truncate(desc, 4000)}},
		},
	})
}

func cmpText(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// jobs numbers the uploads of this process.
var jobs atomic.Int64

// addBook runs /books add: the reply is deferred, edited with the upload's progress, and ends
// with a summary or the reason the file was refused.
func (h *Handler) addBook(ctx context.Context, r Responder, i *discordgo.Interaction, data discordgo.ApplicationCommandInteractionData, opts []*discordgo.ApplicationCommandInteractionDataOption) error {
	var att *discordgo.MessageAttachment
	var name string
	for _, o := range opts {
		switch o.Name {
		case "file":
			id, _ := o.Value.(string)
			if data.Resolved != nil {
				att = data.Resolved.Attachments[id]
			}
		case "name":
			name, _ = o.Value.(string)
		}
	}
	if att == nil {
		return Ephemeral(ctx, r, i, "Attach the book's file (a PDF, Markdown or text file) to `/books add`.")
	}
	if err := r.Respond(ctx, i, &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseDeferredChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Flags: discordgo.MessageFlagsEphemeral, AllowedMentions: noPings()},
	}); err != nil {
		return fmt.Errorf("books add: defer: %w", err)
	}
	job := state.Job{ID: fmt.Sprintf("%s-%d", i.ID, jobs.Add(1)), Library: i.GuildID, File: att.Filename, User: UserID(i), Channel: i.ChannelID, AppID: i.AppID, Token: i.Token, At: h.opt.Now()}
	if err := h.mem.BeginJob(ctx, job); err != nil {
		h.log.Warn("books add: record the job", "err", err)
	}
	defer func() {
		if err := h.mem.EndJob(context.WithoutCancel(ctx), job.ID); err != nil {
			h.log.Warn("books add: forget the job", "err", err)
		}
	}()
	expires := h.expiry(i)
	edit := func(ctx context.Context, text string) error {
		_, err := r.EditResponse(ctx, i, &discordgo.WebhookEdit{Content: &text, AllowedMentions: noPings()})
		return err
	}
	th := newThrottle(ctx, h.opt.EditInterval, func(ctx context.Context, text string) {
		if h.opt.Now().After(expires) {
			return
		}
		ctx, cancel := context.WithTimeout(ctx, progressTime)
		defer cancel()
		if err := edit(ctx, text); err != nil {
			h.log.Warn("books add: progress edit", "err", err)
		}
	})
	file := escape(att.Filename)
	res, err := h.opt.Librarian.Add(ctx, uploads.Upload{Library: i.GuildID, Filename: att.Filename, URL: att.URL, Size: int64(att.Size), Book: strings.TrimSpace(name)}, func(p uploads.Progress) {
		th.set(uploadProgress(file, p))
	})
	th.stop()
	var text string
	if err != nil {
		text = "⚠️ " + file + " was not added: " + uploadErrorText(err) + " This server's books are unchanged."
	} else {
		text = fmt.Sprintf("✅ Added **%s** to this server's books: %s%s.", escape(res.Book), pagesNote(res.Pages), plural(res.Passages, "passage"))
		if res.Replaced {
			text += " It replaces the earlier book of that name."
		}
		text += " Questions asked here now read it."
		for _, w := range res.Warnings {
			text += "\n-# " + escape(truncate(w, 200))
		}
	}
	h.log.Info("books add", "library", i.GuildID, "file", att.Filename, "user", UserID(i), "book", res.Book, "passages", res.Passages, "err", err)
	fctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), h.opt.Now().Add(deliverTime))
	defer cancel()
	if h.opt.Now().Before(expires) {
		if eerr := edit(fctx, truncate(text, 1900)); eerr == nil {
			return nil
		}
	}
	// The token has expired (a long upload): say it in the channel.
	if _, serr := r.Send(fctx, i.ChannelID, &discordgo.MessageSend{Content: truncate(text, 1900), AllowedMentions: noPings()}); serr != nil {
		return fmt.Errorf("books add: show the result: %w", serr)
	}
	return nil
}

func pagesNote(pages int) string {
	if pages == 0 {
		return ""
	}
	return plural(pages, "page") + ", "
}

// uploadProgress renders an upload's progress.
func uploadProgress(file string, p uploads.Progress) string {
	switch p.Stage {
	case uploads.Queued:
		return fmt.Sprintf("⏳ %s waits its turn: books are being added in other servers (%d at a time).", file, p.Running)
	case uploads.Downloading:
		return fmt.Sprintf("📥 Fetching %s (%.1f MiB)…", file, float64(p.Bytes)/(1<<20))
	case uploads.Reading:
		if p.Pages > 0 {
			return fmt.Sprintf("📖 Reading %s: page %d of %d…", file, p.Page, p.Pages)
		}
		if p.Passages > 0 {
			return fmt.Sprintf("📖 Reading %s: %s…", file, plural(p.Passages, "passage"))
		}
		return fmt.Sprintf("📖 Reading %s…", file)
	case uploads.Indexing:
		return fmt.Sprintf("🧮 Indexing %s: %d of %s…", file, p.Indexed, plural(p.Total, "passage"))
	}
	return "…"
}

// uploadErrorText says why an upload was refused, in the admin's words.
func uploadErrorText(err error) string {
	switch {
	case errors.Is(err, uploads.ErrBusy):
		return "another book is being added to this server right now. Try again when it is done."
	case errors.Is(err, uploads.ErrTooBig):
		return "it is too big (" + detail(err) + "). The bot's operator sets the limits (MAX_UPLOAD_MB, MAX_BOOK_TEXT_MB)."
	case errors.Is(err, uploads.ErrEmpty):
		return "the file is empty: it has no text."
	case errors.Is(err, uploads.ErrWrongType):
		return "it is not a PDF, Markdown or text file (" + detail(err) + ")."
	case errors.Is(err, uploads.ErrScanned):
		return "the PDF has no text I can read: it looks scanned. Run it through OCR first and upload the result."
	case errors.Is(err, uploads.ErrEncrypted):
		return "the PDF is encrypted. Save a copy without a password and upload that."
	case errors.Is(err, uploads.ErrCorrupt):
		return "the file is damaged and cannot be read."
	case errors.Is(err, uploads.ErrDownload):
		return "I could not fetch it from Discord. Try again in a moment."
	case errors.Is(err, context.Canceled):
		return "the bot is restarting."
	}
	return "something went wrong while reading or storing it (the error is in the bot's log)."
}

// detail is the part of an upload error after its reason ("the file is too big: x.pdf is 80 MiB,
// more than 50 MiB" → "x.pdf is 80 MiB, more than 50 MiB").
func detail(err error) string {
	msg := err.Error()
	for _, e := range []error{uploads.ErrTooBig, uploads.ErrWrongType} {
		if _, rest, ok := strings.Cut(msg, e.Error()+": "); ok {
			msg = rest
			break
		}
	}
	if i := strings.Index(msg, ": "); i > 0 && strings.Contains(msg[:i], "(") {
		msg = msg[i+2:] // "(file): loader text"
	}
	return escape(truncate(msg, 200))
}

// removeBook runs /books remove.
func (h *Handler) removeBook(ctx context.Context, r Responder, i *discordgo.Interaction, opts []*discordgo.ApplicationCommandInteractionDataOption) error {
	var book string
	for _, o := range opts {
		if o.Name == "book" {
			book, _ = o.Value.(string)
		}
	}
	book = strings.TrimSpace(book)
	err := h.opt.Librarian.Remove(ctx, i.GuildID, book)
	switch {
	case errors.Is(err, uploads.ErrNoBook):
		return Ephemeral(ctx, r, i, "This server has no book named **"+escape(book)+"** (`/books list` shows them; shared books are the operator's).")
	case err != nil:
		_ = Ephemeral(ctx, r, i, "⚠️ I could not remove **"+escape(book)+"**: the book store did not answer. Try again in a moment.")
		return fmt.Errorf("books remove: %w", err)
	}
	h.log.Info("books remove", "library", i.GuildID, "book", book, "user", UserID(i))
	return Ephemeral(ctx, r, i, "🗑️ Removed **"+escape(book)+"** from this server's books.")
}

// autocomplete offers book names: for /rule the books its questions read (the server's and the
// shared ones), for /books remove the server's own (to managers only).
func (h *Handler) autocomplete(ctx context.Context, r Responder, i *discordgo.Interaction) error {
	data := i.ApplicationCommandData()
	opts := data.Options
	own := false
	if data.Name == "books" && len(opts) > 0 && opts[0].Type == discordgo.ApplicationCommandOptionSubCommand {
		own, opts = true, opts[0].Options
	}
	var typed string
	for _, o := range opts {
		if o.Focused {
			typed, _ = o.Value.(string)
		}
	}
	choices := []*discordgo.ApplicationCommandOptionChoice{}
	if !own || canManage(i) {
		books, err := h.opt.Answerer.Books(ctx, libraryOf(i))
		if err != nil {
			h.log.Warn("autocomplete: list books", "err", err)
		}
		typed = strings.ToLower(strings.TrimSpace(typed))
		for _, b := range books {
			if len(choices) == 25 {
				break
			}
			if own && b.Library != i.GuildID {
				continue
			}
			if typed == "" || strings.Contains(strings.ToLower(b.Name), typed) {
				name := truncate(b.Name, 100)
				choices = append(choices, &discordgo.ApplicationCommandOptionChoice{Name: name, Value: name})
			}
		}
	}
	return r.Respond(ctx, i, &discordgo.InteractionResponse{
		Type: discordgo.InteractionApplicationCommandAutocompleteResult,
		Data: &discordgo.InteractionResponseData{Choices: choices},
	})
}

// ReportLostJobs tells the admins of the uploads a restart cut short that their book was not
// added: by editing the upload's reply while its token lives, else in its channel. Call it once
// the bot is connected.
func (h *Handler) ReportLostJobs(ctx context.Context, r Responder) {
	lost, err := h.mem.LostJobs(ctx)
	if err != nil {
		h.log.Error("reading the uploads cut short by a restart", "err", err)
		return
	}
	for _, j := range lost {
		text := "⚠️ The bot restarted while adding " + escape(j.File) + ", so it was not added. This server's books are unchanged: upload it again with `/books add`."
		h.log.Warn("an upload was cut short by a restart", "library", j.Library, "file", j.File, "user", j.User, "started", j.At)
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		i := &discordgo.Interaction{AppID: j.AppID, Token: j.Token, ChannelID: j.Channel}
		done := false
		if j.Token != "" && h.opt.Now().Sub(j.At) < tokenLife {
			_, err := r.EditResponse(cctx, i, &discordgo.WebhookEdit{Content: &text, AllowedMentions: noPings()})
			done = err == nil
		}
		if !done && j.Channel != "" {
			if _, err := r.Send(cctx, j.Channel, &discordgo.MessageSend{Content: text, AllowedMentions: noPings()}); err != nil {
				h.log.Warn("report of an upload cut short", "err", err, "channel", j.Channel)
			}
		}
		cancel()
	}
}
