package offline

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/caprag/caprag/lexicon"
	"github.com/caprag/caprag/passage"
	"github.com/caprag/caprag/rag"
)

// shelf is a small library written for these tests (no dev question's text): books of
// passages, linked by package lexicon, with documents as the store would return them.
type shelf struct {
	lx   *lexicon.Lexicon
	docs map[string]rag.Document // by "book|last heading"
}

func (s shelf) Lexicon() *lexicon.Lexicon { return s.lx }

// newShelf builds the shelf from "book", []string{"Section > Path: text", …} pairs, with
// filler passages so that term specificity means what it does in a real library.
func newShelf(books ...any) shelf {
	var parts []lexicon.Part
	s := shelf{docs: map[string]rag.Document{}}
	add := func(book string, secs []string) {
		var docs []lexicon.Doc
		for i, x := range secs {
			path, text, _ := strings.Cut(x, ": ")
			id := fmt.Sprintf("%s/%d", book, i)
			docs = append(docs, lexicon.Doc{ID: id, Section: path, Text: text})
			s.docs[book+"|"+passage.LastHeading(path)] = rag.Document{ID: id, Book: book, Section: path, Text: text}
		}
		parts = append(parts, lexicon.Read(book, docs))
	}
	for i := 0; i+1 < len(books); i += 2 {
		add(books[i].(string), books[i+1].([]string))
	}
	var filler []string
	for i := range 40 {
		filler = append(filler, fmt.Sprintf("Lore > Tale %d: A tale of old roads, rivers, kings and weather number %d.", i, i))
	}
	add("lore", filler)
	s.lx = lexicon.Link(parts)
	for k, d := range s.docs {
		for _, r := range s.lx.Refs(s.lx.ByID[d.ID]) {
			d.Refs = append(d.Refs, r)
		}
		s.docs[k] = d
	}
	return s
}

// doc returns the document of a section ("book|Heading").
func (s shelf) doc(key string) rag.Document {
	d, ok := s.docs[key]
	if !ok {
		panic("no document " + key)
	}
	return d
}

// found is the analyzer's input after hops that found the documents in order: each hop's
// documents ranked as given.
func (s shelf) found(question string, hops ...[]string) rag.AnalyzeInput {
	in := rag.AnalyzeInput{Question: question, Asked: []string{question}, Max: 4}
	var docs []rag.Document
	for h, keys := range hops {
		for r, k := range keys {
			d := s.doc(k)
			docs = append(docs, d)
			in.Documents = append(in.Documents, rag.DocFacts{Document: d, Rank: r, Hop: h + 1})
		}
	}
	for _, h := range rag.Unresolved(docs) {
		in.Documents[h.Rank].Hints = append(in.Documents[h.Rank].Hints, h.Ref)
	}
	return in
}

