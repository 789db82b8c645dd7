package state

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/caprag/caprag/rag"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func open(t *testing.T, path string, lim Limits, c *clock) *DB {
	t.Helper()
	d, err := Open(path, lim, c.now)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestStateSurvivesReopening: answers, threads and votes written before a close are read after
// a new Open of the same file, as after a restart of the bot.
func TestStateSurvivesReopening(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	c := &clock{time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)}
	d := open(t, path, Limits{}, c)
	a := Answer{Library: "123", Question: "grappled?", Answer: rag.Answer{Text: "Yes [1].", Sources: []rag.Source{{N: 1, Book: "SRD", Section: "Grappled"}}}}
	if err := d.PutAnswer(ctx, "m1", a); err != nil {
		t.Fatal(err)
	}
	if err := d.PutThread(ctx, "t1", Thread{Library: "123", Turns: []rag.Turn{{Question: "q1", Answer: "a1"}}}); err != nil {
		t.Fatal(err)
	}
	if err := d.PutVote(ctx, Vote{Message: "m1", User: "u1", Vote: "up", Question: "grappled?"}); err != nil {
		t.Fatal(err)
	}
	if err := d.PutVote(ctx, Vote{Message: "m1", User: "u1", Vote: "down", Question: "grappled?"}); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	d = open(t, path, Limits{}, c)
	defer d.Close()
	got, ok, err := d.Answer(ctx, "m1")
	if err != nil || !ok || got.Library != "123" || got.Answer.Sources[0].Section != "Grappled" {
		t.Fatalf("answer after reopening: %+v %v %v", got, ok, err)
	}
	th, ok, err := d.Thread(ctx, "t1")
	if err != nil || !ok || len(th.Turns) != 1 || th.Turns[0].Answer != "a1" {
		t.Fatalf("thread after reopening: %+v %v %v", th, ok, err)
	}
	var vs []Vote
	if err := d.Votes(ctx, func(v Vote) error { vs = append(vs, v); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(vs) != 1 || vs[0].Vote != "down" {
		t.Fatalf("votes: %+v (a second vote of a player replaces the first)", vs)
	}
}

// TestCountBoundDropsTheOldest keeps at most the limit, dropping the oldest records first; a
// thread's activity makes it young again.
func TestCountBoundDropsTheOldest(t *testing.T) {
	ctx := context.Background()
	c := &clock{time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	d := open(t, filepath.Join(t.TempDir(), "state.db"), Limits{Answers: 3, Threads: 2, Votes: 2}, c)
	defer d.Close()
	for i := range 5 {
		c.t = c.t.Add(time.Minute)
		if err := d.PutAnswer(ctx, fmt.Sprint("m", i), Answer{Question: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if n := d.Count(answers); n != 3 {
		t.Fatalf("%d answers kept, want 3", n)
	}
	for i, want := range []bool{false, false, true, true, true} {
		if _, ok, _ := d.Answer(ctx, fmt.Sprint("m", i)); ok != want {
			t.Errorf("answer m%d kept = %v, want %v", i, ok, want)
		}
	}
	// Threads: t0, t1, then t0 again (activity), then t2: t1 is the oldest and goes.
	for _, id := range []string{"t0", "t1", "t0", "t2"} {
		c.t = c.t.Add(time.Minute)
		if err := d.PutThread(ctx, id, Thread{}); err != nil {
			t.Fatal(err)
		}
	}
	for id, want := range map[string]bool{"t0": true, "t1": false, "t2": true} {
		if _, ok, _ := d.Thread(ctx, id); ok != want {
			t.Errorf("thread %s kept = %v, want %v", id, ok, want)
		}
	}
	if n := d.Count(threads); n != 2 {
		t.Fatalf("%d threads kept, want 2", n)
	}
	for i := range 4 {
		c.t = c.t.Add(time.Minute)
		if err := d.PutVote(ctx, Vote{Message: fmt.Sprint("m", i), User: "u", Vote: "up"}); err != nil {
			t.Fatal(err)
		}
	}
	var kept []string
	_ = d.Votes(ctx, func(v Vote) error { kept = append(kept, v.Message); return nil })
	if fmt.Sprint(kept) != "[m2 m3]" {
		t.Fatalf("votes kept %v, want the newest two, oldest first", kept)
	}
}

// TestExpiry: an answer older than its age limit is not returned, and Sweep removes it.
func TestExpiry(t *testing.T) {
	ctx := context.Background()
	c := &clock{time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	d := open(t, filepath.Join(t.TempDir(), "state.db"), Limits{AnswerTTL: time.Hour, ThreadTTL: 2 * time.Hour}, c)
	defer d.Close()
	_ = d.PutAnswer(ctx, "old", Answer{})
	_ = d.PutThread(ctx, "th", Thread{})
	c.t = c.t.Add(90 * time.Minute)
	_ = d.PutAnswer(ctx, "new", Answer{})
	if _, ok, _ := d.Answer(ctx, "old"); ok {
		t.Fatal("an expired answer was returned")
	}
	if _, ok, _ := d.Thread(ctx, "th"); !ok {
		t.Fatal("a thread within its age was not returned")
	}
	n, err := d.Sweep(ctx)
	if err != nil || n != 1 || d.Count(answers) != 1 {
		t.Fatalf("sweep removed %d (%v), %d answers left", n, err, d.Count(answers))
	}
}

// TestLostJobs: an upload begun and never ended is reported once by the next Open.
func TestLostJobs(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	c := &clock{time.Now()}
	d := open(t, path, Limits{}, c)
	_ = d.BeginJob(ctx, Job{ID: "j1", Library: "1", File: "a.pdf"})
	_ = d.BeginJob(ctx, Job{ID: "j2", Library: "2", File: "b.pdf"})
	_ = d.EndJob(ctx, "j2")
	d.Close()
	d = open(t, path, Limits{}, c)
	defer d.Close()
	lost, err := d.LostJobs(ctx)
	if err != nil || len(lost) != 1 || lost[0].File != "a.pdf" {
		t.Fatalf("lost %+v %v", lost, err)
	}
	if again, _ := d.LostJobs(ctx); len(again) != 0 {
		t.Fatalf("a lost job was reported twice: %+v", again)
	}
}

// TestTwoProcessesShareTheFile: the export (another process) reads while the bot's handle keeps
// writing; neither waits on the other for longer than a transaction.
func TestTwoProcessesShareTheFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	bot := open(t, path, Limits{}, &clock{time.Now()})
	export := open(t, path, Limits{}, &clock{time.Now()})
	done := make(chan error, 1)
	go func() {
		for i := range 50 {
			if err := bot.PutVote(ctx, Vote{Message: fmt.Sprint(i), User: "u", Vote: "up"}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for range 20 {
		if err := export.Votes(ctx, func(Vote) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	n := 0
	_ = export.Votes(ctx, func(Vote) error { n++; return nil })
	if n != 50 {
		t.Fatalf("%d votes read, want 50", n)
	}
}
