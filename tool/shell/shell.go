package shell

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentryhq/agentry/tool"
)

// ErrNotAllowed marks a command that is not on the allow-list.
var ErrNotAllowed = errors.New("shell: command not allowed")

// Defaults of Config's zero values.
const (
	DefaultTimeout   = 30 * time.Second
	DefaultMaxOutput = 16 << 10
	DefaultTail      = 100
	maxArgs          = 256
	maxArgBytes      = 64 << 10
)

// unsafeCommands would turn an allow-list into "run anything": shells,
// wrappers that run another program, interpreters (use CodeMode for code).
var unsafeCommands = []string{
	"sh", "bash", "zsh", "dash", "ksh", "csh", "tcsh", "fish", "busybox", "env", "sudo", "su", "doas",
	"xargs", "nohup", "timeout", "nice", "exec", "eval", "command", "script", "ssh",
	// Each runs the program named in its arguments (with a new session,
	// root directory, namespace, lock, priority, CPU set, identity or
	// tracer), so allowing one allows every program.
	"setsid", "stdbuf", "chroot", "unshare", "nsenter", "flock", "chrt", "ionice", "taskset",
	"setpriv", "runuser", "strace", "ltrace", "gdb", "watch", "parallel", "time", "unbuffer",
	"python", "python3", "perl", "ruby", "node", "php", "lua", "osascript", "pwsh", "powershell",
	"rbash", "ash", "mksh", "yash", "nodejs", "pypy", "tclsh", "wish", "expect", "deno", "bun", "Rscript",
}

// multiCall programs act as the program their link is named for (Alpine's
// ls is a link to busybox, and runs as ls): their links are judged by name.
var multiCall = []string{"busybox", "toybox"}

// unsafeName reports the name under which the program named c (found at
// path) is in unsafeCommands: its own name or, for a link, its target's
// (sh is often a link to dash, nodejs to node), either without a version
// suffix (python3.11, perl5.36.0, lua5.4).
func unsafeName(c, path string) (string, bool) {
	names := []string{filepath.Base(c)}
	if target, err := filepath.EvalSymlinks(path); err == nil && !slices.Contains(multiCall, filepath.Base(target)) {
		names = append(names, filepath.Base(target))
	}
	for _, n := range names {
		for _, v := range []string{n, strings.TrimRight(n, "0123456789.")} {
			if slices.Contains(unsafeCommands, v) {
				return v, true
			}
		}
	}
	return "", false
}

// Config configures the shell toolkit. The zero value is refused: the
// toolkit is off until AllowedCommands names at least one program.
type Config struct {
	// AllowedCommands are program names (looked up in PATH once, at New) or
	// absolute paths the model may run as args[0]. Shells, interpreters and
	// wrappers are refused; but many ordinary programs also run code named
	// in their arguments (git -c alias.x='!cmd', find -exec, awk's system,
	// GNU sed's e, tar --to-command, make): allowing one of them allows
	// every program, so list only programs whose arguments cannot do that.
	AllowedCommands []string
	// Dir is the working directory of every command (default: the process's).
	Dir string
	// Env is the whole environment of the commands, as KEY=value; empty means
	// only PATH, HOME and LANG of this process (secrets in its environment
	// stay out of reach).
	Env []string
	// Timeout bounds one command. When the program exits or times out,
	// everything it started is killed: on Linux the program runs as the
	// init of a PID namespace of its own (a user namespace too when not
	// privileged), whose processes the kernel kills with it. Where
	// namespaces are not allowed (New logs a warning), only the program's
	// process group is killed, and a process it started in a new session
	// (setsid, a daemon's double fork) outlives the call.
	//
	// In a namespace the program's pid is 1, /proc still shows this host's
	// processes, and signals it does not handle are ignored when they come
	// from inside the namespace (as for any init).
	Timeout time.Duration
	// MaxOutput caps what is kept of stdout and of stderr (the last bytes).
	MaxOutput int
}

type runIn struct {
	Args []string `json:"args" jsonschema:"the command and its arguments, e.g. [\"ls\", \"-l\", \"docs\"]; no shell syntax"`
	Tail int      `json:"tail,omitempty" jsonschema:"number of last output lines to return; default 100"`
}

// Result is what run_shell_command returns.
type Result struct {
	ExitCode  int    `json:"exit_code"`
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
}

