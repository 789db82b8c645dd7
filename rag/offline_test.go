package rag

import (
	"context"
	"strings"
	"testing"
)

// The offline writer quotes the passage that a quoted sentence points to, even when the linked
// passage shares no word with the question, and leaves unrelated passages out.
func TestOfflineWriterQuotesTheLinkedRule(t *testing.T) {
	docs := []Document{
		{Book: "Spells", Section: "Spells > Drowsy Mist", Text: "A sweet mist puts creatures with 20 hit points or fewer to sleep: each falls unconscious (see Unconscious) for 1 minute."},
		{Book: "Conditions", Section: "Conditions > Unconscious", Text: "An unconscious creature is incapacitated and drops what it holds."},
		{Book: "Core", Section: "Core > Shopping", Text: "Merchants buy gear at half its listed price."},
	}
	got, err := OfflineWriter{}.Write(context.Background(), "What does Drowsy Mist do to the goblins?", docs, nil)
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
func TestOfflineAnalyzerAsksForARuleOnce(t *testing.T) {
	docs := []Document{
		{Book: "Spells", Section: "Spells > Drowsy Mist", Text: "Each creature falls unconscious (see Unconscious)."},
		{Book: "Core", Section: "Core > Dropping to 0 Hit Points", Text: "At 0 hit points you fall unconscious (see Unconscious)."},
	}
	a, err := OfflineAnalyzer{}.Analyze(context.Background(), AnalyzeInput{
		Question:  "What happens to an unconscious creature hit by Drowsy Mist?",
		Documents: docs,
		Hints: []Reference{
			{Kind: RefSee, Text: "see Unconscious", Target: "Unconscious"},
			{Kind: RefSee, Text: "see unconscious", Target: "unconscious"},
		},
		HintFrom: []int{0, 1},
		DocRank:  []int{0, 1},
		DocHop:   []int{1, 1},
		Asked:    []string{"What happens to an unconscious creature hit by Drowsy Mist?"},
		Max:      3,
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
