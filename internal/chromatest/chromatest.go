// Package chromatest starts a real Chroma server for tests: the pinned npm package
// (tools/chroma, installed by scripts/test), on a free loopback port, with its data in a
// temporary folder, stopped when the tests end.
package chromatest

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/caprag/caprag/internal/testenv"
)

// Server is a running Chroma server.
type Server struct {
	URL  string
	cmd  *exec.Cmd
	dir  string
	logs *os.File
}

var (
	sharedOnce sync.Once
	shared     *Server
	sharedErr  error
)

// Shared returns the server shared by the tests of one test binary, starting it the first time.
// Call Stop from TestMain after m.Run.
func Shared(tb testing.TB) *Server {
	tb.Helper()
	bin := Binary()
	if _, err := os.Stat(bin); err != nil {
		testenv.Missing(tb, "Chroma server not installed (%s): run npm ci --prefix tools/chroma, or ./scripts/test", bin)
	}
	sharedOnce.Do(func() { shared, sharedErr = start() })
	if sharedErr != nil {
		tb.Fatalf("starting Chroma: %v", sharedErr)
	}
	return shared
}

// StopShared stops the shared server, if one was started.
func StopShared() {
	if shared != nil {
		shared.Stop()
	}
}

// Binary is the path of the pinned Chroma CLI.
func Binary() string {
	return filepath.Join(testenv.Root(), "tools", "chroma", "node_modules", ".bin", "chroma")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func start() (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "caprag-chroma-")
	if err != nil {
		return nil, err
	}
	logs, err := os.Create(filepath.Join(dir, "chroma.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(Binary(), "run", "--path", filepath.Join(dir, "data"), "--host", "127.0.0.1", "--port", fmt.Sprint(port))
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &Server{URL: fmt.Sprintf("http://127.0.0.1:%d", port), cmd: cmd, dir: dir, logs: logs}
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(s.URL + "/api/v2/heartbeat")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	s.Stop()
	log, _ := os.ReadFile(filepath.Join(dir, "chroma.log"))
	return nil, fmt.Errorf("no heartbeat from %s within 90 s; log:\n%s", s.URL, log)
}

// Stop kills the server's process group and removes its data.
func (s *Server) Stop() {
	if s.cmd.Process != nil {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = s.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	s.logs.Close()
	os.RemoveAll(s.dir)
}
