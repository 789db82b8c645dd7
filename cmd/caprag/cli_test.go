package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/caprag/caprag/evalset"
	"github.com/caprag/caprag/rag"
)

// caprag runs one command line in-process with a fresh environment and returns its exit status
// and output.
func caprag(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func offlineEnv(t *testing.T) string {
	dir := t.TempDir()
	t.Setenv("DATA_DIR", dir)
	for _, k := range []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "LLM_PROVIDER", "RETRIEVAL_STRATEGY", "VECTOR_STORE", "EMBEDDINGS_PROVIDER"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	return dir
}

func TestAskAnswersFromTheSampleBooks(t *testing.T) {
	offlineEnv(t)
	code, out, errOut := caprag(t, "ask", "Can I still cast a spell while I am grappled?")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "Sources:") || !strings.Contains(out, "[1] ") || !strings.Contains(out, "Grappled") {
		t.Fatalf("answer without sources:\n%s", out)
	}
	if !strings.Contains(errOut, "hop 1:") || !strings.Contains(errOut, "sample books") {
		t.Fatalf("no hop progress or sample-books notice on stderr:\n%s", errOut)
	}
}

func TestAskJSONShape(t *testing.T) {
	offlineEnv(t)
	code, out, errOut := caprag(t, "ask", "--json", "What happens when I fall unconscious?", "--strategy", "multi-question")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if strings.Join(keys, ",") != "answer,cached,context,elapsed_ms,hops,llm_calls,question,sources,strategy" {
		t.Fatalf("keys %v", keys)
	}
	if m["strategy"] != "multi-question" {
		t.Fatalf("strategy %v", m["strategy"])
	}
	src := m["sources"].([]any)[0].(map[string]any)
	for _, k := range []string{"n", "book", "section", "text"} {
		if _, ok := src[k]; !ok {
			t.Fatalf("source lacks %q: %v", k, src)
		}
	}
	hop := m["hops"].([]any)[0].(map[string]any)
	for _, k := range []string{"n", "queries", "found", "new", "sufficient"} {
		if _, ok := hop[k]; !ok {
			t.Fatalf("hop lacks %q: %v", k, hop)
		}
	}
}

func TestInvalidStrategyExits2(t *testing.T) {
	offlineEnv(t)
	t.Setenv("RETRIEVAL_STRATEGY", "single-shot")
	code, _, errOut := caprag(t, "ask", "Can I grapple?")
	if code != 2 || !strings.Contains(errOut, "RETRIEVAL_STRATEGY") || !strings.Contains(errOut, "multi-hop, multi-question") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	t.Setenv("RETRIEVAL_STRATEGY", "")
	code, _, errOut = caprag(t, "ask", "Can I grapple?", "--strategy", "bogus")
	if code != 2 || !strings.Contains(errOut, "multi-hop") {
		t.Fatalf("--strategy bogus: exit %d, stderr %q", code, errOut)
	}
	code, _, _ = caprag(t, "ask")
	if code != 2 {
		t.Fatalf("ask without a question: exit %d", code)
	}
}

