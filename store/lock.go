package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Writers of a store take an exclusive lock; readers that could see a write half done (the
// Chroma store's load) take a shared one. The lock is an operating-system file lock (flock) on a
// file under DATA_DIR, so it covers every caprag process that uses that folder, and it is
// released when its process ends, however it ends (kill -9 included): there are no stale locks
// to clean up. Any store implementation can use it: Lock(ctx, path, …) around its writes.

// LockMode is how a lock is shared.
type LockMode int

// Lock modes: one exclusive holder, or any number of shared holders.
const (
	Exclusive LockMode = iota
	Shared
)

// LockOptions tune Lock.
type LockOptions struct {
	// Timeout is how long Lock waits for another holder (STORE_LOCK_TIMEOUT); 0 means do not
	// wait.
	Timeout time.Duration
	// Waiting, when set, is called once when Lock starts waiting, with who holds the lock.
	Waiting func(holder string)
	// Poll is how often a waiting Lock tries again (100 ms when 0).
	Poll time.Duration
}

// FileLock is a held lock; Unlock releases it.
type FileLock struct {
	f    *os.File
	path string
}

// ErrLocked is returned when another process held the lock for longer than the timeout.
var ErrLocked = errors.New("the books are locked by another caprag")

// Lock takes the lock on the file at path (created if needed), waiting at most opt.Timeout for
// another holder. An exclusive holder records its PID and command in the file, so that a
// waiting process can say who holds it. The error names that holder and what to do.
func Lock(ctx context.Context, path string, mode LockMode, opt LockOptions) (*FileLock, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	poll := opt.Poll
	if poll <= 0 {
		poll = 100 * time.Millisecond
	}
	deadline := time.Now().Add(opt.Timeout)
	told := false
	for {
		ok, err := tryLock(f, mode)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if ok {
			break
		}
		holder := lockHolder(path)
		if !time.Now().Before(deadline) {
			f.Close()
			what := "writing"
			if mode == Exclusive && holder == "" {
				what = "reading or writing"
			}
			return nil, fmt.Errorf("%w: %s is %s the books (lock file %s); waited %s (STORE_LOCK_TIMEOUT). Try again when it has finished", ErrLocked, holderText(holder), what, path, opt.Timeout)
		}
		if !told && opt.Waiting != nil {
			opt.Waiting(holderText(holder))
			told = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(min(poll, max(time.Until(deadline), time.Millisecond))):
		}
	}
	l := &FileLock{f: f, path: path}
	if mode == Exclusive {
		_ = f.Truncate(0)
		_, _ = f.WriteAt([]byte(fmt.Sprintf("pid %d: %s\n", os.Getpid(), strings.Join(os.Args, " "))), 0)
	}
	return l, nil
}

// TryLock takes the lock if it is free at once; ok is false when another process holds it.
func TryLock(path string, mode LockMode) (*FileLock, bool, error) {
	l, err := Lock(context.Background(), path, mode, LockOptions{})
	if errors.Is(err, ErrLocked) {
		return nil, false, nil
	}
	return l, err == nil, err
}

// Unlock releases the lock (an exclusive holder first clears its PID from the file).
func (l *FileLock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	_ = l.f.Truncate(0)
	err := unlock(l.f)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}

// lockHolder reads the PID line an exclusive holder wrote ("" for shared holders).
func lockHolder(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, rest, ok := strings.Cut(strings.TrimPrefix(line, "pid "), ": ")
	if _, err := strconv.Atoi(pid); err != nil || !ok {
		return ""
	}
	return "PID " + pid + " (" + shortCommand(rest) + ")"
}

func holderText(holder string) string {
	if holder == "" {
		return "another caprag process"
	}
	return "another caprag, " + holder + ","
}

// shortCommand keeps a holder's command readable: the program's base name and its arguments,
// at most 80 characters.
func shortCommand(cmd string) string {
	prog, args, _ := strings.Cut(cmd, " ")
	s := strings.TrimSpace(filepath.Base(prog) + " " + args)
	if r := []rune(s); len(r) > 80 {
		s = string(r[:79]) + "…"
	}
	return s
}
