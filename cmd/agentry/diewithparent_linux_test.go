package main

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill cmd when the test binary dies: a CI run
// stopped mid-test (or a test binary killed by its timeout) must not leave
// an `agentry serve` behind using a core and the test's ports.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
