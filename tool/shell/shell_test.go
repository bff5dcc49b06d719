package shell

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/tool"
)

func newSet(t *testing.T, cfg Config) *tool.Set {
	t.Helper()
	kit, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	set, err := tool.NewSet(nil, kit)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func run(t *testing.T, set *tool.Set, args string) (tool.Result, Result) {
	t.Helper()
	res := set.Execute(context.Background(), model.ToolCall{ID: "c", Name: "run_shell_command", Arguments: args})
	var out Result
	if res.Err == nil {
		if err := json.Unmarshal([]byte(res.Content), &out); err != nil {
			t.Fatalf("result %q: %v", res.Content, err)
		}
	}
	return res, out
}

var allowed = []string{"echo", "seq", "sleep", "ls", "printenv"}

func TestShell_RunsAllowedProgramsWithoutAShell(t *testing.T) {
	t.Parallel()
	set := newSet(t, Config{AllowedCommands: allowed, Dir: t.TempDir()})
	res, out := run(t, set, `{"args":["echo","hello","world"]}`)
	if res.Err != nil || out.ExitCode != 0 || out.Stdout != "hello world\n" {
		t.Fatalf("echo: %s %v", res.Content, res.Err)
	}
	// Shell syntax reaches the program as plain text: nothing is interpolated.
	res, out = run(t, set, `{"args":["echo","$(id)","`+"`id`"+`","$HOME","*",";","rm","-rf","/","|","cat"]}`)
	if res.Err != nil || out.Stdout != "$(id) `id` $HOME * ; rm -rf / | cat\n" {
		t.Fatalf("interpolation happened: %s %v", res.Content, res.Err)
	}
	res, out = run(t, set, `{"args":["ls","/no/such/dir"]}`)
	if res.Err != nil || out.ExitCode == 0 || !strings.Contains(out.Stderr, "No such file") {
		t.Fatalf("failing command: %s %v", res.Content, res.Err)
	}
}

func TestShell_BadInput(t *testing.T) {
	t.Parallel()
	set := newSet(t, Config{AllowedCommands: allowed, Timeout: 300 * time.Millisecond, MaxOutput: 4096})
	tests := []struct{ name, args, wantErr string }{
		{"a shell", `{"args":["sh","-c","id"]}`, "not allowed"},
		{"bash", `{"args":["bash","-c","echo pwned > /tmp/pwned"]}`, "not allowed"},
		{"shell syntax in the program name", `{"args":["echo hi; id"]}`, "not allowed"},
		{"a path to an allowed program", `{"args":["/bin/echo","x"]}`, "not allowed"},
		{"traversal to a shell", `{"args":["../../../bin/sh"]}`, "not allowed"},
		{"empty args", `{"args":[]}`, "args is empty"},
		{"NUL in an argument", `{"args":["echo","a\u0000b"]}`, "NUL"},
		{"too many arguments", `{"args":["echo"` + strings.Repeat(`,"x"`, 300) + `]}`, "at most 256"},
		{"negative tail", `{"args":["echo","x"],"tail":-1}`, "positive"},
		{"args not a list", `{"args":"ls -l"}`, "invalid arguments"},
		{"too slow", `{"args":["sleep","10"]}`, "killed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := run(t, set, tc.args)
			if res.Err == nil || !strings.Contains(res.Content, tc.wantErr) {
				t.Fatalf("content %q, err %v; want an error containing %q", res.Content, res.Err, tc.wantErr)
			}
		})
	}
}

