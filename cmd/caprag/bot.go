package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/caprag/caprag/bot"
	botcmd "github.com/caprag/caprag/commands"
)

// openAnswerer opens what answers the bot's questions (the pipeline) and returns its closer.
var openAnswerer = func(ctx context.Context, a *app) (botcmd.Answerer, func(), error) {
	return a.openPipeline(ctx)
}

// runBot serves the Discord bot until SIGINT or SIGTERM.
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
	ans, closeAnswerer, err := openAnswerer(ctx, a)
	if err != nil {
		return fmt.Errorf("open the books: %w", err)
	}
	defer closeAnswerer()
	return bot.Run(ctx, a.cfg, ans, a.log)
}
