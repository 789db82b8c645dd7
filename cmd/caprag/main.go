// Command caprag answers tabletop-RPG rules questions from a group's own rulebooks, citing book
// and page or section. It ingests books, searches them, answers questions on the command line and
// serves the Discord bot. This package only wires the other packages together.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/caprag/caprag/config"
)

// app is what every command receives: the validated settings, a logger and the output streams.
type app struct {
	cfg    config.Config
	log    *slog.Logger
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer

	// http is the HTTP client shared by the models and the embedders (httpClient).
	httpOnce sync.Once
	http     *http.Client
}

type command struct {
	name    string
	args    string
	summary string
	run     func(ctx context.Context, a *app, args []string) error
}

// commands lists the subcommands in the order `caprag help` shows them.
var commands = []command{
	{"ask", `"question" [--strategy S] [--book B] [--server ID] [--json]`, "answer a rules question with cited sources", runAsk},
	{"search", `"query" [--book B] [-k N] [--server ID] [--json]`, "show the passages that best match a query", runSearch},
	{"ingest", "PATH... [--book NAME] [--server ID]", "load PDF, Markdown or text books (files or folders)", runIngest},
	{"books", "[rm NAME | show NAME [--page N]] [--server ID] [--json]", "list every library's books, remove one, or show what was read from one", runBooks},
	{"feedback", "export [--out FILE]", "write the players' votes with questions, answers and sources as JSON Lines", runFeedback},
	{"eval", "--set FILE.jsonl [--strategy S|all] [--match M] [--json]", "measure retrieval on a question set", runEval},
	{"bot", "", "serve the Discord bot (needs DISCORD_TOKEN)", runBot},
	{"model", "fetch", "download the USE-Lite embedding model into EMBEDDINGS_MODEL_DIR", runModel},
}

// usageError is a mistake in the command line: exit status 2 with the usage.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first signal, a second one stops caprag at once (the default action).
		<-ctx.Done()
		stop()
	}()
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes one command line and returns the exit status: 0 on success, 1 when the work
// failed, 2 for a bad command line or bad settings.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		printUsage(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	var cmd *command
	for i := range commands {
		if commands[i].name == args[0] {
			cmd = &commands[i]
		}
	}
	if cmd == nil {
		fmt.Fprintf(stderr, "caprag: unknown command %q\n\n", args[0])
		printUsage(stderr)
		return 2
	}
	cfg, err := config.Load()
	if err != nil {
		fmt.Fprintf(stderr, "caprag: bad settings:\n  %s\n", strings.ReplaceAll(err.Error(), "\n", "\n  "))
		return 2
	}
	a := &app{cfg: cfg, log: newLogger(cfg, stderr), stdin: stdin, stdout: stdout, stderr: stderr}
	err = cmd.run(ctx, a, args[1:])
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "caprag %s: %s\nusage: caprag %s %s\n", cmd.name, ue.msg, cmd.name, cmd.args)
		return 2
	case errors.Is(err, flag.ErrHelp):
		return 0
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		// Ctrl-C or SIGTERM: say so in words, not "context canceled".
		fmt.Fprintf(stderr, "caprag %s: interrupted\n", cmd.name)
		return 1
	default:
		var ce *config.Error
		fmt.Fprintf(stderr, "caprag %s: %s\n", cmd.name, err.Error())
		if errors.As(err, &ce) {
			return 2
		}
		return 1
	}
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "caprag answers rules questions from your group's rulebooks, with sources.")
	fmt.Fprintln(w, "\nUsage:")
	for _, c := range commands {
		fmt.Fprintf(w, "  caprag %-8s %-58s %s\n", c.name, c.args, c.summary)
	}
	fmt.Fprintln(w, "\nSettings are environment variables; see README.md.")
}

func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel)) // validated by config
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// parseFlags parses flags that may stand before, between or after the positional arguments
// ("caprag search "grappled" --book rules -k 3") and returns the positional arguments. A lone
// "--" ends the flags.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var rest []string
	for i, a := range args {
		if a == "--" {
			args, rest = args[:i], args[i+1:]
			break
		}
	}
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usageError{err.Error()}
		}
		args = fs.Args()
		if len(args) == 0 {
			return append(positional, rest...), nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}
