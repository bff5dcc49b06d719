package shell

import (
	"errors"
	"log/slog"
	"sync"
)

// isolation is how a command and everything it starts are kept together,
// so that all of it ends with the call.
type isolation int

const (
	// processGroup: the command leads a process group, killed whole. A
	// descendant that calls setsid (or double-forks into a daemon) leaves
	// the group and outlives the call.
	processGroup isolation = iota
	// pidNamespace: the command is the init of a new PID namespace; when it
	// exits or is killed, the kernel kills every process left in the
	// namespace before the exit is reported. Needs CAP_SYS_ADMIN.
	pidNamespace
	// userPIDNamespace: a pidNamespace inside a new user namespace that maps
	// only this process's uid and gid to themselves, for processes without
	// CAP_SYS_ADMIN where unprivileged user namespaces are allowed.
	userPIDNamespace
)

func (iso isolation) String() string {
	switch iso {
	case pidNamespace:
		return "pid-namespace"
	case userPIDNamespace:
		return "user-pid-namespace"
	default:
		return "process-group"
	}
}

// chooseIsolation is the strongest isolation this process may use, tried
// once per process (it starts a process that does not exec), and why the
// stronger ones are unavailable.
var chooseIsolation = sync.OnceValues(func() (isolation, error) {
	var errs []error
	for _, iso := range []isolation{pidNamespace, userPIDNamespace} {
		err := iso.check()
		if err == nil {
			return iso, nil
		}
		errs = append(errs, err)
	}
	return processGroup, errors.Join(errs...)
})

// isolationFor is the isolation of a toolkit's commands; it logs a warning
// for each toolkit made when they fall back to a process group.
func isolationFor(cfg Config) isolation {
	iso, err := chooseIsolation()
	reportIsolation(slog.Default(), cfg, iso, err)
	return iso
}

func reportIsolation(log *slog.Logger, cfg Config, iso isolation, err error) {
	if iso != processGroup {
		return
	}
	log.Warn("shell toolkit: commands cannot run in a PID namespace of their own here, so only their process group is killed when they end: a process they start in a new session (setsid, a daemon) can outlive the call; give agentry CAP_SYS_ADMIN or allow unprivileged user namespaces",
		"allowed_commands", cfg.AllowedCommands, "error", err)
}
