package main

import (
	"context"
	"errors"
)

// runBot serves the Discord bot until SIGINT or SIGTERM.
func runBot(ctx context.Context, a *app, args []string) error {
	if err := a.cfg.RequireDiscord(); err != nil {
		return err
	}
	return errors.New("not built yet (issue: bot)")
}
