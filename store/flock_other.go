//go:build !unix

package store

import "context"

// lockFolder is a no-op where flock is missing: one writer at a time is then the user's care.
func lockFolder(context.Context, string) (func(), error) { return func() {}, nil }
