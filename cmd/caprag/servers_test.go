package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caprag/caprag/rag"
	"github.com/caprag/caprag/state"
)

// TestServerLibrariesOnTheCommandLine: --server ingests into one server's library; `caprag books`
// lists every library; search and ask read a server's books with the shared ones, and never
// without --server; a bad --server is a usage error.
func TestServerLibrariesOnTheCommandLine(t *testing.T) {
	dir := offlineEnv(t)
	books := t.TempDir()
	house := filepath.Join(books, "House Rules.md")
	os.WriteFile(house, []byte("# House Rules\n\n## Critical Fumbles\n\nA natural 1 on an attack drops the weapon into the moat.\n"), 0o644)
	core := filepath.Join(books, "Core.md")
	os.WriteFile(core, []byte("# Core\n\n## Grappling\n\nA grappled creature's speed becomes 0.\n"), 0o644)
	if code, _, errOut := caprag(t, "ingest", core); code != 0 {
		t.Fatalf("shared ingest: %d %s", code, errOut)
	}
	if code, _, errOut := caprag(t, "ingest", "--server", "123456789012345678", house); code != 0 {
		t.Fatalf("server ingest: %d %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "servers", "123456789012345678", "books")); err != nil {
		t.Fatalf("no library folder for the server: %v", err)
	}
	_, list, _ := caprag(t, "books")
	if !strings.Contains(list, "shared library") || !strings.Contains(list, "server 123456789012345678:") || !strings.Contains(list, "House Rules") {
		t.Fatalf("books:\n%s", list)
	}
	_, js, _ := caprag(t, "books", "--json")
	var all []rag.BookInfo
	if err := json.Unmarshal([]byte(js), &all); err != nil || len(all) != 2 || all[1].Library != "123456789012345678" {
		t.Fatalf("books --json: %s %v", js, err)
	}
	_, out, _ := caprag(t, "search", "natural 1 moat", "--server", "123456789012345678", "-k", "3")
	if !strings.Contains(out, "House Rules") {
		t.Fatalf("search --server does not find the server's book:\n%s", out)
	}
	_, out, _ = caprag(t, "search", "natural 1 moat", "-k", "3")
	if strings.Contains(out, "House Rules") {
		t.Fatalf("search without --server finds a server's book:\n%s", out)
	}
	_, out, _ = caprag(t, "ask", "What happens on a natural 1?", "--server", "123456789012345678")
	if !strings.Contains(out, "moat") {
		t.Fatalf("ask --server:\n%s", out)
	}
	if code, _, _ := caprag(t, "books", "rm", "House Rules"); code != 1 {
		t.Fatalf("removing a server's book from the shared library: exit %d", code)
	}
	if code, out, _ := caprag(t, "books", "rm", "House Rules", "--server", "123456789012345678"); code != 0 || !strings.Contains(out, "removed") {
		t.Fatalf("books rm --server: %d %s", code, out)
	}
	if code, _, errOut := caprag(t, "ingest", "--server", "guild-one", house); code != 2 || !strings.Contains(errOut, "Discord server ID") {
		t.Fatalf("bad --server: %d %s", code, errOut)
	}
}

// TestFeedbackExport writes the votes the bot kept as JSON Lines, with question, answer and
// sources.
func TestFeedbackExport(t *testing.T) {
	dir := offlineEnv(t)
	if code, _, errOut := caprag(t, "feedback", "export"); code != 1 || !strings.Contains(errOut, "no votes yet") {
		t.Fatalf("export before any vote: %d %s", code, errOut)
	}
	db, err := state.Open(filepath.Join(dir, "state.db"), state.Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []state.Vote{
		{Message: "1", User: "u1", Library: "42", Vote: "up", Question: "grappled?", Answer: "Speed 0 [1].", Sources: []rag.Source{{N: 1, Book: "Core", Section: "Core > Grappling", Text: "speed becomes 0"}}},
		{Message: "2", User: "u1", Vote: "down", Question: "prone?", Answer: "Crawl [1]."},
	} {
		if err := db.PutVote(context.Background(), v); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "votes.jsonl")
	if code, _, errOut := caprag(t, "feedback", "export", "--out", out); code != 0 || !strings.Contains(errOut, "exported 2 votes") {
		t.Fatalf("export: %d %s", code, errOut)
	}
	b, _ := os.ReadFile(out)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var first struct {
		Vote, Question, Answer, Library string
		Sources                         []rag.Source
		User                            string `json:"user"`
	}
	if len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &first) != nil || first.Vote != "up" || first.Question != "grappled?" || first.Sources[0].Text != "speed becomes 0" || first.Library != "42" || first.User != "" {
		t.Fatalf("exported:\n%s", b)
	}
}
