package bot_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caprag/caprag/bot"
	"github.com/caprag/caprag/config"
	"github.com/caprag/caprag/ingest"
	"github.com/caprag/caprag/internal/fakediscord"
	"github.com/caprag/caprag/internal/testenv"
	"github.com/caprag/caprag/offline"
	"github.com/caprag/caprag/rag"
	"github.com/caprag/caprag/state"
	"github.com/caprag/caprag/store"
	"github.com/caprag/caprag/uploads"
)

const (
	guildA = "210000000000000001"
	guildB = "220000000000000002"
	chanA  = "410000000000000001"
	chanB  = "420000000000000002"
)

func admin(guild string) fakediscord.Actor {
	return fakediscord.Actor{Guild: guild, User: "510000000000000001", Permissions: 1 << 5} // Manage Server
}

func player(guild string) fakediscord.Actor {
	return fakediscord.Actor{Guild: guild, User: "520000000000000002", Permissions: 1 << 11} // Send Messages
}

// Two servers' house rules about the same thing, each with words of its own, and a shared book.
const (
	codexA   = "# Flumph Codex\n\n## Flumph Pit\n\nA creature that falls into the flumph pit takes 2d6 acid damage and is grappled by the quivering flumphs until it escapes.\n"
	almanacB = "# Gibbering Almanac\n\n## Flumph Pit\n\nBy the almanac the flumph pit mends wounds: a creature in it regains 1d4 hit points each round of murmuring.\n"
	shared   = "# Conditions\n\n## Grappled\n\nA grappled creature's speed becomes 0, and it can't benefit from any bonus to its speed.\n\n## Prone\n\nA prone creature's only movement option is to crawl.\n"
)

// servers is the bot with per-server libraries on disk (embedded store), the state file and
// uploads, as `caprag bot` wires them.
type servers struct {
	*harness
	libs *store.Libraries
	mem  *state.DB
}

