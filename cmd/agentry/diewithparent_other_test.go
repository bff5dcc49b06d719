//go:build !linux

package main

import "os/exec"

// dieWithParent: only Linux has a parent-death signal; elsewhere a stopped
// test run may leave its `agentry serve` children to be killed by hand.
func dieWithParent(*exec.Cmd) {}