type runner struct {
	cfg   Config
	paths map[string]string // allowed name -> resolved path
	iso   isolation
}

// New checks the allow-list and returns the "shell_tools" toolkit. Where
// PID namespaces are not allowed it logs a warning: commands then run in a
// process group only (see Config.Timeout).
func New(cfg Config) (tool.Toolkit, error) {
	return newToolkit(cfg, isolationFor)
}

// newToolkit is New with the isolation chosen by isolate, once the
// configuration was checked.
func newToolkit(cfg Config, isolate func(Config) isolation) (tool.Toolkit, error) {
	r, err := newRunner(cfg, isolate)
	if err != nil {
		return tool.Toolkit{}, err
	}
	t, err := tool.Func(tool.FuncConfig{
		Name: "run_shell_command",
		Description: fmt.Sprintf("Runs one program with arguments, without a shell (no pipes, redirects, globbing or $variables). Allowed programs: %s. Returns JSON with exit_code, stdout and stderr.",
			strings.Join(cfg.AllowedCommands, ", ")),
		// The runner enforces its own timeout (it must kill the process
		// group); the tool's is a backstop.
		Timeout: r.cfg.Timeout + 5*time.Second,
	}, r.run)
	if err != nil {
		return tool.Toolkit{}, err
	}
	return tool.Toolkit{Name: "shell_tools", Tools: []tool.Tool{t}}, nil
}

func newRunner(cfg Config, isolate func(Config) isolation) (*runner, error) {
	if len(cfg.AllowedCommands) == 0 {
		return nil, errors.New("shell: off unless allowed_commands lists the programs the agent may run")
	}
	r := &runner{cfg: cfg, paths: map[string]string{}}
	for _, c := range cfg.AllowedCommands {
		if slices.Contains(unsafeCommands, filepath.Base(c)) {
			return nil, fmt.Errorf("shell: %q cannot be allowed: it runs other programs or code, which defeats the allow-list (for code, use CodeMode)", c)
		}
		if strings.ContainsAny(c, " \t\n") || c == "" {
			return nil, fmt.Errorf("shell: allowed command %q must be one program name without arguments", c)
		}
		p, err := exec.LookPath(c)
		if err != nil {
			return nil, fmt.Errorf("shell: allowed command %q not found: %w", c, err)
		}
		if name, bad := unsafeName(c, p); bad {
			return nil, fmt.Errorf("shell: %q cannot be allowed: it is %s, which runs other programs or code and defeats the allow-list (for code, use CodeMode)", c, name)
		}
		if p, err = filepath.Abs(p); err != nil {
			return nil, err
		}
		r.paths[c] = p
	}
	for _, kv := range cfg.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return nil, fmt.Errorf("shell: env entry %q: write KEY=value", kv)
		}
	}
	if cfg.Dir != "" {
		if st, err := os.Stat(cfg.Dir); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("shell: dir %q is not a directory", cfg.Dir)
		}
	}
	r.iso = isolate(cfg)
	if r.cfg.Timeout <= 0 {
		r.cfg.Timeout = DefaultTimeout
	}
	if r.cfg.MaxOutput <= 0 {
		r.cfg.MaxOutput = DefaultMaxOutput
	}
	if len(r.cfg.Env) == 0 {
		for _, k := range []string{"PATH", "HOME", "LANG"} {
			if v, ok := os.LookupEnv(k); ok {
				r.cfg.Env = append(r.cfg.Env, k+"="+v)
			}
		}
	}
	return r, nil
}

