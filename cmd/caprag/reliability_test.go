package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestMain lets a test run caprag as a separate process: the test binary itself, with
// CAPRAG_TEST_MAIN=1, runs the command line it is given.
func TestMain(m *testing.M) {
	if os.Getenv("CAPRAG_TEST_MAIN") == "1" {
		os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// process runs caprag in a process of its own.
func process(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "CAPRAG_TEST_MAIN=1")
	return cmd
}

// Row 3 of issue 11: two `caprag ingest` runs on one DATA_DIR lost one of the two books (3 of 3
// trials), and both exited 0. Now every run's book is kept.
func TestTwoIngestProcessesKeepEveryBook(t *testing.T) {
	offlineEnv(t)
	t.Setenv("STORE_LOCK_TIMEOUT", "2m")
	dir := t.TempDir()
	const n = 4
	var paths []string
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("book%d.md", i))
		var b strings.Builder
		for s := range 300 {
			fmt.Fprintf(&b, "## Rule %d-%d\n\nWhen a creature of book %d acts, rule %d applies to it.\n\n", i, s, i, s)
		}
		os.WriteFile(p, []byte(b.String()), 0o644)
		paths = append(paths, p)
	}
	var wg sync.WaitGroup
	outs := make([]string, n)
	errs := make([]error, n)
	for i, p := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := process("ingest", p).CombinedOutput()
			outs[i], errs[i] = string(out), err
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("ingest %d: %v\n%s", i, errs[i], outs[i])
		}
	}
	_, list, _ := caprag(t, "books")
	for i := range n {
		if !strings.Contains(list, fmt.Sprintf("book%d ", i)) {
			t.Fatalf("after %d concurrent ingests, book%d is missing:\n%s", n, i, list)
		}
	}
}

// Row 7 of issue 11 on the command line: a symlinked folder is loaded, and a folder problem is
// reported while the rest loads (exit 1).
func TestIngestLoadsTheRestOfAFolder(t *testing.T) {
	offlineEnv(t)
	root := t.TempDir()
	books := filepath.Join(root, "books")
	os.MkdirAll(books, 0o755)
	os.WriteFile(filepath.Join(books, "House Rules.md"), []byte("# House Rules\n\nCritical hits explode.\n"), 0o644)
	os.Symlink(filepath.Join(root, "nowhere"), filepath.Join(books, "gone"))
	os.Symlink(books, filepath.Join(root, "linked"))
	code, out, errOut := caprag(t, "ingest", filepath.Join(root, "linked"))
	if code != 1 || !strings.Contains(out, "ingested 1 books") || !strings.Contains(errOut, "gone") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if _, list, _ := caprag(t, "books"); !strings.Contains(list, "House Rules") {
		t.Fatalf("books: %s", list)
	}
}

// Row 5 of issue 11 on the command line: a 200 MB Markdown file is refused at once by the size
// limit, with the setting named; a raised limit is honoured.
func TestIngestRefusesAFileOverTheLimit(t *testing.T) {
	offlineEnv(t)
	dir := t.TempDir()
	big := filepath.Join(dir, "big.md")
	f, _ := os.Create(big)
	f.Truncate(200 << 20)
	f.Close()
	code, _, errOut := caprag(t, "ingest", big)
	if code != 1 || !strings.Contains(errOut, "MAX_BOOK_TEXT_MB") {
		t.Fatalf("200 MB Markdown: exit %d, %s", code, errOut)
	}
	mid := filepath.Join(dir, "mid.md")
	os.WriteFile(mid, []byte("# Rules\n\n"+strings.Repeat("A rule sentence here. ", 80000)), 0o644) // 1.7 MB
	t.Setenv("MAX_BOOK_TEXT_MB", "1")
	if code, _, errOut := caprag(t, "ingest", mid); code != 1 || !strings.Contains(errOut, "MAX_BOOK_TEXT_MB") {
		t.Fatalf("1.7 MB under MAX_BOOK_TEXT_MB=1: exit %d, %s", code, errOut)
	}
	t.Setenv("MAX_BOOK_TEXT_MB", "2")
	if code, _, errOut := caprag(t, "ingest", mid); code != 0 {
		t.Fatalf("1.7 MB under MAX_BOOK_TEXT_MB=2: exit %d, %s", code, errOut)
	}
	t.Setenv("MAX_BOOK_TEXT_MB", "0")
	if code, _, errOut := caprag(t, "ingest", mid); code != 2 || !strings.Contains(errOut, "MAX_BOOK_TEXT_MB") {
		t.Fatalf("MAX_BOOK_TEXT_MB=0: exit %d, %s", code, errOut)
	}
}

// Row 11 of issue 11: Ctrl-C said only "context canceled".
func TestInterruptedSaysSo(t *testing.T) {
	offlineEnv(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.md"), []byte("# A\n\nRule.\n"), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, args := range [][]string{{"ingest", dir}, {"ask", "How does grappling work?"}} {
		var out, errb strings.Builder
		code := run(ctx, args, strings.NewReader(""), &out, &errb)
		if code != 1 || !strings.Contains(errb.String(), "interrupted") || strings.Contains(errb.String(), "context canceled") {
			t.Fatalf("%s interrupted: exit %d, %q", args[0], code, errb.String())
		}
	}
}

// Row 8 of issue 11 on the command line: a damaged store is named, with what to run.
func TestDamagedStoreIsNamed(t *testing.T) {
	data := offlineEnv(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.md"), []byte("# Movement\n\nThe creature can move in that direction on its next turn.\n"), 0o644)
	if code, _, errOut := caprag(t, "ingest", dir); code != 0 {
		t.Fatal(errOut)
	}
	// A damaged manifest stops every command; a damaged book stops those that read it (books
	// lists from the manifest alone).
	segs, _ := filepath.Glob(filepath.Join(data, "books", "seg-*"))
	if len(segs) != 1 {
		t.Fatalf("segment files: %v", segs)
	}
	for _, c := range []struct {
		path string
		cmds [][]string
	}{
		{filepath.Join(data, "books", "manifest"), [][]string{{"books"}, {"search", "move"}, {"ask", "Can it move?"}}},
		{segs[0], [][]string{{"search", "move"}, {"ask", "Can it move?"}}},
	} {
		good, err := os.ReadFile(c.path)
		if err != nil {
			t.Fatal(err)
		}
		b := bytes.Clone(good)
		b[len(b)-3] ^= 0x08
		os.WriteFile(c.path, b, 0o644)
		for _, args := range c.cmds {
			code, out, errOut := caprag(t, args...)
			if code != 1 || !strings.Contains(errOut, c.path) || !strings.Contains(errOut, "damaged") || !strings.Contains(errOut, "caprag ingest") || strings.Contains(out, "direction") {
				t.Fatalf("%s on a damaged %s: exit %d\nstdout %s\nstderr %s", args[0], filepath.Base(c.path), code, out, errOut)
			}
		}
		os.WriteFile(c.path, good, 0o644)
	}
}
