package commands

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/caprag/caprag/rag"
)

// Discord's limits on a message's embeds (https://discord.com/developers/docs/resources/message#embed-object-embed-limits).
const (
	discordEmbeds      = 10
	discordEmbedTotal  = 6000
	discordTitle       = 256
	discordDescription = 4096
	discordFields      = 25
	discordFieldName   = 256
	discordFieldValue  = 1024
	discordFooter      = 2048
)

// checkMessages returns what breaks Discord's limits or caprag's promises in an answer's
// messages: sizes, empty parts, masked links, and (when the input was valid UTF-8) runes cut.
func checkMessages(msgs [][]*discordgo.MessageEmbed, valid bool) error {
	if len(msgs) == 0 {
		return fmt.Errorf("no message")
	}
	runes := utf8.RuneCountInString
	for i, m := range msgs {
		if len(m) == 0 || len(m) > discordEmbeds {
			return fmt.Errorf("message %d has %d embeds", i, len(m))
		}
		total := 0
		for j, e := range m {
			strs := []string{e.Title, e.Description}
			total += runes(e.Title) + runes(e.Description)
			if runes(e.Title) > discordTitle || runes(e.Description) > discordDescription {
				return fmt.Errorf("message %d embed %d: title %d, description %d characters", i, j, runes(e.Title), runes(e.Description))
			}
			if e.Title == "" && e.Description == "" && len(e.Fields) == 0 {
				return fmt.Errorf("message %d embed %d is empty", i, j)
			}
			if len(e.Fields) > discordFields {
				return fmt.Errorf("message %d embed %d: %d fields", i, j, len(e.Fields))
			}
			for _, f := range e.Fields {
				total += runes(f.Name) + runes(f.Value)
				strs = append(strs, f.Name, f.Value)
				if f.Value == "" || runes(f.Name) > discordFieldName || runes(f.Value) > discordFieldValue {
					return fmt.Errorf("message %d embed %d: field %q of %d characters", i, j, f.Name, runes(f.Value))
				}
			}
			if e.Footer != nil {
				total += runes(e.Footer.Text)
				strs = append(strs, e.Footer.Text)
				if runes(e.Footer.Text) > discordFooter {
					return fmt.Errorf("message %d embed %d: footer of %d characters", i, j, runes(e.Footer.Text))
				}
			}
			for _, s := range strs {
				if hasMaskedLink(s) {
					return fmt.Errorf("message %d embed %d: a masked link survives in %q", i, j, s)
				}
				if valid && !utf8.ValidString(s) {
					return fmt.Errorf("message %d embed %d: a rune was cut", i, j)
				}
			}
		}
		if total > discordEmbedTotal {
			return fmt.Errorf("message %d: %d characters", i, total)
		}
	}
	return nil
}

// hasMaskedLink reports whether Discord would render a masked link ("[text](address)") in s:
// its link rule needs "](" right after the text.
func hasMaskedLink(s string) bool { return strings.Contains(s, "](") }

// within fails the test when f does not return in d (a hang, not a speed check: d is far above
// what f needs).
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %s (it hangs)", what, d)
	}
}

// Row 1 of issue 11: "[" followed by 4,000 bytes without "]" made split loop forever.
func TestSplitStrayBracketEnds(t *testing.T) {
	for _, text := range []string{
		"[" + strings.Repeat("x", 4000),
		"[" + strings.Repeat("x ", 3000),
		strings.Repeat("[", 9000),
		"[1" + strings.Repeat("2", 5000) + "]",
		"a [" + strings.Repeat("é", 3000),
	} {
		var parts []string
		within(t, 20*time.Second, "split", func() { parts = split(text, embedText) })
		if strings.ReplaceAll(strings.Join(parts, ""), " ", "") != strings.ReplaceAll(text, " ", "") {
			t.Fatalf("text changed")
		}
		for _, p := range parts {
			if p == "" || len(p) > embedText || !utf8.ValidString(p) {
				t.Fatalf("bad part of %d bytes (valid %v)", len(p), utf8.ValidString(p))
			}
		}
	}
	a := rag.Answer{Question: "q", Text: "[" + strings.Repeat("x", 4000)}
	var msgs [][]*discordgo.MessageEmbed
	within(t, 20*time.Second, "answerMessages", func() { msgs = answerMessages(a) })
	if err := checkMessages(msgs, true); err != nil {
		t.Fatal(err)
	}
}

// Row 9 of issue 11: a masked link in book text, a heading or a book name became a clickable
// link in the answer, the Sources and /books.
func TestMaskedLinksAreDefanged(t *testing.T) {
	link := "[the official errata portal](https://phish.example/login)"
	a := rag.Answer{
		Question: "How do I get the errata " + link + "?", Strategy: "multi-hop",
		Text: "Check " + link + " first [1]. Also [click](<https://phish.example>) [2].",
		Sources: []rag.Source{
			{N: 1, Book: "Errata " + link, Page: 3, Section: "Updates > " + link, Text: "See " + link},
			{N: 2, Book: "Basic Set", Section: "Rules", Text: "plain"},
		},
	}
	msgs := answerMessages(a)
	if err := checkMessages(msgs, true); err != nil {
		t.Fatal(err)
	}
	desc := msgs[0][0].Description
	if !strings.Contains(desc, `[the official errata portal]\(https://phish.example/login)`) || !strings.Contains(desc, "[1]") {
		t.Fatalf("answer text %q: the link text and citations should stay readable", desc)
	}
	for _, e := range sourceEmbeds(a.Sources) {
		if hasMaskedLink(e.Description) {
			t.Fatalf("sources embed keeps a masked link: %q", e.Description)
		}
	}
	if line := progressLine(rag.Progress{Hop: rag.Hop{N: 2, Following: []string{link}}}); hasMaskedLink(line) {
		t.Fatalf("progress keeps a masked link: %q", line)
	}
	r := &capture{}
	h := New(Options{Answerer: books{{Name: "Errata " + link, Passages: 3}}})
	if err := h.listBooks(context.Background(), r, &discordgo.Interaction{}); err != nil {
		t.Fatal(err)
	}
	if d := r.responses[0].Data.Embeds[0].Description; hasMaskedLink(d) || !strings.Contains(d, "errata portal") {
		t.Fatalf("/books: %q", d)
	}
	if msg := h.errorText(context.Background(), rag.ErrNoContext, ask{books: []string{link}}); hasMaskedLink(msg) {
		t.Fatalf("error text: %q", msg)
	}
}

