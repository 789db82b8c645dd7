package commands

import (
	"fmt"
	"sync"
	"time"
)

// fairUse limits how many questions one player and one server ask (RATE_LIMIT_USER,
// RATE_LIMIT_SERVER): a token bucket each, holding a minute's worth of questions and refilled
// evenly over the minute, so a burst up to the limit is answered and then one question per
// 1/limit of a minute. A question is counted against both buckets only when both allow it.
type fairUse struct {
	perUser, perServer int // questions a minute; 0: no limit
	now                func() time.Time

	mu      sync.Mutex
	users   map[string]*bucket
	servers map[string]*bucket
	sweepAt time.Time
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newFairUse(perUser, perServer int, now func() time.Time) *fairUse {
	return &fairUse{perUser: perUser, perServer: perServer, now: now, users: map[string]*bucket{}, servers: map[string]*bucket{}}
}

// limited is a refusal: who is limited, at what rate, and when the next question is allowed.
type limited struct {
	server bool
	rate   int
	retry  time.Time
}

// text says the refusal to the player: the limit and when to try again (Discord shows the
// timestamp in the reader's own time, "in 8 seconds").
func (l *limited) text() string {
	when := fmt.Sprintf("<t:%d:R>", l.retry.Add(999*time.Millisecond).Unix())
	if l.server {
		return fmt.Sprintf("⏳ This server has asked %d questions in the last minute, the most the bot answers. Try again %s.", l.rate, when)
	}
	return fmt.Sprintf("⏳ You are asking faster than the bot answers one player (%d questions a minute). Try again %s.", l.rate, when)
}

// allow counts a question of user in server ("" outside a server) and returns nil, or the
// refusal.
func (f *fairUse) allow(user, server string) *limited {
	if f == nil || (f.perUser <= 0 && f.perServer <= 0) {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	f.sweep(now)
	var ub, sb *bucket
	if f.perUser > 0 && user != "" {
		ub = take(f.users, user, f.perUser, now)
		if ub.tokens < 1 {
			return &limited{rate: f.perUser, retry: now.Add(wait(ub, f.perUser))}
		}
	}
	if f.perServer > 0 && server != "" {
		sb = take(f.servers, server, f.perServer, now)
		if sb.tokens < 1 {
			return &limited{server: true, rate: f.perServer, retry: now.Add(wait(sb, f.perServer))}
		}
	}
	if ub != nil {
		ub.tokens--
	}
	if sb != nil {
		sb.tokens--
	}
	return nil
}

// take returns key's bucket refilled up to now.
func take(m map[string]*bucket, key string, rate int, now time.Time) *bucket {
	b, ok := m[key]
	if !ok {
		b = &bucket{tokens: float64(rate), at: now}
		m[key] = b
		return b
	}
	b.tokens = min(float64(rate), b.tokens+now.Sub(b.at).Minutes()*float64(rate))
	b.at = now
	return b
}

// wait is how long until the bucket holds a whole question.
func wait(b *bucket, rate int) time.Duration {
	return time.Duration((1 - b.tokens) / float64(rate) * float64(time.Minute))
}

// sweep drops the buckets that are full again (a minute idle), at most once a minute: memory
// follows the players of the last minute.
func (f *fairUse) sweep(now time.Time) {
	if now.Before(f.sweepAt) {
		return
	}
	f.sweepAt = now.Add(time.Minute)
	for _, m := range []map[string]*bucket{f.users, f.servers} {
		for k, b := range m {
			if now.Sub(b.at) >= time.Minute {
				delete(m, k)
			}
		}
	}
}
