package evalset

import (
	"strings"
	"testing"

	"github.com/caprag/caprag/internal/testenv"
)

func TestMatchingRule(t *testing.T) {
	g := Gold{Book: "conditions", Section: "Paralyzed"}
	cases := []struct {
		book, section string
		want          bool
	}{
		{"conditions", "Appendix PH-A: Conditions > Paralyzed", true},
		{"Conditions", "appendix ph-a: conditions > paralyzed", true},
		{"spells", "Appendix PH-A: Conditions > Paralyzed", false},
		{"conditions", "Appendix PH-A: Conditions > Petrified", false},
	}
	for _, c := range cases {
		if got := g.Matches(c.book, c.section); got != c.want {
			t.Errorf("Matches(%q, %q) = %v, want %v", c.book, c.section, got, c.want)
		}
	}
	wisp := Gold{Book: "monsters-2", Section: "Will-o'-Wisp"}
	if !wisp.Matches("monsters-2", "Monsters (W) > Will-o’-Wisp") {
		t.Error("typographic apostrophe in the path does not match the straight one in the gold entry")
	}
}

func TestRecall(t *testing.T) {
	q := Question{Gold: []Gold{{"spells", "Hold Person"}, {"conditions", "Paralyzed"}}}
	m, full := q.Recall([]Passage{{"spells", "Spell Descriptions > Hold Person"}})
	if m != 1 || full {
		t.Errorf("one of two gold sections: matched=%d full=%v", m, full)
	}
	m, full = q.Recall([]Passage{{"spells", "Spell Descriptions > Hold Person"}, {"conditions", "Appendix PH-A: Conditions > Paralyzed"}})
	if m != 2 || !full {
		t.Errorf("both gold sections: matched=%d full=%v", m, full)
	}
}

func TestReadRejectsIncompleteQuestions(t *testing.T) {
	if _, err := Read(strings.NewReader(`{"id":"x","question":"q"}`)); err == nil {
		t.Error("a question without gold was accepted")
	}
	if _, err := Read(strings.NewReader("{not json")); err == nil {
		t.Error("malformed JSON was accepted")
	}
}

func TestLoadSharedDevSet(t *testing.T) {
	qs, err := Load(testenv.EvalSet(t))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, q := range qs {
		kinds[q.Kind]++
	}
	if len(qs) != 45 || kinds[SingleHop] != 15 || kinds[MultiHop] != 30 {
		t.Errorf("dev set: %d questions, kinds %v; want 45 = 15 single-hop + 30 multi-hop", len(qs), kinds)
	}
}

// With MatchSection a passage of any book matches by its section alone: the SRD read as one PDF
// ("System Reference Document 5.1") answers gold entries written for its Markdown chapters.
func TestMatchSection(t *testing.T) {
	g := Gold{Book: "conditions", Section: "Paralyzed"}
	pdf, path := "System Reference Document 5.1", "Appendix PH-A: Conditions > Paralyzed"
	if g.Matches(pdf, path) {
		t.Error("book-section rule matches another book")
	}
	if !g.MatchesBy(MatchSection, pdf, path) || g.MatchesBy(MatchSection, pdf, "Appendix PH-A: Conditions > Poisoned") {
		t.Error("section rule does not compare the section alone")
	}
	q := Question{Gold: []Gold{g, {Book: "spells", Section: "Hold Person"}}}
	if m, full := q.RecallBy(MatchSection, []Passage{{pdf, path}, {pdf, "Spells > Hold Person"}}); m != 2 || !full {
		t.Errorf("RecallBy(section) = %d, %v", m, full)
	}
}
