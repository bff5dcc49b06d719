package shell

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv makes the test binary act as a program for the tests instead of
// running them: "fork" starts a copy of itself that sleeps ("sleep") and
// prints its pid, then exits at once, leaving the copy behind.
const helperEnv = "AGENTRY_SHELL_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "fork":
		child := exec.Command(os.Args[0])
		child.Env = []string{helperEnv + "=sleep"}
		if os.Getenv("AGENTRY_SHELL_TEST_KEEP_STDOUT") != "" {
			child.Stdout = os.Stdout // holds the tool's pipe open
		}
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Println(child.Process.Pid)
		os.Exit(0)
	case "sleep":
		time.Sleep(2 * time.Minute) // bounded: a failing test leaves it behind
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// alive reports whether pid is a process that has not exited (a zombie has).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}

// TestShell_ChildrenDoNotOutliveTheCommand: a program that exits leaving a
// child behind (with or without its output pipe) gets its result, and the
// child is killed with its process group instead of running on as an orphan.
func TestShell_ChildrenDoNotOutliveTheCommand(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("child holds stdout %v", keep), func(t *testing.T) {
			t.Parallel()
			env := []string{helperEnv + "=fork"}
			if keep {
				env = append(env, "AGENTRY_SHELL_TEST_KEEP_STDOUT=1")
			}
			set := newSet(t, Config{AllowedCommands: []string{os.Args[0]}, Env: env})
			res, out := run(t, set, `{"args":[`+strconv.Quote(os.Args[0])+`]}`)
			if res.Err != nil {
				t.Fatalf("run: %s %v", res.Content, res.Err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(out.Stdout))
			if err != nil {
				t.Fatalf("stdout %q: %v", out.Stdout, err)
			}
			t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
			// SIGKILL is delivered asynchronously: wait for the exit, with a
			// bound far above any scheduling delay.
			for deadline := time.Now().Add(10 * time.Second); alive(pid); {
				if time.Now().After(deadline) {
					t.Fatalf("the child %d is still running after the command returned", pid)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}
