package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/caprag/caprag/bot"
	"github.com/caprag/caprag/ingest"
	"github.com/caprag/caprag/state"
	"github.com/caprag/caprag/uploads"
)

// runBot serves the Discord bot until SIGINT or SIGTERM: the pipeline over every library, the
// uploads of /books add, and the state file that keeps answers, threads and votes across
// restarts.
func runBot(ctx context.Context, a *app, args []string) error {
	fs := flag.NewFlagSet("bot", flag.ContinueOnError)
	args, err := a.parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(args) > 0 {
		return usagef("bot takes no arguments (settings are environment variables)")
	}
	if err := a.cfg.RequireDiscord(); err != nil {
		return err
	}
	p, libs, closeBooks, err := a.openServing(ctx)
	if err != nil {
		return fmt.Errorf("open the books: %w", err)
	}
	defer closeBooks()
	mem, err := a.openState(ctx)
	if err != nil {
		return err
	}
	defer mem.Close()
	go sweep(ctx, a, mem)
	jobs := uploads.New(uploads.Options{
		Shelves: libs, MaxBytes: int64(a.cfg.MaxUploadMB) << 20, Jobs: a.cfg.IngestJobs,
		Limits: ingest.Limits{TextBytes: int64(a.cfg.MaxBookTextMB) << 20},
	})
	return bot.RunWith(ctx, a.cfg, p, a.log, bot.Options{Librarian: jobs, Memory: mem})
}

// openState opens DATA_DIR/state.db with the settings' bounds.
func (a *app) openState(ctx context.Context) (*state.DB, error) {
	if err := ensureDir(a.cfg.DataDir); err != nil {
		return nil, err
	}
	mem, err := state.Open(filepath.Join(a.cfg.DataDir, "state.db"), state.Limits{
		Answers: a.cfg.AnswerRecordsMax, AnswerTTL: a.cfg.AnswerRecordsTTL,
		Threads: a.cfg.ThreadsMax, ThreadTTL: a.cfg.ThreadsTTL, Votes: a.cfg.FeedbackMax,
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("opening the bot's state: %w", err)
	}
	return mem, nil
}

// sweep removes expired answers and threads at start and every hour.
func sweep(ctx context.Context, a *app, mem *state.DB) {
	for {
		if n, err := mem.Sweep(ctx); err != nil {
			a.log.Warn("sweeping the bot's state", "err", err)
		} else if n > 0 {
			a.log.Info("swept expired answers and threads", "removed", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Hour):
		}
	}
}

// ensureDir creates DATA_DIR when it does not exist yet.
func ensureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating DATA_DIR %s: %w", dir, err)
	}
	return nil
}
