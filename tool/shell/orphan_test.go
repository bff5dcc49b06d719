package shell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentryhq/agentry/tool"
)

// The test binary acts as a program for the tests instead of running them
// when helperEnv is set:
//
//   - "sleep" writes its pid (as this test sees it, from /proc/self) to the
//     file named by pidFileEnv, closes fd 3 if readyFDEnv is set, and sleeps;
//   - "fork" starts a "sleep" copy in its own process group;
//   - "setsid" starts a "sleep" copy in a new session (setsid(2));
//   - "daemon" double-forks: a child in a new session starts the "sleep"
//     copy and exits at once ("daemon2");
//
// "fork", "setsid" and "daemon" wait until the sleeper has written its pid,
// print "started", then exit, or hang if thenEnv is "hang".
const (
	helperEnv  = "AGENTRY_SHELL_TEST_HELPER"
	pidFileEnv = "AGENTRY_SHELL_TEST_PIDFILE"
	readyFDEnv = "AGENTRY_SHELL_TEST_READY_FD"
	thenEnv    = "AGENTRY_SHELL_TEST_THEN"
	keepEnv    = "AGENTRY_SHELL_TEST_KEEP_STDOUT"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		if err := helper(mode); err != nil {
			fmt.Fprintln(os.Stderr, mode+":", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func helper(mode string) error {
	switch mode {
	case "sleep":
		self, err := os.Readlink("/proc/self")
		if err != nil {
			return err
		}
		if err := os.WriteFile(os.Getenv(pidFileEnv), []byte(self), 0o600); err != nil {
			return err
		}
		if os.Getenv(readyFDEnv) != "" {
			os.NewFile(3, "ready").Close()
		}
		time.Sleep(2 * time.Minute) // bounded: a failing test leaves it behind
		return nil
	case "probe":
		iso, err := chooseIsolation()
		fmt.Println(iso)
		if err != nil {
			fmt.Println("error:", err)
		}
		return nil
	case "daemon2":
		// The first child of a double fork: already in its own session, it
		// starts the sleeper (handing on the ready pipe) and exits.
		return startHelper("sleep", &syscall.SysProcAttr{}, os.NewFile(3, "ready"))
	}
	var attr *syscall.SysProcAttr
	next := "sleep"
	switch mode {
	case "fork":
		attr = &syscall.SysProcAttr{} // stays in the program's process group
	case "setsid":
		attr = &syscall.SysProcAttr{Setsid: true}
	case "daemon":
		attr, next = &syscall.SysProcAttr{Setsid: true}, "daemon2"
	default:
		return fmt.Errorf("unknown helper mode %q", mode)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	if err := startHelper(next, attr, w); err != nil {
		return err
	}
	w.Close()
	// EOF once every copy of the write end is closed: the sleeper has
	// written its pid.
	if _, err := io.Copy(io.Discard, r); err != nil {
		return err
	}
	fmt.Println("started")
	if os.Getenv(thenEnv) == "hang" {
		time.Sleep(2 * time.Minute)
	}
	return nil
}

func startHelper(mode string, attr *syscall.SysProcAttr, ready *os.File) error {
	child := exec.Command(os.Args[0])
	child.Env = []string{helperEnv + "=" + mode, pidFileEnv + "=" + os.Getenv(pidFileEnv), readyFDEnv + "=3"}
	child.ExtraFiles = []*os.File{ready}
	child.SysProcAttr = attr
	if os.Getenv(keepEnv) != "" {
		child.Env = append(child.Env, keepEnv+"=1")
		child.Stdout = os.Stdout // holds the tool's pipe open
	}
	return child.Start()
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

// orphanCase runs the helper in mode through the tool and returns the pid of
// the sleeper it left behind (killed at the test's end whatever happens).
// With then "exit" the program exits once the sleeper started; with
// "cancel" it hangs, and the call's context ends once the sleeper started
// (the timeout's path: a fixed timeout would race the start of three
// processes on a loaded machine).
func orphanCase(t *testing.T, iso isolation, mode, then string, keepStdout bool) (pid int) {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "pid")
	env := []string{helperEnv + "=" + mode, pidFileEnv + "=" + pidFile}
	if then == "cancel" {
		env = append(env, thenEnv+"=hang")
	}
	if keepStdout {
		env = append(env, keepEnv+"=1")
	}
	cfg := Config{AllowedCommands: []string{os.Args[0]}, Env: env}
	readPID := func() (int, error) {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return 0, err
		}
		return strconv.Atoi(string(b))
	}
	switch then {
	case "cancel":
		r, err := newRunner(cfg, func(Config) isolation { return iso })
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			defer cancel()
			for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if _, err := readPID(); err == nil {
					return
				}
			}
		}()
		res, err := r.run(ctx, runIn{Args: []string{os.Args[0]}})
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "killed") {
			t.Errorf("a hanging command whose call ended returned %+v, %v; want a \"killed\" error wrapping context.Canceled", res, err)
		}
	default:
		res, out := run(t, newSetWith(t, cfg, iso), `{"args":[`+strconv.Quote(os.Args[0])+`]}`)
		if res.Err != nil || out.ExitCode != 0 || out.Stdout != "started\n" {
			t.Errorf("run: %s %v; want exit code 0 and stdout \"started\"", res.Content, res.Err)
		}
	}
	pid, err := readPID()
	if err != nil {
		t.Fatalf("the sleeper wrote no pid: %v", err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	return pid
}

// TestShell_ChildrenDoNotOutliveTheCommand: a program that exits leaving a
// child in its process group behind (with or without its output pipe) gets
// its result, and the child is killed instead of running on as an orphan,
// whichever way commands are isolated.
func TestShell_ChildrenDoNotOutliveTheCommand(t *testing.T) {
	for _, iso := range availableIsolations(t) {
		for _, keep := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/child holds stdout %v", iso, keep), func(t *testing.T) {
				t.Parallel()
				pid := orphanCase(t, iso, "fork", "exit", keep)
				// In a process group, SIGKILL is delivered asynchronously:
				// wait for the exit, with a bound far above any scheduling
				// delay.
				for deadline := time.Now().Add(10 * time.Second); alive(pid); {
					if time.Now().After(deadline) {
						t.Fatalf("the child %d is still running after the command returned", pid)
					}
					time.Sleep(10 * time.Millisecond)
				}
			})
		}
	}
}

