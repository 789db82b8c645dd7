package store

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caprag/caprag/embed"
	"github.com/caprag/caprag/ingest"
)

func local() Options { return Options{Embedder: embed.NewLocal(embed.LocalDims)} }

func openAt(t *testing.T, dir string, opts Options) *Local {
	t.Helper()
	s, err := OpenEmbedded(context.Background(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func bookNames(t *testing.T, s Store) string {
	t.Helper()
	books, err := s.Books(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, b := range books {
		names = append(names, fmt.Sprintf("%s:%d", b.Name, b.Passages))
	}
	return strings.Join(names, ",")
}

// Row 3 of issue 11: two writers on one DATA_DIR lost a book, and `books rm` during an ingest was
// undone. Each store below opens the folder as a separate process would (its own lock file
// handle, its own copy of the books read at open).
func TestTwoWritersLoseNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, b := openAt(t, dir, local()), openAt(t, dir, local())
	if err := a.ReplaceBook(ctx, loadBook(t, "core", coreMD)); err != nil {
		t.Fatal(err)
	}
	// b read the folder before a wrote: its change must be made to a's books, not over them.
	if err := b.ReplaceBook(ctx, loadBook(t, "conditions", condMD)); err != nil {
		t.Fatal(err)
	}
	if got := bookNames(t, openAt(t, dir, local())); !strings.Contains(got, "core:") || !strings.Contains(got, "conditions:") {
		t.Fatalf("after two writers: %s, want both books", got)
	}
	// `books rm core` while an ingest that opened the store earlier runs: the removal stays.
	ingesting, rm := openAt(t, dir, local()), openAt(t, dir, local())
	if err := rm.RemoveBook(ctx, "core"); err != nil {
		t.Fatal(err)
	}
	if err := ingesting.ReplaceBook(ctx, loadBook(t, "house", "# House rules\n\nCritical hits explode.\n")); err != nil {
		t.Fatal(err)
	}
	if got := bookNames(t, openAt(t, dir, local())); strings.Contains(got, "core:") || !strings.Contains(got, "house:") || !strings.Contains(got, "conditions:") {
		t.Fatalf("after rm during an ingest: %s, want conditions and house, core removed", got)
	}
	// Many writers at once, each with its own book.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		s := openAt(t, dir, Options{Embedder: embed.NewLocal(embed.LocalDims), LockTimeout: time45s})
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- s.ReplaceBook(ctx, loadBook(t, fmt.Sprintf("book%d", i), fmt.Sprintf("# Rules %d\n\nRule number %d.\n", i, i)))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got := bookNames(t, openAt(t, dir, local()))
	for i := range 8 {
		if !strings.Contains(got, fmt.Sprintf("book%d:", i)) {
			t.Fatalf("after 8 concurrent writers: %s, book%d lost", got, i)
		}
	}
}

const time45s = 45 * time.Second

// A writer that finds the lock taken fails with a message naming the holder, or waits for it.
func TestLockNamesTheHolderAndWaits(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, lockFile)
	held, err := Lock(ctx, path, Exclusive, LockOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := openAt(t, dir, local()) // LockTimeout 0: fail at once
	err = s.ReplaceBook(ctx, loadBook(t, "core", coreMD))
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("PID %d", os.Getpid())) || !strings.Contains(err.Error(), "STORE_LOCK_TIMEOUT") {
		t.Fatalf("locked store: %v, want ErrLocked naming PID %d and the setting", err, os.Getpid())
	}
	if got := bookNames(t, s); got != "" {
		t.Fatalf("a refused write changed the store: %s", got)
	}
	// With a timeout, the writer waits; it goes ahead once the holder lets go.
	waiting := make(chan string, 1)
	w := openAt(t, dir, Options{Embedder: embed.NewLocal(embed.LocalDims), LockTimeout: time45s, Waiting: func(h string) { waiting <- h }})
	done := make(chan error, 1)
	go func() { done <- w.ReplaceBook(ctx, loadBook(t, "core", coreMD)) }()
	if h := <-waiting; !strings.Contains(h, fmt.Sprintf("PID %d", os.Getpid())) {
		t.Fatalf("waiting for %q", h)
	}
	held.Unlock()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// A shared holder blocks a writer too, and is named as "another caprag process".
	sh, err := Lock(ctx, path, Shared, LockOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sh.Unlock()
	if _, err := Lock(ctx, path, Exclusive, LockOptions{}); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "another caprag process") {
		t.Fatalf("exclusive over shared: %v", err)
	}
	if l, err := Lock(ctx, path, Shared, LockOptions{}); err != nil {
		t.Fatalf("two shared holders: %v", err)
	} else {
		l.Unlock()
	}
}

// Row 8 of issue 11: the store's integrity was never checked (gob stopped before gzip's CRC), so
// a flipped bit served altered rule text. Every flipped bit and every cut is now refused with a
// message that names the file and what to run.
func TestDamagedStoreIsRefused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openAt(t, dir, local())
	if err := s.ReplaceBook(ctx, loadBook(t, "core", coreMD)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, storeFile)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, data []byte) {
		t.Helper()
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := OpenEmbedded(ctx, dir, local())
		var de *DamagedError
		if !errors.As(err, &de) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "caprag ingest") {
			t.Fatalf("%s: %v, want a DamagedError naming %s and what to run", what, err, path)
		}
	}
	for _, at := range []int{checkedHeader - 1, checkedHeader, checkedHeader + 10, len(good) / 2, len(good) - 1} {
		for _, bit := range []byte{1, 0x40} {
			bad := bytes.Clone(good)
			bad[at] ^= bit
			check(fmt.Sprintf("bit %#x of byte %d flipped", bit, at), bad)
		}
	}
	check("cut short", good[:len(good)-7])
	check("cut in the header", good[:20])
	check("one byte more", append(bytes.Clone(good), 0))
	if err := os.WriteFile(path, good, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := bookNames(t, openAt(t, dir, local())); !strings.HasPrefix(got, "core:") {
		t.Fatalf("the intact file: %s", got)
	}
}

