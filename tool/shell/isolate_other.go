//go:build !linux

package shell

import (
	"context"
	"errors"
	"os/exec"
	"syscall"
)

func (iso isolation) sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

func (iso isolation) check() error {
	if iso == processGroup {
		return nil
	}
	return errors.New("PID namespaces are Linux only")
}

// waitKilled waits until the program exits or ctx ends and kills its
// process group. Without waitid's WNOWAIT the program is reaped first, so
// the group is killed after its id was freed (only if the group is empty
// by then, and only if the pid was reused meanwhile, is another group hit).
func waitKilled(ctx context.Context, cmd *exec.Cmd) (timedOut bool, err error) {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		timedOut = true
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = <-done
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	return timedOut, err
}
