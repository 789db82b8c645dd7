package ingest

import (
	"os"
	"syscall"
	"testing"
)

// asUnprivileged runs f with the permissions of an ordinary user: as root, with the effective
// user and group "nobody" (root ignores file modes), switched back after. The ingest tests do
// not run in parallel, so nothing else runs meanwhile.
func asUnprivileged(t *testing.T, f func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		f()
		return
	}
	if err := syscall.Setresgid(-1, 65534, -1); err != nil {
		t.Skipf("cannot drop privileges: %v", err)
	}
	if err := syscall.Setresuid(-1, 65534, 0); err != nil {
		syscall.Setresgid(-1, 0, -1)
		t.Skipf("cannot drop privileges: %v", err)
	}
	defer func() {
		if err := syscall.Setresuid(-1, 0, -1); err != nil {
			panic("cannot take root back: " + err.Error())
		}
		syscall.Setresgid(-1, 0, -1)
	}()
	f()
}