// Row 11 of issue 11: a long answer split into tiny messages ("- A goblin grappling note"
// alone) when the piece fit beside its neighbour.
func TestShortPartsShareAMessage(t *testing.T) {
	para := func(word string) string {
		return strings.TrimSpace(strings.Repeat(word+" grapples the target [1]. ", 3990/len(word+" grapples the target [1]. ")))
	}
	text := para("An orc") + "\n\n- A goblin grappling note\n\n" + para("A troll")
	msgs := answerMessages(rag.Answer{Question: "q", Text: text, Sources: []rag.Source{{N: 1, Book: "Basic Set", Section: "Grappling"}}})
	if err := checkMessages(msgs, true); err != nil {
		t.Fatal(err)
	}
	for i, m := range msgs {
		for _, e := range m {
			if strings.TrimSpace(e.Description) == "- A goblin grappling note" && len(m) == 1 {
				t.Fatalf("message %d holds the bullet alone", i)
			}
		}
	}
	if err := checkNoMergeable(msgs); err != nil {
		t.Fatal(err)
	}
	// A paragraph break early in the room is not taken: the piece would be a stray fragment.
	parts := split("Short note.\n\n"+strings.Repeat("A long rule sentence here. ", 200), 1000)
	if len(parts[0]) < 500 {
		t.Fatalf("first piece is a fragment of %d bytes: %q", len(parts[0]), parts[0])
	}
}

// checkNoMergeable fails when two consecutive messages would have fitted in one.
func checkNoMergeable(msgs [][]*discordgo.MessageEmbed) error {
	for i := 1; i < len(msgs); i++ {
		a, b := msgs[i-1], msgs[i]
		size := 0
		for _, e := range append(append([]*discordgo.MessageEmbed{}, a...), b...) {
			size += embedSize(e)
		}
		if len(a)+len(b) <= maxEmbeds && size <= embedTotal {
			return fmt.Errorf("messages %d and %d (%d characters together) would fit in one", i-1, i, size)
		}
	}
	return nil
}

// FuzzAnswerMessages: whatever a book or a model puts in an answer, its messages fit Discord's
// limits, keep every citation whole, carry no masked link and never leave a part alone that fit
// beside its neighbour. (A hang shows as the fuzz run's timeout.)
func FuzzAnswerMessages(f *testing.F) {
	f.Add("You may make two attacks at -6 [1], see also Cinematic Combat [2].", "Can I attack twice?", "Basic Set", "Combat > Rapid Strike")
	f.Add("["+strings.Repeat("x", 4100), "q", "b", "s")
	f.Add(strings.Repeat("A long rule explained at length with its citation [1]. ", 150), "long", "Book [x](https://e.example)", "A > B")
	f.Add(strings.Repeat("word [12, 13] ", 700)+"\n\n- A goblin grappling note\n\n"+strings.Repeat("é", 3000), "q", "", "")
	f.Fuzz(func(t *testing.T, text, question, book, section string) {
		a := rag.Answer{Question: question, Text: text, Strategy: "multi-hop"}
		for n := 1; n <= 3; n++ {
			a.Sources = append(a.Sources, rag.Source{N: n, Book: book, Section: section, Page: n})
		}
		msgs := answerMessages(a)
		valid := utf8.ValidString(text) && utf8.ValidString(question) && utf8.ValidString(book) && utf8.ValidString(section)
		if err := checkMessages(msgs, valid); err != nil {
			t.Fatal(err)
		}
		if err := checkNoMergeable(msgs); err != nil {
			t.Fatal(err)
		}
		want := citation.FindAllString(noLinks(strings.TrimSpace(text)), -1)
		var got []string
		for _, m := range msgs {
			for _, e := range m {
				got = append(got, citation.FindAllString(e.Description, -1)...)
			}
		}
		if strings.Join(got, "") != strings.Join(want, "") {
			t.Fatalf("citations %q, want %q", got, want)
		}
		for _, p := range split(text, 64) {
			if p == "" && strings.TrimSpace(text) != "" {
				t.Fatal("empty piece")
			}
		}
	})
}

// books is an Answerer with a fixed list of books.
type books []rag.BookInfo

func (b books) Books(context.Context, string) ([]rag.BookInfo, error)   { return b, nil }
func (b books) Answer(context.Context, rag.Request) (rag.Answer, error) { return rag.Answer{}, nil }

// capture is a Responder that records what it is asked to send.
type capture struct {
	refuse
	responses []*discordgo.InteractionResponse
}

func (c *capture) Respond(_ context.Context, _ *discordgo.Interaction, r *discordgo.InteractionResponse) error {
	c.responses = append(c.responses, r)
	return nil
}
