package offline

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/caprag/caprag/rag"
	"github.com/caprag/caprag/words"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/writer")

// A small invented game, written for these tests: a spell that deals numbers and sets a
// creature burning (with a reference to the condition), the condition, a table of gear, a
// passage about travel food.
var (
	emberLance = rag.Document{Book: "Arcana", Section: "Spells > Ember Lance", Rank: 0,
		Text: "A lance of white fire leaps from your hand toward one creature within 30 feet of you. The creature must succeed on a DC 14 Agility save or take 4d10 fire damage and start burning (see Burning).\n\n" +
			"At higher circles, the damage increases by 1d10 for each circle above the third. The lance lights every torch it passes.",
		Refs: []rag.Reference{{Kind: rag.RefSee, Text: "see Burning", Target: "Burning"}}}
	burning = rag.Document{Book: "Hazards", Section: "Conditions > Burning", Rank: 0,
		Text: "- A burning creature takes 1d6 fire damage at the start of each of its turns.\n- It can use its action to put out the flames.\n- Deep water puts them out at once."}
	rations = rag.Document{Book: "Core", Section: "Travel > Rations", Rank: 1,
		Text: "A day of rations weighs 2 pounds and feeds one traveller. Hunting can replace rations in the wild, at the cost of a day's march."}
	lights = rag.Document{Book: "Core", Section: "Gear > Lights", Rank: 0,
		Text: "| Item | Cost | Weight |\n| --- | --- | --- |\n| Candle | 1 cp | — |\n| Lantern | 5 sp | 2 lb. |\n| Torch | 1 cp | 1 lb. |\n\n" +
			"A lantern burns for 6 hours on a flask of oil. A torch burns for 1 hour and can be used as a club."}
	// a table as books converted from HTML keep it
	outcomes = rag.Document{Book: "Duels", Section: "Duels > Winning a Duel", Rank: 0,
		Text: "The duellist with the higher roll wins the exchange and scores touches by the margin.\n<table>\n<tbody>\n<tr>\n<td>\n\n<strong>Margin</strong>\n</td>\n<td>\n\n<strong>Touches</strong>\n</td>\n</tr>\n" +
			"<tr>\n<td>\n\n0\n</td>\n<td>\n\nNone, both stumble\n</td>\n</tr>\n<tr>\n<td>\n\n1-2\n</td>\n<td>\n\n1\n</td>\n</tr>\n<tr>\n<td>\n\n3+\n</td>\n<td>\n\n2\n</td>\n</tr>\n</tbody>\n</table>\n\n" +
			"Three touches end the duel."}
	// rules defined under run-in headings
	venoms = rag.Document{Book: "Hazards", Section: "Hazards > Venoms", Rank: 0,
		Text: "Each venom has its own effect.\n\nSleepthorn (Injury). A creature must succeed on a DC 12 Vigor save or fall asleep for 1 hour. A sleeping creature wakes when it takes damage.\n\n" +
			"Gravemoss (Ingested). A creature must succeed on a DC 16 Vigor save or lose 2d8 hit points."}
)

// writerCases are the golden cases: each is a question, the passages the writer is handed, and
// what its answer must and must not hold.
var writerCases = []struct {
	name     string
	question string
	docs     []rag.Document
	want     []string // substrings of the answer
	wantNot  []string
}{
	{
		// The sentence that carries the numbers on ("The creature must succeed on a DC 14 … or
		// take 4d10 …") is quoted with the one about the question, and the condition it sends the
		// reader to is quoted whole; the travel passage is not.
		name:     "numbers-and-chain",
		question: "What does the ember lance do to a creature it hits?",
		docs:     []rag.Document{emberLance, rations, burning},
		want:     []string{"DC 14 Agility save or take 4d10 fire damage", "[1]", "A burning creature takes 1d6 fire damage", "It can use its action to put out the flames. [3]"},
		wantNot:  []string{"rations", "[2]"},
	},
	{
		// Table rows are quoted whole, each with its header; the header is never quoted alone;
		// a question naming two rows gets both.
		name:     "table-rows",
		question: "How much do a lantern and a torch cost?",
		docs:     []rag.Document{lights, rations},
		want:     []string{"Item: Lantern; Cost: 5 sp; Weight: 2 lb.", "Item: Torch; Cost: 1 cp; Weight: 1 lb."},
		wantNot:  []string{"Item | Cost", "Item; Cost", "Candle"},
	},
	{
		name:     "html-table",
		question: "How many touches does a duellist score when winning by a margin of 3 or more?",
		docs:     []rag.Document{outcomes, rations},
		want:     []string{"Margin: 3+; Touches: 2."},
		wantNot:  []string{"<td>", "<strong>", "Margin; Touches"},
	},
	{
		// A rule the question names by its run-in heading is quoted whole, with its name; the
		// other rules of the passage are not.
		name:     "named-rule",
		question: "What does sleepthorn do to me?",
		docs:     []rag.Document{venoms, rations},
		want:     []string{"Sleepthorn (Injury). A creature must succeed on a DC 12 Vigor save or fall asleep for 1 hour. A sleeping creature wakes when it takes damage. [1]"},
		wantNot:  []string{"Gravemoss", "[2]"},
	},
	{
		// Nothing handed to the writer speaks of the question: it says so, naming the words it
		// did not find, and quotes no more than the closest few units.
		name:     "total-miss",
		question: "How do I repair the warp drive of a starship?",
		docs:     []rag.Document{rations, lights},
		want:     []string{"Your books don't seem to cover “repair”, “warp” or “drive”."},
		wantNot:  []string{"From the books (quoted):"},
	},
}

