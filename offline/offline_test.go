package offline

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/caprag/caprag/rag"
)

// The offline writer quotes the passage that a quoted sentence points to, even when the linked
// passage shares no word with the question, and leaves unrelated passages out.
func TestWriterQuotesTheLinkedRule(t *testing.T) {
	docs := []rag.Document{
		{Book: "Spells", Section: "Spells > Drowsy Mist", Text: "A sweet mist puts creatures with 20 hit points or fewer to sleep: each falls unconscious (see Unconscious) for 1 minute."},
		{Book: "Conditions", Section: "Conditions > Unconscious", Text: "An unconscious creature is incapacitated and drops what it holds."},
		{Book: "Core", Section: "Core > Shopping", Text: "Merchants buy gear at half its listed price."},
	}
	got, err := Writer{}.Write(context.Background(), "What does Drowsy Mist do to the goblins?", docs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "falls unconscious (see Unconscious) for 1 minute. [1]") {
		t.Errorf("the spell is not quoted:\n%s", got)
	}
	if !strings.Contains(got, "An unconscious creature is incapacitated and drops what it holds. [2]") {
		t.Errorf("the condition the spell points to is not quoted:\n%s", got)
	}
	if strings.Contains(got, "[3]") {
		t.Errorf("an unrelated passage is quoted:\n%s", got)
	}
}

// Two passages that point to the same rule make one query for it, not two.
func TestAnalyzerAsksForARuleOnce(t *testing.T) {
	docs := []rag.Document{
		{Book: "Spells", Section: "Spells > Drowsy Mist", Text: "Each creature falls unconscious (see Unconscious)."},
		{Book: "Core", Section: "Core > Dropping to 0 Hit Points", Text: "At 0 hit points you fall unconscious (see Unconscious)."},
	}
	hints := []rag.Reference{
		{Kind: rag.RefSee, Text: "see Unconscious", Target: "Unconscious"},
		{Kind: rag.RefSee, Text: "see unconscious", Target: "unconscious"},
	}
	a, err := Analyzer{}.Analyze(context.Background(), rag.AnalyzeInput{
		Question:  "What happens to an unconscious creature hit by Drowsy Mist?",
		Documents: firstSearch(docs, hints, []int{0, 1}, nil),
		Asked:     []string{"What happens to an unconscious creature hit by Drowsy Mist?"},
		Max:       3,
	})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, q := range a.NewQueries {
		if strings.EqualFold(q, "Unconscious") {
			n++
		}
	}
	if n != 1 || a.Sufficient {
		t.Fatalf("new queries %q (sufficient %v), want Unconscious once", a.NewQueries, a.Sufficient)
	}
}

// firstSearch is what the analyzer knows of docs found by the first search in this order: each
// hint belongs to the document at the same index of from; named holds the names the question
// names documents by, by index.
func firstSearch(docs []rag.Document, hints []rag.Reference, from []int, named map[int][]string) []rag.DocFacts {
	out := make([]rag.DocFacts, len(docs))
	for i, d := range docs {
		out[i] = rag.DocFacts{Document: d, Rank: i, Hop: 1, Named: named[i]}
	}
	for i, h := range hints {
		out[from[i]].Hints = append(out[from[i]].Hints, h)
	}
	return out
}

// analyze runs the offline analyzer on the passages of one search (ranked in order) and their
// hints, and reports the new queries.
func analyze(t *testing.T, question string, docs []rag.Document, hints []rag.Reference, from []int) rag.Analysis {
	t.Helper()
	return analyzeNamed(t, question, docs, hints, from, nil)
}

