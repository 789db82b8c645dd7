// Package state keeps what the Discord bot must remember across restarts — the answers behind
// its buttons, the histories of follow-up threads, the players' feedback votes and the book
// uploads under way — in one bbolt file (go.etcd.io/bbolt, pure Go) under DATA_DIR. Each kind is
// bounded in count (the oldest goes first) and answers and threads in age too.
//
// The file is opened for each read or write and closed after it (bbolt locks a file for as long
// as it is open), so that another process — `caprag feedback export` beside the running bot —
// takes its turn: a transaction waits up to 10 seconds for another process's.
package state

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/caprag/caprag/rag"
)

// Limits bound what is kept (config ANSWER_RECORDS_MAX, ANSWER_RECORDS_TTL, THREADS_MAX,
// THREADS_TTL, FEEDBACK_MAX). A zero count or age means the default below.
type Limits struct {
	Answers   int
	AnswerTTL time.Duration
	Threads   int
	ThreadTTL time.Duration
	Votes     int
}

// Defaults of Limits.
const (
	DefaultAnswers   = 20000
	DefaultAnswerTTL = 30 * 24 * time.Hour
	DefaultThreads   = 5000
	DefaultThreadTTL = 7 * 24 * time.Hour
	DefaultVotes     = 100000
)

func (l Limits) withDefaults() Limits {
	or := func(v, d int) int {
		if v <= 0 {
			return d
		}
		return v
	}
	ord := func(v, d time.Duration) time.Duration {
		if v <= 0 {
			return d
		}
		return v
	}
	return Limits{
		Answers: or(l.Answers, DefaultAnswers), AnswerTTL: ord(l.AnswerTTL, DefaultAnswerTTL),
		Threads: or(l.Threads, DefaultThreads), ThreadTTL: ord(l.ThreadTTL, DefaultThreadTTL),
		Votes: or(l.Votes, DefaultVotes),
	}
}

// Answer is an answer the bot posted: what its buttons (Sources, follow-up, votes) need.
type Answer struct {
	// Library is the server whose books (with the shared ones) answered it; "" outside a server.
	Library  string     `json:"library,omitempty"`
	Question string     `json:"question"`
	Answer   rag.Answer `json:"answer"`
	Books    []string   `json:"books,omitempty"`
	Strategy string     `json:"strategy,omitempty"`
	Private  bool       `json:"private,omitempty"`
	// ChannelID is where the message is; ThreadID the follow-up thread started on it, if any.
	ChannelID string    `json:"channel_id,omitempty"`
	ThreadID  string    `json:"thread_id,omitempty"`
	At        time.Time `json:"at"`
}

// Thread is a follow-up thread: its earlier questions and answers, oldest first.
type Thread struct {
	Library  string     `json:"library,omitempty"`
	Turns    []rag.Turn `json:"turns"`
	Books    []string   `json:"books,omitempty"`
	Strategy string     `json:"strategy,omitempty"`
	// At is the thread's last activity: it expires THREADS_TTL after it.
	At time.Time `json:"at"`
}

// Vote is a player's 👍 or 👎 on an answer, with what was asked and answered (the input of an
// evaluation set). A player's second vote on the same answer replaces the first.
type Vote struct {
	Message string `json:"message"`
	User    string `json:"-"`
	Library string `json:"library,omitempty"`
	Vote    string `json:"vote"` // "up" or "down"
	// Question is what the player typed; Asked the standalone question answered (a follow-up's
	// rewrite).
	Question string       `json:"question"`
	Asked    string       `json:"asked,omitempty"`
	Answer   string       `json:"answer"`
	Strategy string       `json:"strategy,omitempty"`
	Books    []string     `json:"books,omitempty"`
	Sources  []rag.Source `json:"sources"`
	At       time.Time    `json:"at"`
}

// Job is a book upload under way; one left at start-up was lost to a restart.
type Job struct {
	ID      string `json:"id"`
	Library string `json:"library"`
	File    string `json:"file"`
	User    string `json:"user,omitempty"`
	Channel string `json:"channel,omitempty"`
	// AppID and Token let the bot edit the upload's reply while its interaction token lives.
	AppID string    `json:"app_id,omitempty"`
	Token string    `json:"token,omitempty"`
	At    time.Time `json:"at"`
}

// The buckets: each kind's records by id, and its index by time ("<kind>@") whose keys are the
// record's time (8 bytes, big-endian Unix nanoseconds) then its id, so the oldest comes first.
const (
	answers = "answers"
	threads = "threads"
	votes   = "votes"
	jobs    = "jobs"
	counts  = "counts"
)

// DB is the bot's state file.
type DB struct {
	path string
	lim  Limits
	now  func() time.Time
	// mu keeps this process's transactions one at a time (the file lock would otherwise make
	// its own goroutines wait on each other's open).
	mu sync.Mutex
}