// startServers runs the bot over DATA_DIR dir on the fake Discord fd; the shared library gets
// the shared book when it has none. maxUpload bounds /books add.
func startServers(t *testing.T, fd *fakediscord.Server, dir string, maxUpload int64, mod func(*config.Config)) *servers {
	t.Helper()
	ctx := context.Background()
	cfg := config.Config{DataDir: dir, VectorStore: "embedded", EmbeddingsProvider: "local", SearchMode: "auto"}
	libs, err := store.OpenLibraries(ctx, cfg, store.LibrariesOptions{Refresh: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { libs.Close() })
	sh, _ := libs.Library(ctx, store.SharedLibrary)
	if bs, _ := sh.Books(ctx); len(bs) == 0 {
		b, err := ingest.LoadBytes(ctx, "Conditions.md", []byte(shared), ingest.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := sh.ReplaceBook(ctx, *b); err != nil {
			t.Fatal(err)
		}
	}
	p, err := rag.NewPipeline(rag.PipelineOptions{
		Scoper:    libs,
		ModelsFor: func(r rag.Retriever) rag.Models { v, _ := r.(offline.Vocabulary); return offline.Models(v) },
		CacheTTL:  time.Hour, CacheMax: 100,
	})
	if err != nil {
		t.Fatal(err)
	}
	mem, err := state.Open(filepath.Join(dir, "state.db"), state.Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	jobs := uploads.New(uploads.Options{Shelves: libs, MaxBytes: maxUpload, Jobs: 2})
	h := startOn(t, fd, mod, p, func(o *bot.Options) { o.Librarian = jobs; o.Memory = mem })
	return &servers{harness: h, libs: libs, mem: mem}
}

// ask sends /rule as actor in channel and returns the final reply and the token.
func (s *servers) ask(t *testing.T, actor fakediscord.Actor, channel, question string, opts ...fakediscord.Option) (message, string) {
	t.Helper()
	opts = append([]fakediscord.Option{{Name: "question", Value: question}}, opts...)
	_, token, p := s.fd.InteractionAs(actor, 2, channel, fakediscord.SlashCommand("rule", opts...), nil)
	s.fd.Dispatch("INTERACTION_CREATE", p)
	m, _ := s.finalEdit(t, token)
	return m, token
}

// reply waits for the interaction's reply that ends its work: a refusal (an immediate message)
// or an edit of the deferred reply that is a result (✅ or ⚠️), and returns its text.
func (s *servers) reply(t *testing.T, token string, timeout time.Duration) string {
	t.Helper()
	var text string
	s.fd.Wait(t, timeout, "the reply of "+token, func(rs []fakediscord.Request) bool {
		for _, r := range fakediscord.ForToken(rs, token) {
			m := decode(t, r)
			if strings.HasSuffix(r.Path, "/callback") && m.Type == 4 && m.Data != nil {
				text = m.Data.Content
				return true
			}
			if r.Method == "PATCH" && r.Status == 200 && (strings.HasPrefix(m.Content, "✅") || strings.HasPrefix(m.Content, "⚠️")) {
				text = m.Content
				return true
			}
		}
		return false
	})
	return text
}

// addBook uploads a file with /books add as actor and returns the final reply's text.
func (s *servers) addBook(t *testing.T, actor fakediscord.Actor, channel, filename string, data []byte, size int, timeout time.Duration) string {
	t.Helper()
	att := s.fd.Attach(filename, data, size)
	_, token, p := s.fd.InteractionAs(actor, 2, channel, fakediscord.SubCommand("books", "add", fakediscord.Option{Name: "file", Value: att}), nil)
	s.fd.Dispatch("INTERACTION_CREATE", p)
	return s.reply(t, token, timeout)
}

// books lists a library's own books.
func (s *servers) books(t *testing.T, lib string) []string {
	t.Helper()
	st, err := s.libs.Library(context.Background(), lib)
	if err != nil {
		t.Fatal(err)
	}
	bs, _ := st.Books(context.Background())
	var out []string
	for _, b := range bs {
		out = append(out, b.Name)
	}
	return out
}

// shown is everything an answer shows: its text and its sources.
func shown(m message) string {
	var b strings.Builder
	b.WriteString(m.Content)
	for _, e := range m.Embeds {
		b.WriteString(e.Title + "\n" + e.Description + "\n")
		for _, f := range e.Fields {
			b.WriteString(f.Value + "\n")
		}
	}
	return b.String()
}

// TestABookUploadedInOneServerStaysThere: a book added in guild A is found by /rule in A and
// never in B — search, autocomplete, /books list, the Sources button, thread follow-ups, the
// cache — nor in a direct message; a member without Manage Server cannot add one.
func TestABookUploadedInOneServerStaysThere(t *testing.T) {
	fd := fakediscord.New(t)
	s := startServers(t, fd, t.TempDir(), 1<<20, nil)

	// The command is registered for managers only.
	var registered string
	for _, r := range fd.Requests() {
		if r.Method == "PUT" {
			registered = string(r.Body)
		}
	}
	if !strings.Contains(registered, `"name":"books","default_member_permissions":32`) && !strings.Contains(registered, `"default_member_permissions":32,`) {
		t.Fatalf("/books not registered with Manage Server as its default permission: %s", registered)
	}

	if got := s.addBook(t, player(guildA), chanA, "codex.md", []byte(codexA), -1, 10*time.Second); !strings.Contains(got, "Manage Server") {
		t.Fatalf("a player's upload: %q", got)
	}
	if bs := s.books(t, guildA); len(bs) != 0 {
		t.Fatalf("a refused upload added %v", bs)
	}
	got := s.addBook(t, admin(guildA), chanA, "Flumph Codex.md", []byte(codexA), -1, 30*time.Second)
	if !strings.HasPrefix(got, "✅ Added **Flumph Codex**") {
		t.Fatalf("the admin's upload: %q", got)
	}

	q := "What happens in the flumph pit?"
	inA, _ := s.ask(t, player(guildA), chanA, q)
	if a := shown(inA); !strings.Contains(a, "Flumph Codex") || !strings.Contains(a, "acid") {
		t.Fatalf("in A the answer does not use A's book:\n%s", a)
	}
	inB, _ := s.ask(t, player(guildB), chanB, q)
	if a := shown(inB); strings.Contains(a, "Flumph Codex") || strings.Contains(a, "acid") {
		t.Fatalf("in B the answer uses A's book:\n%s", a)
	}
	if len(inB.Embeds) > 0 && strings.Contains(inB.Embeds[len(inB.Embeds)-1].Footer.Text, "cached") {
		t.Fatal("B was answered from A's cached answer")
	}
	dm, _ := s.ask(t, fakediscord.Actor{User: "530000000000000003"}, "430000000000000003", q)
	if a := shown(dm); strings.Contains(a, "Flumph Codex") || strings.Contains(a, "acid") {
		t.Fatalf("a direct message reads A's book:\n%s", a)
	}

	// B's own book is B's alone.
	if got := s.addBook(t, admin(guildB), chanB, "Gibbering Almanac.md", []byte(almanacB), -1, 30*time.Second); !strings.HasPrefix(got, "✅") {
		t.Fatalf("B's upload: %q", got)
	}
	inB, _ = s.ask(t, player(guildB), chanB, q)
	if a := shown(inB); !strings.Contains(a, "almanac") || strings.Contains(a, "Flumph Codex") || strings.Contains(a, "acid") {
		t.Fatalf("in B, after B's upload:\n%s", a)
	}
	again, tokenA := s.ask(t, player(guildA), chanA, q)
	if a := shown(again); !strings.Contains(a, "Flumph Codex") || strings.Contains(a, "almanac") {
		t.Fatalf("in A, after B's upload:\n%s", a)
	}

	// Autocomplete of /rule's book and /books list.
	choices := func(actor fakediscord.Actor, channel string) string {
		_, tk, p := fd.InteractionAs(actor, 4, channel, fakediscord.SlashCommand("rule", fakediscord.Option{Name: "question", Value: "x"}, fakediscord.Option{Name: "book", Value: "", Focused: true}), nil)
		fd.Dispatch("INTERACTION_CREATE", p)
		reqs := fd.Wait(t, 10*time.Second, "choices", func(rs []fakediscord.Request) bool { return len(fakediscord.ForToken(rs, tk)) > 0 })
		return string(fakediscord.ForToken(reqs, tk)[0].Body)
	}
	if a, b := choices(player(guildA), chanA), choices(player(guildB), chanB); !strings.Contains(a, "Flumph Codex") || strings.Contains(a, "Gibbering") || strings.Contains(b, "Flumph Codex") || !strings.Contains(b, "Conditions") {
		t.Fatalf("autocomplete: A %s / B %s", a, b)
	}
	_, tk, p := fd.InteractionAs(admin(guildB), 2, chanB, fakediscord.SubCommand("books", "list"), nil)
	fd.Dispatch("INTERACTION_CREATE", p)
	if list := s.reply(t, tk, 10*time.Second); list != "" {
		t.Fatalf("/books list answered with text %q", list)
	}
	body := string(fakediscord.ForToken(fd.Requests(), tk)[0].Body)
	if !strings.Contains(body, "Gibbering Almanac") || strings.Contains(body, "Flumph Codex") || !strings.Contains(body, "Conditions") {
		t.Fatalf("/books list in B: %s", body)
	}

	// The Sources button: in A it shows A's passages; the same message clicked from B shows
	// nothing of it.
	answerA := fd.Original(tokenA)
	click := func(actor fakediscord.Actor, channel string) string {
		_, tk, p := fd.InteractionAs(actor, 3, channel, map[string]any{"custom_id": "caprag:sources", "component_type": 2}, fd.Message(answerA))
		fd.Dispatch("INTERACTION_CREATE", p)
		reqs := fd.Wait(t, 10*time.Second, "sources", func(rs []fakediscord.Request) bool { return len(fakediscord.ForToken(rs, tk)) > 0 })
		return string(fakediscord.ForToken(reqs, tk)[0].Body)
	}
	if a := click(player(guildA), chanA); !strings.Contains(a, "acid damage") {
		t.Fatalf("Sources in A: %s", a)
	}
	if b := click(player(guildB), chanB); strings.Contains(b, "acid") || !strings.Contains(b, "no longer remember") {
		t.Fatalf("Sources of A's answer clicked from B: %s", b)
	}

	// A follow-up in A's thread reads A's books; the modal sent from B for A's answer does not.
	_, _, p = fd.InteractionAs(player(guildA), 5, chanA, fakediscord.ModalSubmit("caprag:ask:"+answerA, "question", "and what does the pit do to a prone creature?"), nil)
	fd.Dispatch("INTERACTION_CREATE", p)
	s.finalEditIn(t, answerA, 1)
	var thread string
	for _, r := range fd.Requests() {
		if r.Method == "PATCH" && strings.HasPrefix(r.Path, "/channels/"+answerA+"/messages/") && strings.Contains(string(r.Body), `"embeds":[{`) {
			thread = string(r.Body)
		}
	}
	if !strings.Contains(thread, "Flumph Codex") || strings.Contains(thread, "almanac") {
		t.Fatalf("the follow-up in A's thread: %s", thread)
	}
	_, tk, p = fd.InteractionAs(player(guildB), 5, chanB, fakediscord.ModalSubmit("caprag:ask:"+answerA, "question", "and in the pit?"), nil)
	fd.Dispatch("INTERACTION_CREATE", p)
	reqs := fd.Wait(t, 10*time.Second, "the refused follow-up", func(rs []fakediscord.Request) bool {
		for _, r := range fakediscord.ForToken(rs, tk) {
			if r.Method == "PATCH" {
				return true
			}
		}
		return false
	})
	for _, r := range fakediscord.ForToken(reqs, tk) {
		if strings.Contains(string(r.Body), "acid") || strings.Contains(string(r.Body), "Flumph Codex") {
			t.Fatalf("a follow-up from B read A's answer: %s", r.Body)
		}
		if r.Method == "PATCH" && !strings.Contains(string(r.Body), "no longer remember") {
			t.Fatalf("a follow-up from B for A's answer: %s", r.Body)
		}
	}

	// /books remove: a player is refused; the admin removes A's book, and A no longer finds it.
	remove := func(actor fakediscord.Actor) string {
		_, tk, p := fd.InteractionAs(actor, 2, chanA, fakediscord.SubCommand("books", "remove", fakediscord.Option{Name: "book", Value: "Flumph Codex"}), nil)
		fd.Dispatch("INTERACTION_CREATE", p)
		return s.reply(t, tk, 10*time.Second)
	}
	if got := remove(player(guildA)); !strings.Contains(got, "Manage Server") || len(s.books(t, guildA)) != 1 {
		t.Fatalf("a player's /books remove: %q, books %v", got, s.books(t, guildA))
	}
	if got := remove(admin(guildA)); !strings.Contains(got, "Removed **Flumph Codex**") || len(s.books(t, guildA)) != 0 {
		t.Fatalf("the admin's /books remove: %q, books %v", got, s.books(t, guildA))
	}
	after, _ := s.ask(t, player(guildA), chanA, q)
	if a := shown(after); strings.Contains(a, "Flumph Codex") {
		t.Fatalf("A still finds its removed book:\n%s", a)
	}
	checkNoPings(t, fd.Requests())
}

// elf is the start of a Linux program, padded.
var elf = append([]byte("\x7fELF\x02\x01\x01\x00"), make([]byte, 4000)...)

// TestBadUploadsAreRefusedInWords: a damaged PDF, an empty file, a file over the limit and a
// program renamed .pdf each get their reason, and the server's books stay as they were.
func TestBadUploadsAreRefusedInWords(t *testing.T) {
	fd := fakediscord.New(t)
	s := startServers(t, fd, t.TempDir(), 64<<10, nil)
	if got := s.addBook(t, admin(guildA), chanA, "codex.md", []byte(codexA), -1, 30*time.Second); !strings.HasPrefix(got, "✅") {
		t.Fatalf("good upload: %q", got)
	}
	lib, _ := s.libs.Library(context.Background(), guildA)
	before, _ := lib.Version(context.Background())
	for _, tc := range []struct {
		file string
		data []byte
		size int
		want string
	}{
		{"rules.pdf", []byte("%PDF-1.7\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\ngarbage where the pages should be\n%%EOF\n"), -1, "damaged"},
		{"empty.md", []byte{}, -1, "empty"},
		{"huge.md", []byte(strings.Repeat("# Huge\n\nwords\n", 10000)), -1, "too big"},
		{"rules2.pdf", elf, -1, "not a PDF, Markdown or text file (it is a program)"},
	} {
		got := s.addBook(t, admin(guildA), chanA, tc.file, tc.data, tc.size, 30*time.Second)
		if !strings.HasPrefix(got, "⚠️") || !strings.Contains(got, tc.want) || !strings.Contains(got, "books are unchanged") {
			t.Errorf("%s: %q, want a refusal saying %q", tc.file, got, tc.want)
		}
	}
	after, _ := lib.Version(context.Background())
	if bs := s.books(t, guildA); after != before || len(bs) != 1 {
		t.Fatalf("the refused uploads changed the library: %v", bs)
	}
}

// TestRestartKeepsThreadsAndButtons: the bot restarted mid-thread answers the next follow-up
// with the thread's history, the Sources button of an answer given before the restart still
// works, and an upload the restart cut short is reported.
func TestRestartKeepsThreadsAndButtons(t *testing.T) {
	fd := fakediscord.New(t)
	dir := t.TempDir()
	s := startServers(t, fd, dir, 1<<20, nil)
	if got := s.addBook(t, admin(guildA), chanA, "codex.md", []byte(codexA), -1, 30*time.Second); !strings.HasPrefix(got, "✅") {
		t.Fatalf("upload: %q", got)
	}
	_, token := s.ask(t, player(guildA), chanA, "What happens in the flumph pit?")
	answer := fd.Original(token)
	_, _, p := fd.InteractionAs(player(guildA), 5, chanA, fakediscord.ModalSubmit("caprag:ask:"+answer, "question", "Does it grapple?"), nil)
	fd.Dispatch("INTERACTION_CREATE", p)
	s.finalEditIn(t, answer, 1)
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	// An upload under way when the bot died (it never ended).
	if err := s.mem.BeginJob(context.Background(), state.Job{ID: "lost-1", Library: guildA, File: "monsters.pdf", Channel: chanA, At: time.Now().Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	s.libs.Close()

	s2 := startServers(t, fd, dir, 1<<20, nil)
	fd.Wait(t, 10*time.Second, "the report of the lost upload", func(rs []fakediscord.Request) bool {
		for _, r := range rs {
			if r.Method == "POST" && r.Path == "/channels/"+chanA+"/messages" && strings.Contains(string(r.Body), "restarted while adding monsters.pdf") {
				return true
			}
		}
		return false
	})
	_, tk, p := fd.InteractionAs(player(guildA), 3, chanA, map[string]any{"custom_id": "caprag:sources", "component_type": 2}, fd.Message(answer))
	fd.Dispatch("INTERACTION_CREATE", p)
	reqs := fd.Wait(t, 10*time.Second, "sources", func(rs []fakediscord.Request) bool { return len(fakediscord.ForToken(rs, tk)) > 0 })
	if body := string(fakediscord.ForToken(reqs, tk)[0].Body); !strings.Contains(body, "acid damage") {
		t.Fatalf("Sources after the restart: %s", body)
	}
	// /rule in the thread (its ID is the answer's) is rewritten with the thread's history.
	_, tk, p = fd.InteractionAs(player(guildA), 2, answer, fakediscord.SlashCommand("rule", fakediscord.Option{Name: "question", Value: "what about prone?"}), nil)
	fd.Dispatch("INTERACTION_CREATE", p)
	_, reqs = s2.finalEdit(t, tk)
	var progress []string
	for _, r := range reqs {
		if m := decode(t, r); r.Method == "PATCH" && len(m.Embeds) == 0 {
			progress = append(progress, m.Content)
		}
	}
	if !strings.Contains(strings.Join(progress, "\n"), "(about: Does it grapple?") {
		t.Fatalf("the follow-up after the restart was not rewritten with the thread's history: %q", progress)
	}
}

// TestFairUse: past the per-player limit a question gets an ephemeral message saying when to
// try again, and another player of the server is still answered.
func TestFairUse(t *testing.T) {
	fd := fakediscord.New(t)
	s := startServers(t, fd, t.TempDir(), 1<<20, func(c *config.Config) { c.RateLimitUser = 2; c.RateLimitServer = 100 })
	for range 2 {
		s.ask(t, player(guildA), chanA, "Can a grappled creature move?")
	}
	_, tk, p := fd.InteractionAs(player(guildA), 2, chanA, fakediscord.SlashCommand("rule", fakediscord.Option{Name: "question", Value: "And a prone one?"}), nil)
	fd.Dispatch("INTERACTION_CREATE", p)
	got := s.reply(t, tk, 10*time.Second)
	m := decode(t, fakediscord.ForToken(fd.Requests(), tk)[0])
	if !strings.Contains(got, "2 questions a minute") || !strings.Contains(got, "Try again <t:") || m.Data.Flags != 64 {
		t.Fatalf("over the limit: %q (flags %d)", got, m.Data.Flags)
	}
	other := fakediscord.Actor{Guild: guildA, User: "540000000000000004"}
	if a, _ := s.ask(t, other, chanA, "And a prone one?"); len(a.Embeds) == 0 {
		t.Fatalf("another player was not answered: %+v", a)
	}
}

// TestQuestionsWhileABigBookIsAdded: 50 /rule questions across 5 guilds while the 403-page SRD
// PDF is added in one of them: every question is answered, and none from another guild's books.
func TestQuestionsWhileABigBookIsAdded(t *testing.T) {
	pdf, err := os.ReadFile(testenv.SRDPDF(t))
	if err != nil {
		testenv.Missing(t, "the SRD PDF: %v", err)
	}
	fd := fakediscord.New(t)
	s := startServers(t, fd, t.TempDir(), 8<<20, func(c *config.Config) { c.AnswerTimeout = 5 * time.Minute })
	guilds := make([]string, 5)
	words := []string{"quillback", "marrowfen", "skarnwold", "vesperlin", "tobrellic"}
	for g := range guilds {
		guilds[g] = fmt.Sprintf("2300000000000000%02d", g)
		book := fmt.Sprintf("# Lore %d\n\n## The %s Rite\n\nThe %s rite of guild %d lets a caster reroll one saving throw per long rest.\n", g, words[g], words[g], g)
		if got := s.addBook(t, admin(guilds[g]), chanA, fmt.Sprintf("Lore %d.md", g), []byte(book), -1, 30*time.Second); !strings.HasPrefix(got, "✅") {
			t.Fatalf("guild %d upload: %q", g, got)
		}
	}
	att := fd.Attach("SRD5.1.pdf", pdf, -1)
	_, pdfToken, p := fd.InteractionAs(admin(guilds[0]), 2, chanA, fakediscord.SubCommand("books", "add", fakediscord.Option{Name: "file", Value: att}), nil)
	fd.Dispatch("INTERACTION_CREATE", p)
	// Questions start once the PDF is being read.
	fd.Wait(t, 60*time.Second, "the PDF being read", func(rs []fakediscord.Request) bool {
		for _, r := range fakediscord.ForToken(rs, pdfToken) {
			if strings.Contains(string(r.Body), "Reading SRD5.1.pdf") {
				return true
			}
		}
		return false
	})
	type asked struct {
		guild int
		token string
	}
	var (
		mu    sync.Mutex
		all   []asked
		wg    sync.WaitGroup
		start = time.Now()
	)
	for n := range 50 {
		g := n % 5
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, tk, p := fd.InteractionAs(fakediscord.Actor{Guild: guilds[g], User: fmt.Sprintf("5500000000000000%02d", n)}, 2, chanA,
				fakediscord.SlashCommand("rule", fakediscord.Option{Name: "question", Value: fmt.Sprintf("What does the %s rite do? (%d)", words[g], n)}), nil)
			fd.Dispatch("INTERACTION_CREATE", p)
			mu.Lock()
			all = append(all, asked{g, tk})
			mu.Unlock()
		}()
	}
	wg.Wait()
	pdfDone := false
	for _, a := range all {
		m, _ := s.finalEdit(t, a.token)
		text := shown(m)
		if len(m.Embeds) == 0 || !strings.Contains(text, words[a.guild]) {
			t.Errorf("guild %d: not answered from its book: %q", a.guild, text)
		}
		for g, w := range words {
			if g != a.guild && (strings.Contains(text, w) || strings.Contains(text, fmt.Sprintf("Lore %d", g))) {
				t.Errorf("guild %d's answer reads guild %d's book: %q", a.guild, g, text)
			}
		}
	}
	elapsed := time.Since(start)
	for _, r := range fakediscord.ForToken(fd.Requests(), pdfToken) {
		if strings.Contains(string(r.Body), "✅") {
			pdfDone = true
		}
	}
	got := s.reply(t, pdfToken, 10*time.Minute)
	if !strings.HasPrefix(got, "✅ Added **") || !strings.Contains(got, "403 pages") {
		t.Fatalf("the PDF upload: %q", got)
	}
	t.Logf("50 questions answered in %s, the PDF still being added when the last was answered: %v; %s", elapsed.Round(time.Millisecond), !pdfDone, got)
}

// TestBooksIngestedBesideTheBotReachIt: a book another process stores in a server's library
// (as `caprag ingest --server ID` does) is answered from by the running bot, without a restart.
func TestBooksIngestedBesideTheBotReachIt(t *testing.T) {
	fd := fakediscord.New(t)
	dir := t.TempDir()
	s := startServers(t, fd, dir, 1<<20, nil)
	q := "What happens in the flumph pit?"
	if a, _ := s.ask(t, player(guildA), chanA, q); strings.Contains(shown(a), "Flumph Codex") {
		t.Fatal("found before it was ingested")
	}
	ctx := context.Background()
	cli, err := store.OpenLibrary(ctx, config.Config{DataDir: dir, VectorStore: "embedded", EmbeddingsProvider: "local", SearchMode: "auto"}, guildA, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ingest.LoadBytes(ctx, "Flumph Codex.md", []byte(codexA), ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.ReplaceBook(ctx, *b); err != nil {
		t.Fatal(err)
	}
	cli.Close()
	time.Sleep(1100 * time.Millisecond) // the refresh interval of startServers
	if a, _ := s.ask(t, player(guildA), chanA, q); !strings.Contains(shown(a), "Flumph Codex") {
		t.Fatalf("the running bot does not answer from the book ingested beside it:\n%s", shown(a))
	}
}