func TestWriterGolden(t *testing.T) {
	for _, c := range writerCases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Writer{}.Write(context.Background(), c.question, c.docs, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("answer lacks %q:\n%s", w, got)
				}
			}
			for _, w := range c.wantNot {
				if strings.Contains(got, w) {
					t.Errorf("answer holds %q:\n%s", w, got)
				}
			}
			path := filepath.Join("testdata", "writer", c.name+".golden")
			text := "question: " + c.question + "\n\n" + got + "\n"
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to write it)", err)
			}
			if string(want) != text {
				t.Errorf("answer differs from %s (go test -update rewrites it):\n%s", path, text)
			}
		})
	}
}

// The answer is the same every time: passages, units and scores are visited in fixed orders.
func TestWriterIsDeterministic(t *testing.T) {
	docs := []rag.Document{emberLance, rations, burning, lights, venoms}
	q := "What does the ember lance do to a creature, and how much does a lantern cost?"
	first, _ := Writer{}.Write(context.Background(), q, docs, nil)
	for range 30 {
		if got, _ := (Writer{}).Write(context.Background(), q, docs, nil); got != first {
			t.Fatalf("answers differ:\n%s\n---\n%s", first, got)
		}
	}
}

// Without continuing to the next sentence, the numbers of the rule (DC 14, 4d10) would be left
// out: they share no word with the question.
func TestWriterKeepsTheNumbersThatFollow(t *testing.T) {
	got, _ := Writer{}.Write(context.Background(), "Which creature does the ember lance leap toward?", []rag.Document{emberLance}, nil)
	if !strings.Contains(got, "within 30 feet of you. [1]") || !strings.Contains(got, "DC 14 Agility save or take 4d10 fire damage") {
		t.Errorf("the rule's numbers are dropped:\n%s", got)
	}
	// A sentence with a number that does not lean on the chosen one is not pulled in.
	if strings.Contains(got, "1d10 for each circle") {
		t.Errorf("an unrelated numbered sentence is quoted:\n%s", got)
	}
}

// A passage the strategy followed (a first hit, Rank 0) that shares no word with the question
// is quoted together with the sentence that points to it; without the reference, it is not.
func TestWriterQuotesTheChainTheStrategyFollowed(t *testing.T) {
	spell := rag.Document{Book: "Arcana", Section: "Spells > Stillwater", Rank: 2,
		Text: "You calm a body of water within 60 feet. Any creature swimming in it becomes becalmed for 1 minute.\n\nThe spell ends early if the water is disturbed by a storm.",
		Refs: []rag.Reference{{Kind: rag.RefMention, Text: "becalmed", Target: "Becalmed"}}}
	becalmed := rag.Document{Book: "Hazards", Section: "Conditions > Becalmed", Rank: 0,
		Text: "A becalmed creature's speed becomes 0, and it can't take reactions."}
	top := rag.Document{Book: "Core", Section: "Travel > Swimming", Rank: 0,
		Text: "Swimming through rough water in a storm costs 2 feet of movement for every foot. A creature swimming in a storm must make a DC 10 Vigor check each hour."}
	q := "What does the stillwater spell do to a creature swimming in a storm?"
	got, _ := Writer{}.Write(context.Background(), q, []rag.Document{top, spell, becalmed}, nil)
	if !strings.Contains(got, "becomes becalmed for 1 minute. [2]") || !strings.Contains(got, "A becalmed creature's speed becomes 0, and it can't take reactions. [3]") {
		t.Errorf("the chain spell → condition is not quoted:\n%s", got)
	}
	spell.Refs = nil
	spell.Text = strings.ReplaceAll(spell.Text, "becalmed", "still")
	got, _ = Writer{}.Write(context.Background(), q, []rag.Document{top, spell, becalmed}, nil)
	if strings.Contains(got, "[3]") {
		t.Errorf("a passage nothing points to and that shares no word with the question is quoted:\n%s", got)
	}
}