// ErrInUse is returned when another process kept the state file for longer than the wait.
var ErrInUse = errors.New("the state file is kept busy by another caprag process")

// lockWait is how long a transaction waits for another process's.
const lockWait = 10 * time.Second

// Open opens (or creates) the state file at path. now is the clock (time.Now when nil).
func Open(path string, lim Limits, now func() time.Time) (*DB, error) {
	if now == nil {
		now = time.Now
	}
	d := &DB{path: path, lim: lim.withDefaults(), now: now}
	err := d.update(func(tx *bolt.Tx) error {
		for _, b := range []string{answers, threads, votes, jobs, counts} {
			if _, err := tx.CreateBucketIfNotExists([]byte(b)); err != nil {
				return err
			}
			if b != counts && b != jobs {
				if _, err := tx.CreateBucketIfNotExists([]byte(b + "@")); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("state: open %s: %w", path, err)
	}
	return d, nil
}

// Close releases the state (the file is closed after every transaction).
func (d *DB) Close() error { return nil }

// open opens the file for one transaction.
func (d *DB) open(readOnly bool) (*bolt.DB, error) {
	db, err := bolt.Open(d.path, 0o600, &bolt.Options{Timeout: lockWait, ReadOnly: readOnly})
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, fmt.Errorf("%s: %w", d.path, ErrInUse)
	}
	return db, err
}

// update runs fn in a read-write transaction; view in a read-only one.
func (d *DB) update(fn func(*bolt.Tx) error) error { return d.tx(false, fn) }
func (d *DB) view(fn func(*bolt.Tx) error) error   { return d.tx(true, fn) }

func (d *DB) tx(readOnly bool, fn func(*bolt.Tx) error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	db, err := d.open(readOnly)
	if err != nil {
		return err
	}
	if readOnly {
		err = db.View(fn)
	} else {
		err = db.Update(fn)
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return err
}

// PutAnswer records an answer message (its At set to now when zero).
func (d *DB) PutAnswer(ctx context.Context, id string, a Answer) error {
	if a.At.IsZero() {
		a.At = d.now()
	}
	return d.put(ctx, answers, id, a.At, a, d.lim.Answers)
}

// Answer returns the record of an answer message; ok is false when it is unknown or expired.
func (d *DB) Answer(ctx context.Context, id string) (a Answer, ok bool, err error) {
	ok, err = d.get(ctx, answers, id, d.lim.AnswerTTL, &a)
	return a, ok, err
}

// PutThread records a follow-up thread; its At (last activity) is set to now.
func (d *DB) PutThread(ctx context.Context, id string, t Thread) error {
	t.At = d.now()
	return d.put(ctx, threads, id, t.At, t, d.lim.Threads)
}

// Thread returns a follow-up thread; ok is false when it is unknown or expired.
func (d *DB) Thread(ctx context.Context, id string) (t Thread, ok bool, err error) {
	ok, err = d.get(ctx, threads, id, d.lim.ThreadTTL, &t)
	return t, ok, err
}

// PutVote records a vote (its At set to now when zero); the same player's earlier vote on the
// same answer is replaced.
func (d *DB) PutVote(ctx context.Context, v Vote) error {
	if v.At.IsZero() {
		v.At = d.now()
	}
	return d.put(ctx, votes, v.Message+"/"+v.User, v.At, v, d.lim.Votes)
}

// Votes calls fn with every vote, oldest first.
func (d *DB) Votes(ctx context.Context, fn func(Vote) error) error {
	return d.view(func(tx *bolt.Tx) error {
		recs := tx.Bucket([]byte(votes))
		c := tx.Bucket([]byte(votes + "@")).Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			raw := recs.Get(k[8:])
			if len(raw) < 8 {
				continue
			}
			var v Vote
			if err := json.Unmarshal(raw[8:], &v); err != nil {
				return fmt.Errorf("state: vote %s: %w", k[8:], err)
			}
			if err := fn(v); err != nil {
				return err
			}
		}
		return nil
	})
}

// Count returns how many records of a kind ("answers", "threads", "votes") are kept, expired
// ones not yet swept included.
func (d *DB) Count(kind string) int {
	n := 0
	_ = d.view(func(tx *bolt.Tx) error {
		n = count(tx, kind)
		return nil
	})
	return n
}

// BeginJob records an upload under way.
func (d *DB) BeginJob(ctx context.Context, j Job) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if j.At.IsZero() {
		j.At = d.now()
	}
	raw, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("state: job: %w", err)
	}
	return d.update(func(tx *bolt.Tx) error { return tx.Bucket([]byte(jobs)).Put([]byte(j.ID), raw) })
}