// A store written by an earlier caprag (format 1: gzip of one gob value, no header) is still read,
// with gzip's CRC verified now, and rewritten in the checked format at the next change.
func TestFormat1StoreReadAndVerified(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	mem := NewMemory(local())
	if err := mem.ReplaceBook(ctx, loadBook(t, "core", coreMD)); err != nil {
		t.Fatal(err)
	}
	ff := fileFormat{Format: 1, Embedder: mem.emb.ID()}
	for _, e := range mem.order {
		ff.Entries = append(ff.Entries, *e)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := gob.NewEncoder(zw).Encode(&ff); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	path := filepath.Join(dir, storeFile)
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	s := openAt(t, dir, local())
	if got := bookNames(t, s); !strings.HasPrefix(got, "core:") {
		t.Fatalf("format 1 store: %s", got)
	}
	// A flipped bit inside the compressed text is caught by gzip's CRC once the stream is read
	// to its end.
	bad := bytes.Clone(buf.Bytes())
	bad[len(bad)/2] ^= 1
	os.WriteFile(path, bad, 0o644)
	if _, err := OpenEmbedded(ctx, dir, local()); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("format 1 with a flipped bit: %v", err)
	}
	os.WriteFile(path, buf.Bytes(), 0o644)
	s = openAt(t, dir, local())
	if err := s.ReplaceBook(ctx, loadBook(t, "conditions", condMD)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := OpenChecked(path); err != nil {
		t.Fatalf("after a change the store is a checked file: %v", err)
	}
}

// Row 11 of issue 11: a kill during save left temporary files behind; they are removed at open
// when no writer runs, and left alone while one does.
func TestStaleTempFilesRemovedAtOpen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	stale := []string{".passages-123456", ".passages.gob.gz.tmp-987654"}
	for _, n := range stale {
		os.WriteFile(filepath.Join(dir, n), []byte("half a store"), 0o644)
	}
	held, err := Lock(ctx, filepath.Join(dir, lockFile), Exclusive, LockOptions{})
	if err != nil {
		t.Fatal(err)
	}
	openAt(t, dir, local())
	for _, n := range stale {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Fatalf("%s removed while another writer held the lock", n)
		}
	}
	held.Unlock()
	openAt(t, dir, local())
	for _, n := range stale {
		if _, err := os.Stat(filepath.Join(dir, n)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s still there after open", n)
		}
	}
}

// The saved store keeps each parent's text once and reads it back shared by its children.
func TestSaveKeepsOneParentText(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	long := "# Big\n\n" + strings.Repeat("A long rule sentence about grappling. ", 100)
	s := openAt(t, dir, local())
	if err := s.ReplaceBook(ctx, loadBook(t, "big", long)); err != nil {
		t.Fatal(err)
	}
	r := openAt(t, dir, local())
	if len(r.order) != len(s.order) || len(r.order) < 3 {
		t.Fatalf("%d entries read back, %d written", len(r.order), len(s.order))
	}
	for i, e := range r.order {
		w := s.order[i]
		if e.P.Parent != w.P.Parent || e.P.Text != w.P.Text || e.P.ParentID != w.P.ParentID || len(e.Vec) != len(w.Vec) {
			t.Fatalf("entry %d differs after reading back", i)
		}
	}
	_ = ingest.ParentSize
}
