package offline

import (
	"context"
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

// poisons is a section that defines several rules under run-in headings.
var poisons = rag.Document{Book: "Gamemastering", Section: "Poisons > Sample Poisons", Text: "Each type of poison has its own effects.\n\n" +
	"Essence of Ether (Inhaled). A creature must succeed on a DC 15 Constitution saving throw or become poisoned for 8 hours. The poisoned creature is unconscious.\n\n" +
	"Malice (Inhaled). A creature must succeed on a DC 15 Constitution saving throw or become poisoned for 1 hour. The poisoned creature is blinded.\n\n" +
	"Torpor (Ingested). A creature must succeed on a DC 15 Constitution saving throw or become poisoned for 4d6 hours. The poisoned creature is incapacitated."}

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
