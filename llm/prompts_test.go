package llm

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caprag/caprag/rag"
)

var update = flag.Bool("update", false, "rewrite the golden prompts in testdata/")

// golden compares got with testdata/name, rewriting the file under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./llm -run Prompt -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s changed; if intended, run go test ./llm -run Prompt -update and review the diff.\ngot:\n%s", path, got)
	}
}

// render prints a request as its messages, role by role.
func render(msgs []message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString("--- " + string(m.role) + " ---\n" + m.text + "\n")
	}
	return b.String()
}

var (
	promptDocs = []rag.Document{
		{Book: "Basic Set", Section: "Advantages > Trained by a Master", Page: 93, Text: "You have trained under a master... You may also make Rapid Strikes at only -3 (see Rapid Strike, p. B370)."},
		{Book: "Martial Arts", Section: "Cinematic Combat", Text: "Cinematic combat rules apply when..."},
	}
	promptHints = []rag.Reference{
		{Kind: rag.RefSee, Text: "see Rapid Strike, p. B370", Target: "Rapid Strike", Book: "Basic Set"},
		{Kind: rag.RefPage, Text: "p. B370", Target: "B370"},
	}
	promptHistory = []rag.Turn{{Question: "What does Trained by a Master do?", Answer: "It halves the penalties for Rapid Strike [1]."}}
)

func TestPromptExpand(t *testing.T) {
	golden(t, "expand.golden", render(expandPrompt("How does Trained by a Master interact with the combat rules?", 4)))
}

func TestPromptAnalyze(t *testing.T) {
	golden(t, "analyze.golden", render(analyzePrompt(rag.AnalyzeInput{
		Question:  "How does Trained by a Master interact with the combat rules?",
		Documents: facts(promptDocs, promptHints),
		Asked:     []string{"Trained by a Master combat"},
	}, 3)))
}

func TestPromptWrite(t *testing.T) {
	golden(t, "write.golden", render(writePrompt("And with two weapons?", promptDocs, promptHistory)))
	golden(t, "write-empty.golden", render(writePrompt("What does a vorpal sword cost?", nil, nil)))
}

func TestPromptRewrite(t *testing.T) {
	golden(t, "rewrite.golden", render(rewritePrompt("And with two weapons?", promptHistory)))
}

func TestPromptBounds(t *testing.T) {
	long := strings.Repeat("é", maxPassageRunes+10)
	var hints []rag.Reference
	for range maxHints + 5 {
		hints = append(hints, rag.Reference{Kind: rag.RefSee, Text: "see X", Target: "X"})
	}
	var history []rag.Turn
	for range maxTurns + 3 {
		history = append(history, rag.Turn{Question: "q", Answer: long})
	}
	p := analyzePrompt(rag.AnalyzeInput{Question: "q", Documents: facts([]rag.Document{{Book: "B", Text: long}}, hints)}, 3)[1].text
	if strings.Contains(p, long) || !strings.Contains(p, strings.Repeat("é", maxPassageRunes)+" …") {
		t.Error("a long passage is not cut at maxPassageRunes")
	}
	if strings.Count(p, `"see X"`) != maxHints || !strings.Contains(p, "and 5 more") {
		t.Errorf("hints are not bounded to %d", maxHints)
	}
	var many []rag.Document
	for range 40 {
		many = append(many, rag.Document{Book: "B", Text: long})
	}
	if n := len([]rune(writePrompt("q", many, nil)[1].text)); n > maxPassagesRunes+40*100 {
		t.Errorf("40 long passages make a %d-rune prompt, want about %d at most", n, maxPassagesRunes)
	}
	w := writePrompt("q", nil, history)[1].text
	if strings.Count(w, "Q: q") != maxTurns {
		t.Errorf("history is not bounded to the last %d turns", maxTurns)
	}
}

// facts is the analyzer's view of docs found in the first search in this order, with hints as
// the unresolved references of the first of them.
func facts(docs []rag.Document, hints []rag.Reference) []rag.DocFacts {
	out := make([]rag.DocFacts, len(docs))
	for i, d := range docs {
		out[i] = rag.DocFacts{Document: d, Rank: i, Hop: 1}
	}
	if len(out) > 0 {
		out[0].Hints = hints
	}
	return out
}
