package main

import (
	"context"
	"errors"
)

// runModel manages the USE-Lite embedding model files.
func runModel(ctx context.Context, a *app, args []string) error {
	return errors.New("not built yet (issue: neural embedder)")
}
