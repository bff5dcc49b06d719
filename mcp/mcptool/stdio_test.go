package mcptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentryhq/agentry/mcp/mcptool"
)

// wrappedServer starts the test server through a shell that first starts
// a child of its own (as a wrapper script or a server starting a helper
// does) holding the server's stdout and stderr, and writes its pid to a
// file, returned.
func wrappedServer(t *testing.T) (mcptool.Config, string) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	cfg := stdioConfig("CHILD_PID_FILE", pidFile)
	cfg.Command = "sh"
	cfg.Args = []string{"-c", `sleep 600 & echo $! > "$CHILD_PID_FILE"; exec "$0"`, os.Args[0]}
	cfg.Timeout = 10 * time.Minute
	return cfg, pidFile
}

// waitGone waits until the process in pidFile has exited (gone or a
// zombie), failing after a minute.
func waitGone(t *testing.T, pidFile string) {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	for range 600 {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return
		}
		if f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])); len(f) > 0 && f[0] == "Z" {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	t.Fatalf("the server's child %d still runs", pid)
}

// A stdio server that dies mid-call while a process it started still
// holds its stdout fails the call with ErrUnavailable and its stderr, and
// that process ends with it: the toolkit waited for the end of the output,
// which never came, until the call's timeout (60 s by default) and called
// it a timeout; the next call found the dead server; and the child ran on.
func TestToolkit_ServerDeathIsSeenThoughAChildHoldsItsOutput(t *testing.T) {
	cfg, pidFile := wrappedServer(t)
	k := newKit(t, cfg)
	tools, err := k.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = find(t, tools, "crash").Call(ctx, json.RawMessage(`{}`))
	if !errors.Is(err, mcptool.ErrUnavailable) || !strings.Contains(err.Error(), "crashing on purpose") {
		t.Fatalf("call of a dying server: %v, want ErrUnavailable with its stderr", err)
	}
	waitGone(t, pidFile)
	// The next use starts the server again.
	tools, err = k.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if out, err := find(t, tools, "echo").Call(context.Background(), json.RawMessage(`{"text":"back"}`)); err != nil || out != "echo: back" {
		t.Fatalf("after restart: %q, %v", out, err)
	}
}

// Close ends what the stdio server started, not only the server: a child
// the server left behind ran on after the agent closed the toolkit.
func TestToolkit_CloseEndsTheServersChildren(t *testing.T) {
	cfg, pidFile := wrappedServer(t)
	k := newKit(t, cfg)
	if _, err := k.Tools(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pidFile)
}
