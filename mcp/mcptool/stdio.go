package mcptool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stopGrace is how long Close waits for a stdio server to exit after its
// stdin closed, then after SIGTERM, before killing it (the SDK's
// CommandTransport waits as long).
const stopGrace = 5 * time.Second

// stdioTransport runs a stdio server in a process group of its own, so
// that what it starts (a wrapper's real server, a helper) ends with it: when
// the server exits, or when the session closes, the whole group is killed.
// The SDK's CommandTransport signals the server alone, and learns of its
// exit only from the end of its stdout, which never comes while a process
// it started holds the pipe: a call to a server that died then waited for
// its timeout, and the process ran on.
type stdioTransport struct {
	cmd    *exec.Cmd
	stderr io.Writer
}

func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			_ = f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		if r, w, err = os.Pipe(); err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := pipe()
	if err != nil {
		closeAll()
		return nil, err
	}
	errR, errW, err := pipe()
	if err != nil {
		closeAll()
		return nil, err
	}
	cmd := t.cmd
	// Files, not writers: exec copies a writer through a pipe of its own
	// and Wait waits for that copy, that is for every process holding the
	// pipe.
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, err
	}
	_, _, _ = inR.Close(), outW.Close(), errW.Close()
	p := &process{cmd: cmd, stdin: inW, stdout: outR, exited: make(chan struct{}), drained: make(chan struct{})}
	go func() {
		_, _ = io.Copy(t.stderr, errR)
		_ = errR.Close()
		close(p.drained)
	}()
	go func() {
		p.waitErr = cmd.Wait()
		// The group goes with the server: a process it started holding
		// its stdout would keep the session from seeing it end. (The
		// server is reaped first, so its pid names the group only while a
		// member is left; a group of an unrelated process is hit only if
		// this one was empty and the pid reused meanwhile.)
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		close(p.exited)
	}()
	return (&mcp.IOTransport{Reader: &stdout{p}, Writer: p}).Connect(ctx)
}

// process is a started stdio server: writes go to its stdin, Close stops
// it and its group.
type process struct {
	cmd     *exec.Cmd
	stdin   *os.File
	stdout  *os.File
	exited  chan struct{} // the server exited, its group was killed
	drained chan struct{} // its stderr was read to the end
	waitErr error
}

func (p *process) Write(b []byte) (int, error) { return p.stdin.Write(b) }

// Close closes the server's stdin, waits for it to exit, then signals its
// group (SIGTERM, then SIGKILL), as MCP's stdio shutdown says.
func (p *process) Close() error {
	_ = p.stdin.Close()
	exited := func() bool {
		select {
		case <-p.exited:
			return true
		case <-time.After(stopGrace):
			return false
		}
	}
	if !exited() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		if !exited() {
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			if !exited() {
				_ = p.stdout.Close()
				return fmt.Errorf("the server process %d did not exit after SIGKILL", p.cmd.Process.Pid)
			}
		}
	}
	_ = p.stdout.Close()
	var ee *exec.ExitError
	if p.waitErr != nil && !errors.As(p.waitErr, &ee) {
		return p.waitErr
	}
	return nil
}

// stdout reads the server's output; its end waits (briefly) for the
// server's exit and its stderr, so that an error of the ended session
// carries the server's last words.
type stdout struct{ p *process }

func (s *stdout) Read(b []byte) (int, error) {
	n, err := s.p.stdout.Read(b)
	if errors.Is(err, io.EOF) {
		timeout := time.After(time.Second)
		select {
		case <-s.p.exited:
			select {
			case <-s.p.drained:
			case <-timeout:
			}
		case <-timeout:
		}
	}
	return n, err
}

// Close is the process's: the session closes its stdin first.
func (s *stdout) Close() error { return nil }
