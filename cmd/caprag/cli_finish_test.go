package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryCommandHasHelp: `caprag CMD --help` and `caprag help CMD` show the command's usage,
// its flags and an example, and exit 0 — even with bad settings.
func TestEveryCommandHasHelp(t *testing.T) {
	offlineEnv(t)
	t.Setenv("TOP_K", "many") // help does not need valid settings
	for _, c := range commands {
		for _, args := range [][]string{{c.name, "--help"}, {c.name, "-h"}, {"help", c.name}} {
			code, out, errOut := caprag(t, args...)
			if code != 0 || !strings.Contains(out, "usage: caprag "+c.name) || !strings.Contains(out, "Example:\n  caprag") && !strings.Contains(out, "Example:\n  DISCORD") {
				t.Fatalf("%v: exit %d\nstdout %s\nstderr %s", args, code, out, errOut)
			}
		}
	}
	_, out, _ := caprag(t, "search", "--help")
	for _, f := range []string{"-book", "-k", "-json"} {
		if !strings.Contains(out, f) {
			t.Errorf("search --help does not show %s:\n%s", f, out)
		}
	}
	_, out, _ = caprag(t, "ingest", "--help")
	if !strings.Contains(out, "-reindex") {
		t.Errorf("ingest --help does not show --reindex:\n%s", out)
	}
}

func TestVersion(t *testing.T) {
	offlineEnv(t)
	code, out, _ := caprag(t, "version")
	if code != 0 || !strings.HasPrefix(out, "caprag ") || !strings.Contains(out, "go1.") {
		t.Fatalf("version: exit %d, %q", code, out)
	}
	code, out, _ = caprag(t, "version", "--json")
	var b buildInfo
	if code != 0 || json.Unmarshal([]byte(out), &b) != nil || b.Version == "" || b.Go == "" {
		t.Fatalf("version --json: exit %d, %q", code, out)
	}
}

// TestUnknownBookExits2: a --book that names no book is a usage error that lists the books.
func TestUnknownBookExits2(t *testing.T) {
	offlineEnv(t)
	books := t.TempDir()
	os.WriteFile(filepath.Join(books, "House Rules.md"), []byte("# House Rules\n\n## Critical Fumbles\n\nA natural 1 on an attack drops the weapon.\n"), 0o644)
	if code, _, errOut := caprag(t, "ingest", books); code != 0 {
		t.Fatalf("ingest: %d %s", code, errOut)
	}
	for _, cmd := range []string{"search", "ask"} {
		code, out, errOut := caprag(t, cmd, "fumble", "--book", "Basic Set")
		if code != 2 || !strings.Contains(errOut, `"Basic Set"`) || !strings.Contains(errOut, `"House Rules"`) || out != "" {
			t.Fatalf("%s --book \"Basic Set\": exit %d\nstdout %s\nstderr %s", cmd, code, out, errOut)
		}
		if code, _, errOut := caprag(t, cmd, "fumble", "--book", "house rules"); code != 0 {
			t.Fatalf("%s --book \"house rules\" (another case): exit %d, %s", cmd, code, errOut)
		}
	}
}

// TestMissingSettingsExit2: a missing key for the chosen model provider and a missing bot token
// are bad settings, exit status 2, naming the variable.
func TestMissingSettingsExit2(t *testing.T) {
	offlineEnv(t)
	t.Setenv("LLM_PROVIDER", "openai")
	code, _, errOut := caprag(t, "ask", "Can I grapple?")
	if code != 2 || !strings.Contains(errOut, "OPENAI_API_KEY") {
		t.Fatalf("LLM_PROVIDER=openai without a key: exit %d, %s", code, errOut)
	}
	t.Setenv("LLM_PROVIDER", "anthropic")
	code, _, errOut = caprag(t, "ask", "Can I grapple?")
	if code != 2 || !strings.Contains(errOut, "ANTHROPIC_API_KEY") {
		t.Fatalf("LLM_PROVIDER=anthropic without a key: exit %d, %s", code, errOut)
	}
	t.Setenv("LLM_PROVIDER", "offline")
	t.Setenv("DISCORD_TOKEN", "")
	code, _, errOut = caprag(t, "bot")
	if code != 2 || !strings.Contains(errOut, "DISCORD_TOKEN") {
		t.Fatalf("bot without DISCORD_TOKEN: exit %d, %s", code, errOut)
	}
}

// TestIngestLoadsTheReadableFiles: a path that does not exist is reported and the rest of the
// run is loaded (exit status 1).
func TestIngestLoadsTheReadableFiles(t *testing.T) {
	offlineEnv(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.md")
	os.WriteFile(good, []byte("# Good\n\n## Flanking\n\nTwo allies on opposite sides get advantage.\n"), 0o644)
	missing := filepath.Join(dir, "missing.pdf")
	code, out, errOut := caprag(t, "ingest", good, missing)
	if code != 1 || !strings.Contains(errOut, "missing.pdf") || !strings.Contains(out, "ingested 1 books") {
		t.Fatalf("ingest good.md missing.pdf: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if _, list, _ := caprag(t, "books"); !strings.Contains(list, "good") {
		t.Fatalf("books after a partial run: %s", list)
	}
	code, out, errOut = caprag(t, "ingest", "--reindex")
	if code != 0 || !strings.Contains(out, "embedded 1 stored book again") {
		t.Fatalf("ingest --reindex: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
}
