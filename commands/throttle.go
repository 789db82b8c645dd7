package commands

import (
	"context"
	"sync"
	"time"
)

// throttle sends the latest of a stream of texts at most once per interval; texts set while a
// send is waiting replace each other (latest wins). One send runs at a time.
type throttle struct {
	mu     sync.Mutex
	latest string
	dirty  bool
	wake   chan struct{}
	quit   chan struct{}
	done   chan struct{}
}

func newThrottle(ctx context.Context, interval time.Duration, send func(context.Context, string)) *throttle {
	t := &throttle{wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(t.done)
		for {
			select {
			case <-t.wake:
			case <-t.quit:
				return
			case <-ctx.Done():
				return
			}
			t.mu.Lock()
			text, dirty := t.latest, t.dirty
			t.dirty = false
			t.mu.Unlock()
			if !dirty {
				continue
			}
			send(ctx, text)
			timer := time.NewTimer(interval)
			select {
			case <-timer.C:
			case <-t.quit:
				timer.Stop()
				return
			case <-ctx.Done():
				timer.Stop()
				return
			}
		}
	}()
	return t
}

// set makes text the next one to send.
func (t *throttle) set(text string) {
	t.mu.Lock()
	t.latest, t.dirty = text, true
	t.mu.Unlock()
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// stop drops any text not yet sent and waits for a running send to finish.
func (t *throttle) stop() {
	close(t.quit)
	<-t.done
}
