package codemode

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/tool"
)

// Defaults of Config's zero values.
const (
	DefaultCPUTimeLimit     = 5 * time.Second
	DefaultCellTimeout      = 60 * time.Second
	DefaultMemoryLimit      = 64 << 20
	DefaultMaxCallDepth     = 1000
	DefaultMaxOutputChars   = 16_000
	DefaultMaxCodeBytes     = 100_000
	DefaultMaxToolCalls     = 256
	DefaultMaxParallelCalls = 16
	DefaultMaxResultBytes   = 1_000_000
	DefaultIdleTTL          = 15 * time.Minute
	DefaultMaxKernels       = 64
	DefaultBusyWait         = 5 * time.Second
	DefaultMaxVariableBytes = 1 << 20
	DefaultMaxSnapshotBytes = 4 << 20
	DefaultNamespace        = "codemode"
)

// BusyPolicy says what execute does while the session's interpreter runs
// another cell.
type BusyPolicy string

// Busy policies.
const (
	// BusyWait waits up to Config.BusyWait for the running cell, then refuses.
	BusyWait BusyPolicy = "wait"
	// BusyRefuse refuses at once.
	BusyRefuse BusyPolicy = "refuse"
)

// Config configures CodeMode. Zero values take the documented defaults.
type Config struct {
	// Tools are callable from code as async functions (handles). They are not
	// given to the model directly: give the model CodeMode's Tools().
	Tools []tool.Tool
	// Results, when set, backs the `results` handle that reads offloaded tool
	// results; nil leaves the handle answering that offloading is off.
	Results Results
	// NoRestart leaves out the restart tool.
	NoRestart bool

	// CPUTimeLimit bounds the time one cell spends running JavaScript (time
	// awaiting tool calls does not count); default 5s.
	CPUTimeLimit time.Duration
	// CellTimeout bounds one cell's wall-clock time, tool calls included;
	// default 60s.
	CellTimeout time.Duration
	// MemoryLimit is the heap a cell may grow by, and sizes the string and
	// array limits of the sandbox's builtins; default 64 MiB.
	MemoryLimit int64
	// MaxCallDepth caps JavaScript call depth (recursion); default 1000.
	MaxCallDepth int
	// MaxOutputChars caps a cell's stdout and its result, each; default 16,000.
	MaxOutputChars int
	// MaxCodeBytes caps the size of a cell's code; default 100,000.
	MaxCodeBytes int
	// MaxToolCalls caps the tool calls one cell makes; default 256.
	MaxToolCalls int
	// MaxParallelCalls caps the tool calls of one cell running at once;
	// default 16 (more wait their turn).
	MaxParallelCalls int
	// MaxResultBytes caps a tool result handed to code; default 1,000,000.
	MaxResultBytes int

	// IdleTTL evicts a session's interpreter after this long unused; default
	// 15 min.
	IdleTTL time.Duration
	// MaxKernels caps the interpreters held at once; past it the least
	// recently used idle one is evicted. Default 64.
	MaxKernels int
	// Busy is the policy while a session's interpreter runs a cell; default
	// BusyWait, waiting up to BusyWait (default 5s).
	Busy     BusyPolicy
	BusyWait time.Duration

	// Persist snapshots the session's JSON-serialisable variables (functions
	// as source) to DB after every successful cell and restores them when the
	// session's interpreter starts again (after a restart of the server, an
	// idle eviction, or in another session of the same user).
	Persist bool
	DB      *db.DB
	// Namespace is the file namespace of the snapshots; default "codemode".
	// Give each CodeMode sharing a database its own (the agent id, say).
	Namespace string
	// MaxVariableBytes skips a variable whose JSON is larger (default 1 MiB);
	// MaxSnapshotBytes caps the whole snapshot (default 4 MiB).
	MaxVariableBytes int
	MaxSnapshotBytes int

	// Logger receives warnings (failed snapshot writes); default slog.Default().
	Logger *slog.Logger
}

// withDefaults validates c and fills its zero values.
func (c Config) withDefaults() (Config, error) {
	var errs []error
	neg := func(name string, v int64) {
		if v < 0 {
			errs = append(errs, fmt.Errorf("codemode: %s must not be negative, got %d", name, v))
		}
	}
	neg("CPUTimeLimit", int64(c.CPUTimeLimit))
	neg("CellTimeout", int64(c.CellTimeout))
	neg("MemoryLimit", c.MemoryLimit)
	neg("MaxCallDepth", int64(c.MaxCallDepth))
	neg("MaxOutputChars", int64(c.MaxOutputChars))
	neg("MaxCodeBytes", int64(c.MaxCodeBytes))
	neg("MaxToolCalls", int64(c.MaxToolCalls))
	neg("MaxParallelCalls", int64(c.MaxParallelCalls))
	neg("MaxResultBytes", int64(c.MaxResultBytes))
	neg("IdleTTL", int64(c.IdleTTL))
	neg("MaxKernels", int64(c.MaxKernels))
	neg("BusyWait", int64(c.BusyWait))
	neg("MaxVariableBytes", int64(c.MaxVariableBytes))
	neg("MaxSnapshotBytes", int64(c.MaxSnapshotBytes))
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	defDur := func(p *time.Duration, v time.Duration) {
		if *p == 0 {
			*p = v
		}
	}
	defDur(&c.CPUTimeLimit, DefaultCPUTimeLimit)
	defDur(&c.CellTimeout, DefaultCellTimeout)
	defDur(&c.IdleTTL, DefaultIdleTTL)
	defDur(&c.BusyWait, DefaultBusyWait)
	if c.MemoryLimit == 0 {
		c.MemoryLimit = DefaultMemoryLimit
	}
	def(&c.MaxCallDepth, DefaultMaxCallDepth)
	def(&c.MaxOutputChars, DefaultMaxOutputChars)
	def(&c.MaxCodeBytes, DefaultMaxCodeBytes)
	def(&c.MaxToolCalls, DefaultMaxToolCalls)
	def(&c.MaxParallelCalls, DefaultMaxParallelCalls)
	def(&c.MaxResultBytes, DefaultMaxResultBytes)
	def(&c.MaxKernels, DefaultMaxKernels)
	def(&c.MaxVariableBytes, DefaultMaxVariableBytes)
	def(&c.MaxSnapshotBytes, DefaultMaxSnapshotBytes)
	if c.MemoryLimit > 0 && c.MemoryLimit < 1<<20 {
		errs = append(errs, fmt.Errorf("codemode: MemoryLimit must be at least 1 MiB, got %d bytes", c.MemoryLimit))
	}
	switch c.Busy {
	case "":
		c.Busy = BusyWait
	case BusyWait, BusyRefuse:
	default:
		errs = append(errs, fmt.Errorf("codemode: Busy %q: use %q or %q", c.Busy, BusyWait, BusyRefuse))
	}
	if c.Namespace == "" {
		c.Namespace = DefaultNamespace
	}
	if len(c.Namespace) > db.MaxFileNamespace {
		errs = append(errs, fmt.Errorf("codemode: Namespace is limited to %d bytes", db.MaxFileNamespace))
	}
	if c.Persist && c.DB == nil {
		errs = append(errs, errors.New("codemode: Persist needs Config.DB (the database the snapshots are stored in)"))
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, errors.Join(errs...)
}