func (s shelf) analyze(t *testing.T, in rag.AnalyzeInput) rag.Analysis {
	t.Helper()
	a, err := Analyzer{Books: s}.Analyze(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// rules is a small game: spells, monsters, conditions and combat rules that name each other.
func rules() shelf {
	return newShelf(
		"spells", []string{
			"Spells > Howling Mist: A shrieking mist fills a cube. Each creature inside must make a Constitution saving throw or become deafened until the mist clears. For example, a bard caught inside cannot use Vicious Mockery or Healing Word.",
			"Spells > Vicious Mockery: Insults wound the target.",
			"Spells > Healing Word: A creature regains hit points.",
			"Spells > Stone Skin: Your skin turns to stone until the spell ends. You take your turn as usual; the spell lasts through a long rest.",
		},
		"conditions", []string{
			"Conditions > Deafened: A deafened creature can't hear and fails any check that requires hearing.",
			"Conditions > Paralyzed: A paralyzed creature is incapacitated (see the condition) and can't move or speak.",
			"Conditions > Incapacitated: An incapacitated creature can't take actions or reactions.",
		},
		"monsters", []string{
			"Monsters > Marsh Wyrm: A long swamp serpent.\n\nVenom Fang. Melee attack: the target takes poison damage and must make a saving throw. Until this poison ends, the target is paralyzed.\n\nTail. Melee attack: bludgeoning damage.",
		},
		"combat", []string{
			"Combat > Your Turn: On your turn you can move and take one action.",
			"Combat > Long Rest: A long rest is eight hours of sleep.",
			"Combat > Breaking Things: A creature can smash a door or a chest with a weapon; the Improvised Weapons rules say what it deals.",
			"Combat > Improvised Weapons: A chair, a bottle or a lamp deals 1d4 damage when it is used as a weapon; a thrown lamp shatters.",
		},
	)
}

// A question its best passage answers stops after the first hop, although that passage names
// general rules (your turn, a long rest); the names of an example (spells a bard cannot cast)
// are not chased.
func TestAnalyzerStopsWhenTheBestPassageAnswers(t *testing.T) {
	s := rules()
	q := "How long does stone skin last, and does it end when I take my turn or rest?"
	if a := s.analyze(t, s.found(q, []string{"spells|Stone Skin", "combat|Long Rest"})); !a.Sufficient {
		t.Errorf("%q: follows %q, want sufficient", q, a.NewQueries)
	}
	q = "Which spells can a bard caught in a howling mist not cast?"
	if a := s.analyze(t, s.found(q, []string{"spells|Howling Mist", "spells|Healing Word"})); asks(a, "Vicious Mockery") {
		t.Errorf("%q: follows %q, the names of an example", q, a.NewQueries)
	}
}

// A state the rule puts a creature in ("…or become deafened") is followed where the passage
// speaks of the question, even when the question holds none of the state's words.
func TestAnalyzerFollowsTheStateARuleCauses(t *testing.T) {
	s := rules()
	a := s.analyze(t, s.found("Our bard failed the saving throw inside the howling mist. What happens to her now?", []string{"spells|Howling Mist", "spells|Healing Word"}))
	if !asks(a, "Deafened") || asks(a, "Vicious Mockery") {
		t.Errorf("follows %q, want Deafened and not the spells of the example", a.NewQueries)
	}
}

// The analyzer reads where a link stands by its paragraph, not its sentence alone: "Until this
// poison ends, the target is paralyzed." shares no word with the question, but its paragraph is
// the Venom Fang the question asks about; the Tail's paragraph is not read as being about it.
func TestAnalyzerReadsTheParagraphOfTheLink(t *testing.T) {
	s := rules()
	a := s.analyze(t, s.found("The marsh wyrm's venom fang got me. What does its venom fang do to me?", []string{"monsters|Marsh Wyrm"}))
	if !asks(a, "Paralyzed") {
		t.Errorf("follows %q, want Paralyzed", a.NewQueries)
	}
}

// After a followed link, the next hop follows the explicit references of what it found
// ("is incapacitated (see the condition)"), and stops when none is left.
func TestAnalyzerFollowsExplicitReferencesOfTheNextHop(t *testing.T) {
	s := rules()
	q := "The marsh wyrm's venom fang got me. What does its venom fang do to me?"
	a := s.analyze(t, s.found(q, []string{"monsters|Marsh Wyrm"}, []string{"conditions|Paralyzed"}))
	if !asks(a, "Incapacitated") {
		t.Errorf("hop 2 follows %q, want Incapacitated", a.NewQueries)
	}
	a = s.analyze(t, s.found(q, []string{"monsters|Marsh Wyrm"}, []string{"conditions|Paralyzed"}, []string{"conditions|Incapacitated"}))
	if !a.Sufficient {
		t.Errorf("hop 3 follows %q, want sufficient", a.NewQueries)
	}
}

// A rule of the same book that holds what the question asks and the passages found do not (a
// lamp used as a weapon) is followed from a plain mention; a rule of another book is not
// preferred for being elsewhere.
func TestAnalyzerFollowsASameBookRuleThatAddsToTheAnswer(t *testing.T) {
	s := rules()
	a := s.analyze(t, s.found("Can I smash the chest open with a lamp, what damage does a thrown lamp deal, and does it shatter?", []string{"combat|Breaking Things", "combat|Your Turn"}))
	if !asks(a, "Improvised Weapons") {
		t.Errorf("follows %q, want Improvised Weapons", a.NewQueries)
	}
}

// Two passages that link to the same rule ask for it once; a rule asked for before is not asked
// again.
func TestAnalyzerAsksForARuleOnce(t *testing.T) {
	s := rules()
	in := s.found("A marsh wyrm bit me and a friend. What does its venom fang do to us?", []string{"monsters|Marsh Wyrm", "conditions|Incapacitated"})
	a := s.analyze(t, in)
	n := 0
	for _, q := range a.NewQueries {
		if q == "Paralyzed" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("asks %q, want Paralyzed once", a.NewQueries)
	}
	in.Asked = append(in.Asked, "Paralyzed")
	if a := s.analyze(t, in); asks(a, "Paralyzed") {
		t.Errorf("asks %q again", a.NewQueries)
	}
}

// Without the books' lexicon the analyzer follows the explicit references of the passage found
// first, and nothing else.
func TestAnalyzerWithoutALexiconFollowsExplicitReferences(t *testing.T) {
	in := rag.AnalyzeInput{Question: "What happens when I am paralyzed?", Max: 3, Documents: []rag.DocFacts{
		{Document: rag.Document{Book: "Conditions", Section: "Paralyzed"}, Rank: 0, Hop: 1, Hints: []rag.Reference{
			{Kind: rag.RefSee, Target: "Incapacitated"}, {Kind: rag.RefMention, Target: "Speak"}, {Kind: rag.RefSee, Target: "below"}}},
		{Document: rag.Document{Book: "Spells", Section: "Hold Person"}, Rank: 1, Hop: 1, Hints: []rag.Reference{{Kind: rag.RefSee, Target: "Concentration"}}},
	}}
	a, err := Analyzer{}.Analyze(context.Background(), in)
	if err != nil || !slices.Equal(a.NewQueries, []string{"Incapacitated"}) {
		t.Errorf("follows %q (%v), want Incapacitated", a.NewQueries, err)
	}
}

func asks(a rag.Analysis, target string) bool {
	return slices.ContainsFunc(a.NewQueries, func(q string) bool { return strings.EqualFold(q, target) })
}

// The expander searches each part of a question on its own, the books' names for what a player
// describes, and the names the question quotes or capitalises.
func TestExpanderClausesBridgeAndNames(t *testing.T) {
	s := rules()
	qs, err := Expander{Books: s}.Expand(context.Background(), "I threw a lamp at the Marsh Wyrm, and what damage does it deal? Can it still move?", 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) < 4 || !strings.Contains(qs[0], "Improvised Weapons") {
		t.Fatalf("queries %q, want the bridge to Improvised Weapons first", qs)
	}
	// a clause of one content word joins the one before it
	for _, want := range []string{"threw lamp Marsh Wyrm", "damage deal move", "Marsh Wyrm"} {
		if !slices.Contains(qs, want) {
			t.Errorf("queries %q lack %q", qs, want)
		}
	}
	if got := clauses("How long does the fire last, and what does the spell cost? Can I cast it twice, or not"); !slices.Equal(got, []string{"How long does the fire last", "what does the spell cost", "Can I cast it twice not"}) {
		t.Errorf("clauses = %q", got)
	}
}

// The explicit references of the passage that holds most of the question are followed wherever
// they stand in it: the rule asked about points at what it depends on in words the question
// does not use. Another passage's reference, in a paragraph about something else, is not.
func TestAnalyzerFollowsTheReferencesOfTheRuleAskedAbout(t *testing.T) {
	s := newShelf("tactics", []string{
		"Tactics > Shoving: When you want to shove a bandit or any other foe toward a ledge, make an Athletics contest against it.\n\nOn a win the creature is moved five feet. Movement of that kind follows its own rules (see Forced Movement).",
		"Tactics > Forced Movement: A creature moved by another provokes no opportunity attack and may fall prone.",
		"Tactics > Ledges: A creature on a ledge can be shoved off it.\n\nStorms and wind are described elsewhere (see Weather).",
		"Tactics > Weather: Rain, wind and snow.",
	})
	q := "I shove the bandit toward the ledge. Does he get to hit me back on his way?"
	a := s.analyze(t, s.found(q, []string{"tactics|Shoving", "tactics|Ledges"}))
	if !asks(a, "Forced Movement") || asks(a, "Weather") {
		t.Errorf("follows %q, want Forced Movement and not Weather", a.NewQueries)
	}
}

// A question that names one part of a rule by its run-in heading asks about that part: the
// states the rule's other parts cause, in the same passage or in another passage of the rule,
// are not chased.
func TestAnalyzerReadsOnlyThePartTheQuestionNames(t *testing.T) {
	s := newShelf("bestiary", []string{
		"Bestiary > Cave Bear: A huge bear of the deep caves.\n\nStone Hide. The bear's hide turns aside the first weapon blow each round; that blow deals no damage.\n\nMaul. Melee attack: the target takes slashing damage and must make a saving throw or become stunned.",
		"Bestiary > Cave Bear > Actions: Roar. Each creature that hears the bear must make a saving throw or become frightened of it.",
	}, "states", []string{
		"States > Stunned: A stunned creature can't move or act.",
		"States > Frightened: A frightened creature can't move closer to the source of its fear.",
	})
	q := "What does the cave bear's Stone Hide do when I hit it?"
	if a := s.analyze(t, s.found(q, []string{"bestiary|Cave Bear", "bestiary|Actions"})); !a.Sufficient {
		t.Errorf("%q: follows %q, want sufficient", q, a.NewQueries)
	}
	in := s.found(q, []string{"bestiary|Actions", "bestiary|Cave Bear"})
	if a := s.analyze(t, in); !a.Sufficient {
		t.Errorf("%q: follows %q, want sufficient", q, a.NewQueries)
	}
	// The part named decides: asked about the Maul, the state it causes is read.
	q = "What does the cave bear's Maul do to me?"
	if a := s.analyze(t, s.found(q, []string{"bestiary|Cave Bear", "bestiary|Actions"})); !asks(a, "Stunned") || asks(a, "Frightened") {
		t.Errorf("%q: follows %q, want Stunned and not Frightened", q, a.NewQueries)
	}
}