// A page reference of a book without pages, resolved by the books to the rule its words name
// ("see page 88 of the Core Book for more on renown" → Renown), leads the answer to that rule
// like a "see" reference does; a page reference resolved to nothing in the context leads nowhere.
func TestWriterFollowsAPageReferenceResolvedByName(t *testing.T) {
	feat := rag.Document{ID: "guide/4", Book: "guide", Section: "Deeds > Slaying the Tyrant", Rank: 0,
		Text: "When the heroes slay the tyrant, each of them gains renown. See page 88 of the Core Book for more on renown.",
		Refs: []rag.Reference{{Kind: rag.RefPage, Text: "page 88 of the Core Book", Target: "Renown", Book: "core-book", ID: "core-book/12"}}}
	renown := rag.Document{ID: "core-book/12", Book: "core-book", Section: "Advancement > Renown", Rank: 0,
		Text: "A hero with renown may raise one skill by a step at the end of the session."}
	q := "We slew the tyrant. What do we get for slaying him?"
	got, _ := Writer{}.Write(context.Background(), q, []rag.Document{feat, renown}, nil)
	if !strings.Contains(got, "may raise one skill by a step") {
		t.Errorf("the rule the page reference names is not quoted:\n%s", got)
	}
	feat.Refs[0].ID = "core-book/99"
	got, _ = Writer{}.Write(context.Background(), q, []rag.Document{feat, renown}, nil)
	if strings.Contains(got, "may raise one skill by a step") {
		t.Errorf("a page reference to another rule led to this one:\n%s", got)
	}
}

// A question the passages answer reads as an answer; one whose distinctive words they do not
// hold says so (a total miss must not read like a hit).
func TestWriterSaysWhenTheBooksDoNotCoverTheQuestion(t *testing.T) {
	hit, _ := Writer{}.Write(context.Background(), "How long does a lantern burn on a flask of oil?", []rag.Document{lights, rations}, nil)
	if !strings.HasPrefix(hit, "From the books (quoted):") || !strings.Contains(hit, "6 hours") {
		t.Errorf("a covered question does not read as an answer:\n%s", hit)
	}
	miss, _ := Writer{}.Write(context.Background(), "Can my mech vent its reactor heat into a frozen lake?", []rag.Document{lights, rations}, nil)
	if !strings.HasPrefix(miss, "Your books don't seem to cover ") || !strings.Contains(miss, "“reactor”") {
		t.Errorf("a miss reads like a hit:\n%s", miss)
	}
	if n := strings.Count(miss, "\n- "); n > maxClosest {
		t.Errorf("a miss quotes %d units, want at most %d", n, maxClosest)
	}
}

// vocabulary is a word-frequency table of a made-up library.
type vocabulary map[string]int

func (v vocabulary) Frequency(stem string) (int, int) { return v[stem], 1000 }

// With the books' word frequencies, a word every rule uses weighs little and a rare one much:
// the sentence that holds the rare word leads. Without them, the words are weighed by the
// passages at hand, where the rare word is the common one.
func TestWriterWeighsWordsByTheBooks(t *testing.T) {
	docs := []rag.Document{
		{Book: "Core", Section: "Combat > Rolls", Rank: 0, Text: "Every attack roll uses a twenty-sided die and your skill."},
		{Book: "Core", Section: "Combat > Tricks", Rank: 0, Text: "A feint is a trick that leaves your foe open until your next turn."},
	}
	v := vocabulary{words.Stem("attack"): 600, words.Stem("roll"): 500, words.Stem("feint"): 3}
	q := "What does a feint do to an attack roll?"
	got, _ := Writer{Vocabulary: v}.Write(context.Background(), q, docs, nil)
	if !strings.HasPrefix(got, "From the books (quoted):\n- A feint is a trick") {
		t.Errorf("with the books' frequencies, the sentence with the rare word does not lead:\n%s", got)
	}
	got, _ = Writer{}.Write(context.Background(), q, docs, nil)
	if !strings.HasPrefix(got, "From the books (quoted):\n- Every attack roll") {
		t.Errorf("without them, the sentence with the words rare among the passages does not lead:\n%s", got)
	}
}

