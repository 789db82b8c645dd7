package config

import (
	"os"
	"testing"
)

// unset removes variables for the duration of the test (t.Setenv first, so they are restored).
func unset(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		t.Setenv(n, "")
		os.Unsetenv(n)
	}
}
