package main

import (
	"context"
	"errors"
)

// runIngest loads books into the store.
func runIngest(ctx context.Context, a *app, args []string) error {
	return errors.New("not built yet (issue: books)")
}

// runBooks lists the ingested books or removes one.
func runBooks(ctx context.Context, a *app, args []string) error {
	return errors.New("not built yet (issue: books)")
}

// runSearch prints the passages that best match a query.
func runSearch(ctx context.Context, a *app, args []string) error {
	return errors.New("not built yet (issue: books)")
}