func (r *runner) run(parent context.Context, in runIn) (Result, error) {
	if len(in.Args) == 0 {
		return Result{}, errors.New("args is empty: give the program and its arguments, e.g. [\"ls\", \"-l\"]")
	}
	if len(in.Args) > maxArgs {
		return Result{}, fmt.Errorf("%d arguments: at most %d", len(in.Args), maxArgs)
	}
	size := 0
	for _, a := range in.Args {
		if strings.IndexByte(a, 0) >= 0 {
			return Result{}, errors.New("an argument contains a NUL byte")
		}
		size += len(a)
	}
	if size > maxArgBytes {
		return Result{}, fmt.Errorf("arguments are %d bytes: at most %d", size, maxArgBytes)
	}
	path, ok := r.paths[in.Args[0]]
	if !ok {
		return Result{}, fmt.Errorf("%w: %q; allowed: %s (run one program, without shell syntax)", ErrNotAllowed, in.Args[0], strings.Join(r.cfg.AllowedCommands, ", "))
	}
	tail := in.Tail
	if tail == 0 {
		tail = DefaultTail
	}
	if tail < 0 {
		return Result{}, fmt.Errorf("tail %d: use a positive number of lines", tail)
	}
	ctx, cancel := context.WithTimeout(parent, r.cfg.Timeout)
	defer cancel()
	cmd := exec.Command(path, in.Args[1:]...)
	cmd.Args[0] = in.Args[0]
	cmd.Dir = r.cfg.Dir
	cmd.Env = r.cfg.Env
	stdout, stderr := &tailBuffer{max: r.cfg.MaxOutput}, &tailBuffer{max: r.cfg.MaxOutput}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// The program leads a process group and, where allowed, is the init of
	// a PID namespace of its own, so that nothing it starts outlives it.
	cmd.SysProcAttr = r.iso.sysProcAttr()
	// A process still holding the output pipes after the program and its
	// group were killed (one in a new session, without a namespace) is
	// given this long, then the pipes are closed.
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return Result{}, fmt.Errorf("running %s: %w", in.Args[0], err)
	}
	timedOut, err := waitKilled(ctx, cmd)
	if timedOut && parent.Err() != nil {
		return Result{}, fmt.Errorf("%s was killed: the call ended: %w", in.Args[0], context.Cause(parent))
	}
	if timedOut {
		// What it wrote before it was killed often says why it hung (a
		// prompt waiting for input, a retry loop): the model gets its
		// last lines with the error.
		return Result{}, fmt.Errorf("%s did not finish within %s and was killed%s", in.Args[0], r.cfg.Timeout, lastOutput(stdout, stderr, tail))
	}
	res := Result{ExitCode: 0, Truncated: stdout.cut || stderr.cut}
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		res.ExitCode = exitErr.ExitCode()
	case errors.Is(err, exec.ErrWaitDelay):
		// The program exited 0; a child kept the pipes open until killed.
		res.ExitCode = cmd.ProcessState.ExitCode()
	case err != nil:
		return Result{}, fmt.Errorf("running %s: %w", in.Args[0], err)
	}
	var cut bool
	res.Stdout, cut = lastLines(stdout.String(), tail)
	res.Truncated = res.Truncated || cut
	res.Stderr, cut = lastLines(stderr.String(), tail)
	res.Truncated = res.Truncated || cut
	return res, nil
}

// lastOutput is the last tail lines of a killed program's stdout and
// stderr, for its error ("" when it wrote nothing).
func lastOutput(stdout, stderr *tailBuffer, tail int) string {
	var b strings.Builder
	for _, o := range []struct {
		name string
		buf  *tailBuffer
	}{{"stdout", stdout}, {"stderr", stderr}} {
		if text, _ := lastLines(o.buf.String(), tail); text != "" {
			fmt.Fprintf(&b, "; its last %s:\n%s", o.name, strings.TrimRight(text, "\n"))
		}
	}
	return b.String()
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	buf []byte
	cut bool
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= b.max {
		b.buf = append(b.buf[:0], p[len(p)-b.max:]...)
		b.cut = true
		return n, nil
	}
	if over := len(b.buf) + len(p) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
		b.cut = true
	}
	b.buf = append(b.buf, p...)
	return n, nil
}

// String is the text kept; when the start was cut, without the last bytes
// of a UTF-8 character whose first bytes were cut (they would read as
// U+FFFD).
func (b *tailBuffer) String() string {
	buf := b.buf
	if b.cut {
		i := 0
		for i < len(buf) && i < utf8.UTFMax-1 && !utf8.RuneStart(buf[i]) {
			i++
		}
		buf = buf[i:]
	}
	return strings.ToValidUTF8(string(buf), "\uFFFD")
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) (string, bool) {
	trimmed := strings.TrimSuffix(s, "\n")
	if trimmed == "" {
		return s, false
	}
	lines := strings.Split(trimmed, "\n")
	if len(lines) <= n {
		return s, false
	}
	return strings.Join(lines[len(lines)-n:], "\n") + "\n", true
}
