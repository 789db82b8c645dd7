// Package testenv tells tests where the pieces they need live (the repository root, the shared
// SRD corpus and evaluation set, the pinned test servers) and whether a missing piece skips the
// test or fails it: under ./scripts/test (CAPRAG_TEST_STRICT=1) or in CI (CI=true) it fails.
package testenv

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Strict reports whether missing test dependencies fail tests instead of skipping them.
func Strict() bool {
	return os.Getenv("CAPRAG_TEST_STRICT") == "1" || os.Getenv("CI") == "true"
}

// Missing skips the test, or fails it in strict mode, because what it needs is not here.
func Missing(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if Strict() {
		tb.Fatalf("missing test dependency: "+format, args...)
	}
	tb.Skipf("skipped, missing: "+format, args...)
}

// Root returns the repository root (the folder holding go.mod).
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// SharedDir returns the shared folder with the SRD corpus and the evaluation questions:
// CAPRAG_SHARED_DIR, else ../shared next to the repository.
func SharedDir(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv("CAPRAG_SHARED_DIR")
	if dir == "" {
		dir = filepath.Join(Root(), "..", "shared")
	}
	if _, err := os.Stat(filepath.Join(dir, "corpus", "srd51")); err != nil {
		Missing(tb, "the shared SRD corpus at %s (set CAPRAG_SHARED_DIR)", dir)
	}
	return dir
}

// SRDDir returns the folder of the SRD 5.1 Markdown books.
func SRDDir(tb testing.TB) string {
	tb.Helper()
	return filepath.Join(SharedDir(tb), "corpus", "srd51")
}

// SRDPDF returns the path of the SRD 5.1 PDF.
func SRDPDF(tb testing.TB) string {
	tb.Helper()
	return filepath.Join(SharedDir(tb), "corpus", "srd51-pdf", "SRD5.1-CCBY4.0License.pdf")
}

// EvalSet returns the path of the shared development question set.
func EvalSet(tb testing.TB) string {
	tb.Helper()
	return filepath.Join(SharedDir(tb), "eval", "dev.jsonl")
}