func TestIngestBooksSearchRemove(t *testing.T) {
	offlineEnv(t)
	books := t.TempDir()
	os.WriteFile(filepath.Join(books, "House Rules.md"), []byte("# House Rules\n\n## Critical Fumbles\n\nA natural 1 on an attack drops the weapon.\n\n## Flanking\n\nTwo allies on opposite sides get advantage.\n"), 0o644)
	os.WriteFile(filepath.Join(books, "broken.pdf"), []byte("%PDF-1.4 this is not really a pdf"), 0o644)
	code, out, errOut := caprag(t, "ingest", books)
	if code != 1 || !strings.Contains(errOut, "broken.pdf") || !strings.Contains(out, "ingested 1 books") {
		t.Fatalf("ingest with a corrupt file: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	_, list1, _ := caprag(t, "books")
	if !strings.Contains(list1, "House Rules") {
		t.Fatalf("books: %s", list1)
	}
	// Re-ingesting leaves the count unchanged.
	if code, _, errOut := caprag(t, "ingest", filepath.Join(books, "House Rules.md")); code != 0 {
		t.Fatalf("re-ingest: %d %s", code, errOut)
	}
	_, list2, _ := caprag(t, "books")
	if list1 != list2 {
		t.Fatalf("re-ingest changed the books:\n%s\n%s", list1, list2)
	}
	code, out, _ = caprag(t, "search", "fumble", "--json", "-k", "1")
	var res struct {
		Query   string `json:"query"`
		Results []struct {
			Book    string  `json:"book"`
			Page    int     `json:"page"`
			Section string  `json:"section"`
			Score   float64 `json:"score"`
			Text    string  `json:"text"`
		} `json:"results"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || len(res.Results) != 1 || res.Results[0].Section != "House Rules > Critical Fumbles" || res.Query != "fumble" {
		t.Fatalf("search: exit %d, %s", code, out)
	}
	if code, _, _ := caprag(t, "books", "rm", "House Rules"); code != 0 {
		t.Fatal("books rm failed")
	}
	_, list3, _ := caprag(t, "books")
	if strings.Contains(list3, "House Rules") {
		t.Fatalf("book still listed after rm: %s", list3)
	}
	if code, _, errOut := caprag(t, "books", "rm", "Nope"); code != 1 || !strings.Contains(errOut, "no book named") {
		t.Fatalf("rm of a missing book: %d %s", code, errOut)
	}
}

func TestEvalReportsBothStrategies(t *testing.T) {
	offlineEnv(t)
	set := filepath.Join(t.TempDir(), "set.jsonl")
	os.WriteFile(set, []byte(`{"id":"s1","question":"Can I still cast a spell while I am grappled?","kind":"multi-hop","style":"book-terms","gold":[{"book":"Conditions and Hazards","section":"Grappled"},{"book":"Spells and Magic","section":"Components"}]}
{"id":"s2","question":"How much cover bonus does a low wall give?","kind":"single-hop","style":"book-terms","gold":[{"book":"Core Rules","section":"Cover"}]}
{"id":"s3","question":"How much cover bonus does a low wall give?","kind":"single-hop","style":"book-terms","gold":[{"book":"Core Rules","section":"No Such Rule"}]}
`), 0o644)
	code, out, errOut := caprag(t, "eval", "--set", set)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"| multi-hop | single-hop |", "| multi-question | multi-hop |", "full recall", "cited recall"} {
		if !strings.Contains(out, want) {
			t.Fatalf("eval output lacks %q:\n%s", want, out)
		}
	}
	// A question whose gold section is not found is named on stderr with what it missed.
	if !strings.Contains(errOut, "multi-hop s3: 0 of 1 gold sections (missing: Core Rules — No Such Rule)") || strings.Contains(errOut, "s2: 0 of") {
		t.Errorf("misses not reported as expected:\n%s", errOut)
	}
	if code, _, _ := caprag(t, "eval"); code != 2 {
		t.Fatal("eval without --set must exit 2")
	}
}

// Cited recall reads the sources the answer text cites with [n], by their numbers, whatever
// else the answer lists.
func TestCitedPassages(t *testing.T) {
	a := rag.Answer{
		Text: "Grappled creatures cannot move [2]. Casting needs a free hand [1][2]; see also [9].",
		Sources: []rag.Source{
			{N: 1, Book: "Spells", Section: "Casting > Components"},
			{N: 2, Book: "Conditions", Section: "Conditions > Grappled"},
			{N: 3, Book: "Core", Section: "Core > Shopping"},
		},
	}
	q := evalset.Question{Gold: []evalset.Gold{{Book: "conditions", Section: "Grappled"}, {Book: "core", Section: "Shopping"}}}
	got := citedPassages(a)
	if len(got) != 3 || got[0].Section != "Conditions > Grappled" || got[1].Section != "Casting > Components" {
		t.Fatalf("cited passages %+v", got)
	}
	if n, _ := q.Recall(got); n != 1 {
		t.Errorf("%d gold sections cited, want 1 (Shopping is listed but not cited)", n)
	}
}