// A program killed at the timeout returned only the error: what it had
// written (often why it hung) was lost.
func TestShell_TimeoutErrorShowsTheLastOutput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	if err := os.WriteFile(log, []byte("starting\nwaiting for the lock held by pid 42\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	set := newSet(t, Config{AllowedCommands: []string{"tail"}, Timeout: 300 * time.Millisecond, MaxOutput: 4096})
	res, _ := run(t, set, `{"args":["tail","-n","1","-f",`+strconv.Quote(log)+`],"tail":5}`)
	if res.Err == nil || !strings.Contains(res.Content, "killed") || !strings.Contains(res.Content, "waiting for the lock held by pid 42") {
		t.Fatalf("content %q, err %v; want the kill and the program's last line", res.Content, res.Err)
	}
	if strings.Contains(res.Content, "starting") {
		t.Errorf("more than the program wrote in its last line: %q", res.Content)
	}
}

func TestShell_HugeOutputKeepsTheTail(t *testing.T) {
	t.Parallel()
	set := newSet(t, Config{AllowedCommands: allowed, MaxOutput: 4096})
	res, out := run(t, set, `{"args":["seq","1","1000000"],"tail":5}`)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if out.Stdout != "999996\n999997\n999998\n999999\n1000000\n" || !out.Truncated {
		t.Errorf("stdout %q, truncated %v", out.Stdout, out.Truncated)
	}
	if len(res.Content) > 4096+200 {
		t.Errorf("returned %d bytes", len(res.Content))
	}
}

func TestShell_EnvironmentHoldsNoSecrets(t *testing.T) {
	t.Setenv("AGENTRY_TEST_SECRET_TOKEN", "hunter2")
	set := newSet(t, Config{AllowedCommands: allowed})
	res, out := run(t, set, `{"args":["printenv"]}`)
	if res.Err != nil || strings.Contains(out.Stdout, "hunter2") || !strings.Contains(out.Stdout, "PATH=") {
		t.Errorf("environment: %s %v", res.Content, res.Err)
	}
}

func TestNew_RefusesUnsafeAllowLists(t *testing.T) {
	t.Parallel()
	for _, cmds := range [][]string{nil, {"bash"}, {"/bin/sh"}, {"env"}, {"python3"}, {"xargs"}, {"ls -l"}, {"no-such-program-xyz"}} {
		if _, err := New(Config{AllowedCommands: cmds}); err == nil {
			t.Errorf("allowed_commands %q accepted", cmds)
		}
	}
	// Wrappers that run the program named in their arguments are refused
	// for that reason, whether or not this machine has them.
	for _, c := range []string{"setsid", "stdbuf", "chroot", "unshare", "nsenter", "flock", "chrt", "ionice",
		"taskset", "setpriv", "runuser", "strace", "gdb", "watch", "/usr/bin/setsid"} {
		if _, err := New(Config{AllowedCommands: []string{"ls", c}}); err == nil || !strings.Contains(err.Error(), "cannot be allowed") {
			t.Errorf("allowed_commands [ls %s]: %v", c, err)
		}
	}
	if _, err := New(Config{AllowedCommands: []string{"ls"}, Dir: "/no/such/dir"}); err == nil {
		t.Error("missing dir accepted")
	}
}

// The refusal of shells and interpreters went by the exact name given:
// a versioned name (python3.11, perl5.36.0, lua5.4, the names Debian
// installs) or a link to a shell under another name (rbash, nodejs, or
// one the operator made) was allowed, and with it every program.
func TestNew_RefusesInterpretersUnderOtherNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sh, err := filepath.EvalSymlinks("/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	trueBin, err := exec.LookPath("true")
	if err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"python3.11": trueBin, "perl5.36.0": trueBin, "lua5.4": trueBin, "nodejs": trueBin,
		"lister": sh, // a shell under a harmless name
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
		c := filepath.Join(dir, name)
		if _, err := New(Config{AllowedCommands: []string{"ls", c}}); err == nil || !strings.Contains(err.Error(), "cannot be allowed") {
			t.Errorf("allowed_commands [ls %s] (-> %s): err = %v, want refused", name, target, err)
		}
	}
	// A multi-call binary's link runs as the program it is named for
	// (Alpine's ls is a link to busybox).
	busybox := filepath.Join(dir, "busybox")
	if b, err := os.ReadFile(trueBin); err != nil || os.WriteFile(busybox, b, 0o755) != nil {
		t.Fatalf("copying %s: %v", trueBin, err)
	}
	if err := os.Symlink(busybox, filepath.Join(dir, "ls")); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{AllowedCommands: []string{filepath.Join(dir, "ls")}}); err != nil {
		t.Errorf("ls linked to busybox refused: %v", err)
	}
	// Ordinary programs with digits in their names stay allowed.
	if err := os.Symlink(trueBin, filepath.Join(dir, "sha256sum")); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{AllowedCommands: []string{filepath.Join(dir, "sha256sum"), "ls"}}); err != nil {
		t.Errorf("sha256sum refused: %v", err)
	}
}

// Output cut to its last max_output bytes inside a UTF-8 character starts
// after that character instead of with U+FFFD.
func TestShell_CutOutputStartsOnACharacter(t *testing.T) {
	t.Parallel()
	for max, want := range map[int]string{4: "€\n", 5: "€\n", 6: "é€\n", 7: "cé€\n", 8: "bcé€\n"} {
		set := newSet(t, Config{AllowedCommands: allowed, MaxOutput: max})
		res, out := run(t, set, `{"args":["echo","abcé€"]}`)
		if res.Err != nil || out.Stdout != want || !out.Truncated {
			t.Errorf("max_output %d: %q (truncated %v), %v; want %q", max, out.Stdout, out.Truncated, res.Err, want)
		}
	}
}
