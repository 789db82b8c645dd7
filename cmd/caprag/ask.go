package main

import (
	"context"
	"errors"
)

// runAsk answers one question: hop progress on stderr, the answer and its sources on stdout.
func runAsk(ctx context.Context, a *app, args []string) error {
	return errors.New("not built yet (issue: answers)")
}

// runEval runs a question set and reports retrieval recall per strategy.
func runEval(ctx context.Context, a *app, args []string) error {
	return errors.New("not built yet (issue: answers)")
}
