package shell

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

func (iso isolation) sysProcAttr() *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true}
	switch iso {
	case pidNamespace:
		attr.Cloneflags = syscall.CLONE_NEWPID
	case userPIDNamespace:
		attr.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
	}
	return attr
}

// check starts a process isolated by iso whose exec fails on purpose (the
// program's name is empty): ENOENT means the namespaces were made and the
// child got as far as exec; EPERM, EINVAL or ENOSPC come from the clone.
func (iso isolation) check() error {
	if iso == processGroup {
		return nil
	}
	pid, err := syscall.ForkExec("", []string{"agentry-shell-probe"}, &syscall.ProcAttr{Sys: iso.sysProcAttr()})
	switch {
	case errors.Is(err, syscall.ENOENT):
		return nil
	case err == nil: // cannot happen: nothing runs under an empty name
		_ = syscall.Kill(pid, syscall.SIGKILL)
		_, _ = syscall.Wait4(pid, nil, 0, nil)
		return fmt.Errorf("%s: the probe ran a program", iso)
	default:
		return fmt.Errorf("%s: %w", iso, err)
	}
}

// waitKilled waits until the program exits or ctx ends, kills its process
// group (everything left in it), then reaps the program. The group is
// killed before the program is reaped: until then its pid, which is the
// group's id, cannot be reused by an unrelated process.
func waitKilled(ctx context.Context, cmd *exec.Cmd) (timedOut bool, err error) {
	pid := cmd.Process.Pid
	exited := make(chan error, 1)
	go func() {
		var info unix.Siginfo
		for {
			err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
			if err != unix.EINTR {
				exited <- err
				return
			}
		}
	}()
	select {
	case <-exited:
	case <-ctx.Done():
		timedOut = true
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	return timedOut, cmd.Wait()
}