// A table row the question asks about brings the other rows it names, even when the words of
// those rows are already quoted ("a win or a win with flair").
func TestWriterQuotesSiblingRows(t *testing.T) {
	d := rag.Document{Book: "Duels", Section: "Duels > Results", Rank: 0,
		Text: "| Result | Touches |\n| --- | --- |\n| Loss | 0 |\n| Win | 1 |\n| Win with flair | 2 |"}
	got, _ := Writer{}.Write(context.Background(), "How many touches does a win or a win with flair score?", []rag.Document{d, rations}, nil)
	if !strings.Contains(got, "Result: Win; Touches: 1. [1]") || !strings.Contains(got, "Result: Win with flair; Touches: 2. [1]") || strings.Contains(got, "Loss") {
		t.Errorf("want the two rows asked about:\n%s", got)
	}
}

// Sentences split at full stops followed by a capital, not after abbreviations, initials or
// inside numbers; list items and table rows are units of their own.
func TestSplitUnits(t *testing.T) {
	d := rag.Document{Section: "Rules > Reach", Text: "A pike reaches 10 ft. farther than a sword, e.g. past an ally. Use it with care in narrow halls.\n" +
		"- First item of a list\n- Second item, about 2.5 lb. of gear\n\n| Weapon | Reach |\n| --- | --- |\n| Pike | 10 ft. |"}
	var got []string
	for _, u := range splitUnits(0, d, nil) {
		got = append(got, u.text)
	}
	want := []string{
		"A pike reaches 10 ft. farther than a sword, e.g. past an ally.",
		"Use it with care in narrow halls.",
		"First item of a list.",
		"Second item, about 2.5 lb. of gear.",
		"Weapon: Pike; Reach: 10 ft.",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("units:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// FuzzSplitUnits cuts arbitrary passage text into units: no panic, no empty unit, each on one
// line (a bullet of the answer), the same units every time.
func FuzzSplitUnits(f *testing.F) {
	for _, d := range []rag.Document{emberLance, burning, lights, outcomes, venoms, rations} {
		f.Add(d.Text)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if !utf8.ValidString(text) {
			return
		}
		d := rag.Document{Section: "A > B", Text: text}
		us := splitUnits(0, d, map[string]bool{"b": true})
		again := splitUnits(0, d, map[string]bool{"b": true})
		if len(us) != len(again) {
			t.Fatalf("%d units, then %d", len(us), len(again))
		}
		for i, u := range us {
			if strings.TrimSpace(u.text) == "" {
				t.Fatalf("empty unit %d", i)
			}
			if u.text != again[i].text {
				t.Fatalf("unit %d differs: %q, then %q", i, u.text, again[i].text)
			}
			if strings.ContainsAny(u.text, "\n\r") {
				t.Fatalf("unit %d spans lines: %q", i, u.text)
			}
		}
	})
}

// The sentence that says what a section's subject is ("The Sunken Bells are …") is quoted when
// the question names the subject, even when a quoted sentence already covers its words through
// the heading.
func TestWriterQuotesTheSentenceThatNamesTheTitle(t *testing.T) {
	d := rag.Document{Book: "Atlas", Section: "Seas > Sunken Bells", Rank: 0,
		Text: "Sailors hear them before storms. The Sunken Bells are bronze bells of a drowned temple. Each bell rings once when a ship passes over the temple and warns of reefs."}
	got, _ := Writer{}.Write(context.Background(), "What are the sunken bells, and what does a ringing bell warn of?", []rag.Document{d, rations}, nil)
	if !strings.Contains(got, "The Sunken Bells are bronze bells of a drowned temple. [1]") || !strings.Contains(got, "warns of reefs. [1]") {
		t.Errorf("want the sentence naming the bells and the one about their warning:\n%s", got)
	}
}
