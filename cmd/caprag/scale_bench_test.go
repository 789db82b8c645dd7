package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/caprag/caprag/evalset"
	"github.com/caprag/caprag/internal/fakediscord"
	"github.com/caprag/caprag/internal/testenv"
)

// TestBotStartBench measures a built caprag binary serving the bot over a library already
// ingested: the time from starting the process to the commands being registered (ready to
// answer), then the resident memory after it has answered every dev question once through the
// fake Discord. scripts/bench-scale runs it; it is skipped unless CAPRAG_BENCH_BIN names the
// binary and CAPRAG_BENCH_DATA its DATA_DIR. It prints one line: BENCH ready_s=… rss_mib=….
func TestBotStartBench(t *testing.T) {
	bin, data := os.Getenv("CAPRAG_BENCH_BIN"), os.Getenv("CAPRAG_BENCH_DATA")
	if bin == "" || data == "" {
		t.Skip("CAPRAG_BENCH_BIN and CAPRAG_BENCH_DATA name no binary and library")
	}
	qs, err := evalset.Load(testenv.EvalSet(t))
	if err != nil {
		t.Fatal(err)
	}
	fd := fakediscord.New(t)
	cmd := exec.Command(bin, "bot")
	cmd.Env = append(os.Environ(), "DATA_DIR="+data, "DISCORD_TOKEN=bench-token", "DISCORD_API_URL="+fd.APIURL(),
		"DISCORD_GUILD_ID="+fakediscord.GuildID, "LLM_PROVIDER=offline", "LOG_LEVEL=error",
		"RATE_LIMIT_USER=0", "RATE_LIMIT_SERVER=0") // one player asks the 45 questions in a row
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	fd.Wait(t, 120*time.Second, "the commands registered", func(rs []fakediscord.Request) bool {
		for _, r := range rs {
			if r.Method == "PUT" && strings.Contains(r.Path, "/commands") {
				return true
			}
		}
		return false
	})
	ready := time.Since(start)
	for _, q := range qs {
		_, token, payload := fd.Interaction(2, "", fakediscord.SlashCommand("rule", fakediscord.Option{Name: "question", Value: q.Question}), nil)
		fd.Dispatch("INTERACTION_CREATE", payload)
		fd.Wait(t, 60*time.Second, "the answer to "+q.Question, func(rs []fakediscord.Request) bool {
			for _, r := range fakediscord.ForToken(rs, token) {
				if r.Method == "PATCH" && strings.Contains(string(r.Body), `"embeds":[{`) {
					return true
				}
			}
			return false
		})
	}
	rss, hwm := procMemory(t, cmd.Process.Pid)
	fmt.Printf("BENCH ready_s=%.3f rss_mib=%.0f hwm_mib=%.0f questions=%d\n", ready.Seconds(), rss, hwm, len(qs))
}

// procMemory reads a process's resident memory now and at its peak (MiB) from /proc.
func procMemory(t *testing.T, pid int) (rss, hwm float64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
		switch k {
		case "VmRSS":
			rss = kb / 1024
		case "VmHWM":
			hwm = kb / 1024
		}
	}
	return rss, hwm
}