// TestShell_NewSessionsDoNotOutliveTheCommand: a descendant that left the
// command's process group (setsid, a daemon's double fork) is gone by the
// time the call returns, whether the program exited or was killed.
func TestShell_NewSessionsDoNotOutliveTheCommand(t *testing.T) {
	isos := availableIsolations(t)
	if isos[0] == processGroup {
		t.Skip("PID namespaces are not available here: a command's new sessions outlive it (the documented fallback)")
	}
	for _, iso := range isos {
		if iso == processGroup {
			continue
		}
		for _, mode := range []string{"setsid", "daemon"} {
			for _, then := range []string{"exit", "cancel"} {
				t.Run(fmt.Sprintf("%s/%s/%s", iso, mode, then), func(t *testing.T) {
					t.Parallel()
					// The kernel kills the namespace's processes before the
					// program's exit is reported: no waiting.
					if pid := orphanCase(t, iso, mode, then, true); alive(pid) {
						t.Fatalf("%s's sleeper %d is still running after the command returned", mode, pid)
					}
				})
			}
		}
	}
}

// availableIsolations lists the isolations that work here, the one New
// chooses first (processGroup works everywhere, and comes last).
func availableIsolations(t *testing.T) []isolation {
	t.Helper()
	chosen, err := chooseIsolation()
	if chosen == processGroup {
		t.Logf("PID namespaces are not available here: %v", err)
	}
	isos := []isolation{chosen}
	for _, iso := range []isolation{pidNamespace, userPIDNamespace, processGroup} {
		if iso != chosen && iso.check() == nil {
			isos = append(isos, iso)
		}
	}
	return isos
}

func newSetWith(t *testing.T, cfg Config, iso isolation) *tool.Set {
	t.Helper()
	kit, err := newToolkit(cfg, func(Config) isolation { return iso })
	if err != nil {
		t.Fatal(err)
	}
	set, err := tool.NewSet(nil, kit)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func TestReportIsolation_WarnsOnlyOfTheFallback(t *testing.T) {
	t.Parallel()
	var buf strings.Builder
	log := slog.New(slog.NewTextHandler(&buf, nil))
	cfg := Config{AllowedCommands: []string{"ls"}}
	reportIsolation(log, cfg, pidNamespace, nil)
	reportIsolation(log, cfg, userPIDNamespace, nil)
	if buf.Len() != 0 {
		t.Fatalf("logged with a namespace: %s", buf.String())
	}
	reportIsolation(log, cfg, processGroup, errors.New("pid-namespace: operation not permitted"))
	if got := buf.String(); !strings.Contains(got, "level=WARN") || !strings.Contains(got, "setsid") || !strings.Contains(got, "operation not permitted") {
		t.Fatalf("fallback logged %q; want a warning naming what escapes and why", got)
	}
}

// TestChooseIsolation_Unprivileged: a process without CAP_SYS_ADMIN gets a
// user namespace around the PID namespace, or the process group when user
// namespaces are not allowed, with the reason; never a refused clone.
func TestChooseIsolation_Unprivileged(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a copy of the test binary as nobody")
	}
	t.Parallel()
	// A copy nobody may run (go test's build directory is root's alone).
	dir, err := os.MkdirTemp("", "shell-probe")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "shell.test")
	if err := os.WriteFile(exe, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = []string{helperEnv + "=probe"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if errors.Is(err, os.ErrPermission) {
		t.Skipf("nobody cannot run the test binary: %v", err)
	}
	if err != nil {
		t.Fatalf("probe as nobody: %v: %s", err, out)
	}
	got := string(out)
	if !strings.HasPrefix(got, userPIDNamespace.String()+"\n") && !strings.HasPrefix(got, processGroup.String()+"\nerror: ") {
		t.Fatalf("probe as nobody chose %q", got)
	}
	t.Logf("as nobody: %s", got)
}
