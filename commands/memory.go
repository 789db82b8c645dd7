package commands

import (
	"context"
	"sync"
	"time"

	"github.com/caprag/caprag/state"
)

// Memory keeps what the bot must remember between interactions and across restarts: the answers
// behind the buttons, the follow-up threads' histories, the votes and the book uploads under way
// (state.DB keeps them on disk, bounded).
type Memory interface {
	PutAnswer(ctx context.Context, messageID string, a state.Answer) error
	// Answer returns an answer message's record; ok is false when it is unknown or expired.
	Answer(ctx context.Context, messageID string) (a state.Answer, ok bool, err error)
	PutThread(ctx context.Context, threadID string, t state.Thread) error
	// Thread returns a follow-up thread; ok is false when it is unknown or expired.
	Thread(ctx context.Context, threadID string) (t state.Thread, ok bool, err error)
	PutVote(ctx context.Context, v state.Vote) error
	BeginJob(ctx context.Context, j state.Job) error
	EndJob(ctx context.Context, id string) error
	// LostJobs returns the uploads a restart cut short, once.
	LostJobs(ctx context.Context) ([]state.Job, error)
}

var _ Memory = (*state.DB)(nil)

// memoryOnly is the Memory of a Handler given none (tests): maps in this process only, each kept
// as long as state's defaults keep them on disk, and forgotten at exit.
type memoryOnly struct {
	mu      sync.Mutex
	now     func() time.Time
	answers map[string]state.Answer
	threads map[string]state.Thread
	votes   map[string]state.Vote
	jobs    map[string]state.Job
}

func newMemoryOnly(now func() time.Time) *memoryOnly {
	return &memoryOnly{now: now, answers: map[string]state.Answer{}, threads: map[string]state.Thread{}, votes: map[string]state.Vote{}, jobs: map[string]state.Job{}}
}

func (m *memoryOnly) PutAnswer(_ context.Context, id string, a state.Answer) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if a.At.IsZero() {
		a.At = m.now()
	}
	m.answers[id] = a
	return nil
}

func (m *memoryOnly) Answer(_ context.Context, id string) (state.Answer, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.answers[id]
	return a, ok && m.now().Sub(a.At) < state.DefaultAnswerTTL, nil
}

func (m *memoryOnly) PutThread(_ context.Context, id string, t state.Thread) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t.At = m.now()
	m.threads[id] = t
	return nil
}

func (m *memoryOnly) Thread(_ context.Context, id string) (state.Thread, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.threads[id]
	return t, ok && m.now().Sub(t.At) < state.DefaultThreadTTL, nil
}

func (m *memoryOnly) PutVote(_ context.Context, v state.Vote) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.votes[v.Message+"/"+v.User] = v
	return nil
}

func (m *memoryOnly) BeginJob(_ context.Context, j state.Job) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.jobs[j.ID] = j
	return nil
}

func (m *memoryOnly) EndJob(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.jobs, id)
	return nil
}

func (m *memoryOnly) LostJobs(context.Context) ([]state.Job, error) { return nil, nil }
