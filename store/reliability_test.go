package store

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

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
// a flipped bit served altered rule text. Every file of the store is checked when it is read: a
// flipped bit or a cut anywhere is refused with a message that names the file and what to run.
func TestDamagedStoreIsRefused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openAt(t, dir, Options{Embedder: embed.NewLocal(embed.LocalDims), Mode: Hybrid})
	if err := s.ReplaceBook(ctx, loadBook(t, "core", coreMD)); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	var checked []string
	for _, f := range files {
		if n := filepath.Base(f); n == manifestFile || strings.HasPrefix(n, "seg-") || strings.HasPrefix(n, "vec-") {
			checked = append(checked, f)
		}
	}
	if len(checked) != 3 { // manifest, segment, vectors
		t.Fatalf("store files: %v", files)
	}
	for _, path := range checked {
		good, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		check := func(what string, data []byte) {
			t.Helper()
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			// Opening reads the manifest and the links; the first search the book and its
			// vectors.
			s, err := OpenEmbedded(ctx, dir, Options{Embedder: embed.NewLocal(embed.LocalDims), Mode: Hybrid})
			if err == nil {
				err = s.Load(ctx)
			}
			var de *DamagedError
			if !errors.As(err, &de) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "caprag ingest") {
				t.Fatalf("%s of %s: %v, want a DamagedError naming the file and what to run", what, filepath.Base(path), err)
			}
		}
		for _, at := range []int{frameHeader - 1, frameHeader, frameHeader + 10, len(good) / 2, len(good) - 1} {
			for _, bit := range []byte{1, 0x40} {
				bad := bytes.Clone(good)
				bad[at] ^= bit
				check(fmt.Sprintf("bit %#x of byte %d flipped", bit, at), bad)
			}
		}
		check("cut short", good[:len(good)-7])
		check("cut in the header", good[:12])
		check("one byte more", append(bytes.Clone(good), 0))
		if err := os.WriteFile(path, good, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := bookNames(t, openAt(t, dir, local())); !strings.HasPrefix(got, "core:") {
		t.Fatalf("the intact files: %s", got)
	}
}

// Stores written by earlier caprags — format 1 (gzip of one gob value, no header) and format 2
// (a checked file of gob batches) — are read, verified, and converted into segments at open.
func TestFormerStoresReadVerifiedAndConverted(t *testing.T) {
	ctx := context.Background()
	core := loadBook(t, "core", coreMD)
	var es []entry
	for _, p := range core.Passages {
		es = append(es, entry{P: p, Vec: []float32{1}})
	}
	emb := embed.NewLocal(embed.LocalDims).ID()
	var f1 bytes.Buffer
	zw := gzip.NewWriter(&f1)
	if err := gob.NewEncoder(zw).Encode(&fileFormat{Format: 1, Embedder: emb, Entries: es}); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	for _, c := range []struct {
		name  string
		write func(path string)
	}{
		{"format 1", func(path string) { os.WriteFile(path, f1.Bytes(), 0o644) }},
		{"format 2", func(path string) {
			WriteChecked(path, func(w io.Writer) error {
				zw := gzip.NewWriter(w)
				enc := gob.NewEncoder(zw)
				enc.Encode(storeHeader{Format: 2, Embedder: emb, Count: len(es)})
				enc.Encode(es)
				return zw.Close()
			})
		}},
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, storeFile)
		c.write(path)
		good, _ := os.ReadFile(path)
		bad := bytes.Clone(good)
		bad[len(bad)/2] ^= 1
		os.WriteFile(path, bad, 0o644)
		if _, err := OpenEmbedded(ctx, dir, local()); err == nil || !strings.Contains(err.Error(), "damaged") {
			t.Fatalf("%s with a flipped bit: %v", c.name, err)
		}
		os.WriteFile(path, good, 0o644)
		s := openAt(t, dir, local())
		if got := bookNames(t, s); got != fmt.Sprintf("core:%d", len(core.Passages)) {
			t.Fatalf("%s store: %s", c.name, got)
		}
		if _, err := os.Stat(filepath.Join(dir, manifestFile)); err != nil {
			t.Fatalf("%s: not converted: %v", c.name, err)
		}
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
	written, _ := s.Passages(ctx, "big")
	read, err := openAt(t, dir, local()).Passages(ctx, "big")
	if err != nil || len(read) != len(written) || len(read) < 3 {
		t.Fatalf("%d passages read back, %d written (%v)", len(read), len(written), err)
	}
	for i, p := range read {
		w := written[i]
		if p.Parent != w.Parent || p.Text != w.Text || p.ParentID != w.ParentID {
			t.Fatalf("passage %d differs after reading back", i)
		}
		if i > 0 && p.ParentID == read[i-1].ParentID && unsafe.StringData(p.Parent) != unsafe.StringData(read[i-1].Parent) {
			t.Fatalf("passages %d and %d hold two copies of their parent", i-1, i)
		}
	}
	_ = ingest.ParentSize
}
