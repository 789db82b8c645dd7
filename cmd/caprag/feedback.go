package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/caprag/caprag/state"
)

// runFeedback exports the players' votes: one JSON object a line, oldest first, each with the
// question, the answer and its sources.
func runFeedback(ctx context.Context, a *app, args []string) error {
	fs := flag.NewFlagSet("feedback", flag.ContinueOnError)
	out := fs.String("out", "", "write to this file instead of standard output")
	rest, err := a.parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 1 || rest[0] != "export" {
		return usagef("unexpected %q", strings.Join(rest, " "))
	}
	path := filepath.Join(a.cfg.DataDir, "state.db")
	if _, err := os.Stat(path); os.IsNotExist(err) {
		return fmt.Errorf("no votes yet: %s does not exist (the bot creates it)", path)
	}
	mem, err := a.openState(ctx)
	if err != nil {
		return err
	}
	defer mem.Close()
	var w io.Writer = a.stdout
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			return fmt.Errorf("feedback export: %w", err)
		}
		defer f.Close()
		w = f
	}
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	n := 0
	err = mem.Votes(ctx, func(v state.Vote) error {
		n++
		return enc.Encode(v)
	})
	if err != nil {
		return fmt.Errorf("feedback export: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("feedback export: %w", err)
	}
	fmt.Fprintf(a.stderr, "exported %d votes\n", n)
	return nil
}