// EndJob forgets an upload that finished (or whose failure was reported).
func (d *DB) EndJob(ctx context.Context, id string) error {
	return d.update(func(tx *bolt.Tx) error { return tx.Bucket([]byte(jobs)).Delete([]byte(id)) })
}

// LostJobs returns the uploads recorded as under way — at start-up, those a restart cut short —
// and forgets them.
func (d *DB) LostJobs(ctx context.Context) ([]Job, error) {
	var out []Job
	err := d.update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(jobs))
		var ids [][]byte
		err := b.ForEach(func(k, v []byte) error {
			var j Job
			if err := json.Unmarshal(v, &j); err == nil {
				out = append(out, j)
			}
			ids = append(ids, append([]byte(nil), k...))
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range ids {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("state: lost jobs: %w", err)
	}
	return out, nil
}

// Sweep removes the answers and threads past their age and returns how many.
func (d *DB) Sweep(ctx context.Context) (int, error) {
	n := 0
	err := d.update(func(tx *bolt.Tx) error {
		for _, k := range []struct {
			name string
			ttl  time.Duration
		}{{answers, d.lim.AnswerTTL}, {threads, d.lim.ThreadTTL}} {
			cut := d.now().Add(-k.ttl)
			for {
				key, _ := tx.Bucket([]byte(k.name + "@")).Cursor().First()
				if key == nil || !timeOf(key).Before(cut) {
					break
				}
				if err := remove(tx, k.name, key[8:]); err != nil {
					return err
				}
				n++
			}
		}
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("state: sweep: %w", err)
	}
	return n, nil
}

// put stores v under id in the kind's bucket with its time, then removes the oldest records
// while there are more than max.
func (d *DB) put(ctx context.Context, kind, id string, at time.Time, v any, max int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("state: %s: %w", kind, err)
	}
	raw := make([]byte, 8, 8+len(body))
	binary.BigEndian.PutUint64(raw, uint64(at.UnixNano()))
	raw = append(raw, body...)
	err = d.update(func(tx *bolt.Tx) error {
		if err := remove(tx, kind, []byte(id)); err != nil {
			return err
		}
		if err := tx.Bucket([]byte(kind)).Put([]byte(id), raw); err != nil {
			return err
		}
		if err := tx.Bucket([]byte(kind+"@")).Put(indexKey(raw[:8], []byte(id)), nil); err != nil {
			return err
		}
		n := count(tx, kind) + 1
		for ; n > max; n-- {
			key, _ := tx.Bucket([]byte(kind + "@")).Cursor().First()
			if key == nil {
				break
			}
			if err := remove(tx, kind, key[8:]); err != nil {
				return err
			}
		}
		return setCount(tx, kind, n)
	})
	if err != nil {
		return fmt.Errorf("state: save %s: %w", kind, err)
	}
	return nil
}

// get reads id's record into v; false when there is none or it is older than ttl (0: no age).
func (d *DB) get(ctx context.Context, kind, id string, ttl time.Duration, v any) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	var raw []byte
	err := d.view(func(tx *bolt.Tx) error {
		if r := tx.Bucket([]byte(kind)).Get([]byte(id)); r != nil {
			raw = append([]byte(nil), r...)
		}
		return nil
	})
	if err != nil || len(raw) < 8 {
		return false, err
	}
	if ttl > 0 && timeOf(raw).Before(d.now().Add(-ttl)) {
		return false, nil
	}
	if err := json.Unmarshal(raw[8:], v); err != nil {
		return false, fmt.Errorf("state: read %s %s: %w", kind, id, err)
	}
	return true, nil
}

// remove deletes id's record of a kind and its index entry, keeping the count.
func remove(tx *bolt.Tx, kind string, id []byte) error {
	b := tx.Bucket([]byte(kind))
	old := b.Get(id)
	if old == nil {
		return nil
	}
	if len(old) >= 8 {
		if err := tx.Bucket([]byte(kind + "@")).Delete(indexKey(old[:8], id)); err != nil {
			return err
		}
	}
	if err := b.Delete(id); err != nil {
		return err
	}
	return setCount(tx, kind, count(tx, kind)-1)
}

func indexKey(at, id []byte) []byte {
	k := make([]byte, 0, 8+len(id))
	return append(append(k, at...), id...)
}

func timeOf(b []byte) time.Time { return time.Unix(0, int64(binary.BigEndian.Uint64(b[:8]))) }

func count(tx *bolt.Tx, kind string) int {
	v := tx.Bucket([]byte(counts)).Get([]byte(kind))
	if len(v) != 8 {
		return 0
	}
	return int(binary.BigEndian.Uint64(v))
}

func setCount(tx *bolt.Tx, kind string, n int) error {
	v := make([]byte, 8)
	binary.BigEndian.PutUint64(v, uint64(max(n, 0)))
	return tx.Bucket([]byte(counts)).Put([]byte(kind), v)
}