// analyzeNamed analyses documents found in hop 1 in rank order, for a question that names
// documents: named holds, by document index, the names the question names it by.
func analyzeNamed(t *testing.T, question string, docs []rag.Document, hints []rag.Reference, from []int, named map[int][]string) rag.Analysis {
	t.Helper()
	a, err := Analyzer{}.Analyze(context.Background(), rag.AnalyzeInput{
		Question: question, Documents: firstSearch(docs, hints, from, named), Asked: []string{question}, Max: 4,
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func asks(a rag.Analysis, target string) bool {
	for _, q := range a.NewQueries {
		if strings.EqualFold(q, target) {
			return true
		}
	}
	return false
}

// An explicit reference of a passage found fourth or fifth is followed when it names what the
// question asks about, and not otherwise.
func TestAnalyzerFollowsALowerExplicitReferenceToTheQuestionsSubject(t *testing.T) {
	docs := []rag.Document{
		{Book: "Classes", Section: "Barbarian > Rage", Text: "In battle, you fight with primal ferocity."},
		{Book: "Classes", Section: "Barbarian > Mindless Rage", Text: "You can't be charmed while raging."},
		{Book: "Classes", Section: "Barbarian > The Barbarian", Text: "A fierce warrior of primitive background."},
		{Book: "Classes", Section: "Barbarian > Reckless Attack", Text: "You can throw aside all concern for defense."},
		{Book: "Classes", Section: "Berserker > Frenzy", Text: "When your rage ends, you suffer one level of exhaustion (as described in appendix A). Heavy armor (see Heavy Armor) hinders you."},
	}
	hints := []rag.Reference{
		{Kind: rag.RefSee, Text: "exhaustion (as described in appendix A)", Target: "exhaustion"},
		{Kind: rag.RefSee, Text: "(see Heavy Armor)", Target: "Heavy Armor"},
	}
	a := analyze(t, "My berserker used his frenzy twice: what exhaustion penalties does he have now?", docs, hints, []int{4, 4})
	if !asks(a, "exhaustion") {
		t.Errorf("the reference to the question's subject is not followed: %q", a.NewQueries)
	}
	if asks(a, "Heavy Armor") {
		t.Errorf("an unrelated reference of the fifth passage is followed: %q", a.NewQueries)
	}
}

// When the best passage answers the question, a rule of another book that it names is still
// read when the question speaks of it with a word the other passages do not share; a rule named
// by a word every passage holds is not.
func TestAnalyzerReadsTheOtherBooksRuleTheQuestionNames(t *testing.T) {
	q := "A warlock with Pact of the Chain takes an imp as her familiar. Can the imp attack in combat with its sting?"
	docs := []rag.Document{
		{Book: "Classes", Section: "Warlock > Pact of the Chain", Text: "Pact of the Chain: a warlock learns the find familiar spell; the familiar can take the form of an imp. In combat, when you attack, the familiar can attack with its sting. You can cast a spell through it."},
		{Book: "Monsters", Section: "Monsters > Imp", Text: "Sting. Melee weapon attack: the imp deals piercing damage and casts no spell."},
		{Book: "Classes", Section: "Warlock > Voice of the Chain Master", Text: "You can perceive through your familiar's senses; a spell you cast reaches it."},
		{Book: "Classes", Section: "Warlock > Thirsting Blade", Text: "You can attack twice with your pact weapon, a spell of sorts."},
	}
	hints := []rag.Reference{
		{Kind: rag.RefMention, Text: "Find Familiar", Target: "Find Familiar", Book: "Spells"},
		{Kind: rag.RefMention, Text: "Cast a Spell", Target: "Cast a Spell", Book: "Rules"},
	}
	a := analyze(t, q, docs, hints, []int{0, 0})
	if !asks(a, "Find Familiar") {
		t.Errorf("the spell the question's familiar comes from is not read: %q", a.NewQueries)
	}
	if asks(a, "Cast a Spell") {
		t.Errorf("a rule named by a word every passage holds is followed: %q", a.NewQueries)
	}
}

// In one book that holds a whole rules corpus (the SRD as one PDF), a rule of another part of the
// book that the best passage names is read as a rule of another book would be; a rule of the
// passage's own part, or of a part not known, is not.
func TestAnalyzerReadsAnotherPartsRuleAsAnotherBooks(t *testing.T) {
	const book = "Complete Rules"
	q := "A warlock with Pact of the Chain takes an imp as her familiar. Can the imp attack in combat with its sting?"
	docs := []rag.Document{
		{Book: book, Section: "Classes > Warlock > Pact of the Chain", Text: "Pact of the Chain: a warlock learns the find familiar spell; the familiar can take the form of an imp. In combat, when you attack, the familiar can attack with its sting. Chain pact familiars follow the chain master."},
		{Book: book, Section: "Monsters > Imp", Text: "Sting. Melee weapon attack: the imp deals piercing damage."},
		{Book: book, Section: "Classes > Warlock > Thirsting Blade", Text: "You can attack twice with your pact weapon."},
	}
	hints := []rag.Reference{
		{Kind: rag.RefMention, Text: "Find Familiar", Target: "Find Familiar", Book: book, Part: "Spells"},
		{Kind: rag.RefMention, Text: "Chain Master", Target: "Chain Master", Book: book, Part: "Classes"},
	}
	a := analyze(t, q, docs, hints, []int{0, 0})
	if !asks(a, "Find Familiar") {
		t.Errorf("the spell of another part is not read: %q", a.NewQueries)
	}
	if asks(a, "Chain Master") {
		t.Errorf("a rule of the passage's own part is followed as if it were elsewhere: %q", a.NewQueries)
	}
	hints[0].Part = ""
	if a := analyze(t, q, docs, hints, []int{0, 0}); asks(a, "Find Familiar") {
		t.Errorf("a rule of the same book in an unknown part is followed as another book's: %q", a.NewQueries)
	}
}

// A rule of another book named, by the short form of its title ("Material (M)" as "material"),
// in a sentence that holds three of the question's words is followed even from the fourth
// passage; a sentence that holds two is not enough there.
func TestAnalyzerFollowsARuleNamedInASentenceAboutTheQuestion(t *testing.T) {
	q := "Can a cleric cast revivify using only her holy symbol or a component pouch?"
	docs := []rag.Document{
		{Book: "Spells", Section: "Spells > Revivify", Text: "You touch a creature that has died within the last minute."},
		{Book: "Classes", Section: "Cleric > Spellcasting Focus", Text: "You can use a holy symbol as a spellcasting focus."},
		{Book: "Backgrounds", Section: "Backgrounds > Acolyte", Text: "You carry a holy symbol and prayer beads."},
		{Book: "Equipment", Section: "Equipment > Adventuring Gear", Text: "A component pouch holds the material components you need to cast your spells. A tinderbox holds flint (see Improvised Weapons)."},
	}
	hints := []rag.Reference{
		{Kind: rag.RefMention, Text: "Material (M)", Target: "Material (M)", Book: "Spellcasting"},
		{Kind: rag.RefMention, Text: "Improvised Weapons", Target: "Improvised Weapons", Book: "Rules"},
	}
	a := analyze(t, q, docs, hints, []int{3, 3})
	if !asks(a, "Material (M)") {
		t.Errorf("the material component rule is not followed: %q", a.NewQueries)
	}
	if asks(a, "Improvised Weapons") {
		t.Errorf("a rule named in a sentence off the question is followed from the fourth passage: %q", a.NewQueries)
	}
}

// poisons is a section that defines several rules under run-in headings.
var poisons = rag.Document{Book: "Gamemastering", Section: "Poisons > Sample Poisons", Text: "Each type of poison has its own effects.\n\n" +
	"Essence of Ether (Inhaled). A creature must succeed on a DC 15 Constitution saving throw or become poisoned for 8 hours. The poisoned creature is unconscious.\n\n" +
	"Malice (Inhaled). A creature must succeed on a DC 15 Constitution saving throw or become poisoned for 1 hour. The poisoned creature is blinded.\n\n" +
	"Torpor (Ingested). A creature must succeed on a DC 15 Constitution saving throw or become poisoned for 4d6 hours. The poisoned creature is incapacitated."}

// The rules that a rule the question names (fetched because the question names it) speaks of
// are followed, even from below the top passages and in sentences that share no word with the
// question ("The poisoned creature is blinded."); the rules its neighbours speak of are not.
func TestAnalyzerFollowsWhatTheNamedRuleSaysOf(t *testing.T) {
	q := "An assassin blows a puff of malice into my face. What penalties do I suffer?"
	docs := []rag.Document{
		{Book: "Creatures", Section: "NPCs > Assassin", Text: "Assassinate. The assassin has advantage on attack rolls."},
		{Book: "Rules", Section: "Saving Throws", Text: "A saving throw represents an attempt to resist a poison."},
		{Book: "Spells", Section: "Spells > Raise Dead", Text: "The target takes a penalty to attack rolls."},
		poisons,
	}
	hints := []rag.Reference{
		{Kind: rag.RefMention, Text: "Unconscious", Target: "Unconscious", Book: "Conditions"},
		{Kind: rag.RefMention, Text: "Blinded", Target: "Blinded", Book: "Conditions"},
		{Kind: rag.RefMention, Text: "Poisoned", Target: "Poisoned", Book: "Conditions"},
		{Kind: rag.RefMention, Text: "Incapacitated", Target: "Incapacitated", Book: "Conditions"},
	}
	from := []int{3, 3, 3, 3}
	if a := analyze(t, q, docs, hints, from); asks(a, "Blinded") || asks(a, "Poisoned") {
		t.Fatalf("without the question naming Malice, its conditions are followed from the fourth passage: %q", a.NewQueries)
	}
	a := analyzeNamed(t, q, docs, hints, from, map[int][]string{3: {"Malice"}})
	if !asks(a, "Blinded") || !asks(a, "Poisoned") {
		t.Errorf("the conditions Malice imposes are not followed: %q", a.NewQueries)
	}
	if asks(a, "Unconscious") || asks(a, "Incapacitated") {
		t.Errorf("the conditions of the other poisons are followed: %q", a.NewQueries)
	}
}

// A state named by a participle ("Poisoned") is not the plural noun: a section "Poisons" in the
// context does not resolve it, and a sentence about "a dose of poison" does not name it.
func TestParticipleTitlesAreMatchedAsWritten(t *testing.T) {
	docs := []rag.Document{{Book: "Gamemastering", Section: "Poisons > Sample Poisons", Text: poisons.Text,
		Refs: []rag.Reference{{Kind: rag.RefMention, Text: "Poisoned", Target: "Poisoned", Book: "Conditions"}, {Kind: rag.RefMention, Text: "Poison", Target: "Poison", Book: "Spells"}}}}
	var targets []string
	for _, h := range rag.Unresolved(docs) {
		targets = append(targets, h.Ref.Target)
	}
	if !slices.Contains(targets, "Poisoned") || slices.Contains(targets, "Poison") {
		t.Errorf("unresolved %q; want Poisoned (the section Poisons is no condition) and not Poison", targets)
	}
	q := termSet("How heavy a chest could she drag out?")
	ss := scoreSentences(q, nil, "Opening the chest causes the needle to spring out, delivering a dose of poison. The creature is poisoned.")
	if n, _ := sentenceOverlap(ss, "Poisoned"); n != 0 {
		t.Errorf("a sentence about poison counts %d question words for the Poisoned condition, want 0", n)
	}
	if n, _ := sentenceOverlap(ss, "Poison"); n != 2 {
		t.Errorf("a sentence naming poison counts %d question words for Poison, want 2", n)
	}
}

// A possessive is its noun: "the tarrasque's" holds the word of the section "Tarrasque".
func TestPossessiveIsItsNoun(t *testing.T) {
	if got := termSet("What does the tarrasque's Reflective Carapace do?"); !got["tarrasqu"] && !got["tarrasque"] {
		t.Errorf("terms %v lack the tarrasque", got)
	}
}

// A question that names a rule defined under a run-in heading gets that rule quoted whole, with
// its name, rather than its sentences scattered or left out.
func TestWriterQuotesTheNamedRuleWhole(t *testing.T) {
	docs := []rag.Document{poisons, {Book: "Conditions", Section: "Conditions > Blinded", Text: "A blinded creature can't see."}}
	got, err := Writer{}.Write(context.Background(), "What does malice do to me?", docs, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "Malice (Inhaled). A creature must succeed on a DC 15 Constitution saving throw or become poisoned for 1 hour. The poisoned creature is blinded. [1]"
	if !strings.Contains(got, want) {
		t.Errorf("the Malice rule is not quoted whole:\n%s", got)
	}
	if strings.Contains(got, "Torpor") || strings.Contains(got, "Essence of Ether") {
		t.Errorf("other poisons are quoted:\n%s", got)
	}
	if !strings.Contains(got, "A blinded creature can't see. [2]") {
		t.Errorf("the condition the quoted rule names is not quoted:\n%s", got)
	}
}
