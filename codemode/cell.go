package codemode

import (
	"encoding/json"
	"strconv"
)

// Status is how a cell ended.
type Status string

// Cell statuses.
const (
	// StatusOK: the cell ran to the end.
	StatusOK Status = "ok"
	// StatusError: the code threw (or a promise it left rejected was never
	// handled); Error says what and where.
	StatusError Status = "error"
	// StatusAborted: the sandbox stopped the cell (CPU time, memory, call
	// depth, timeout, restart, cancellation); Error.Reason says which.
	StatusAborted Status = "aborted"
)

// Abort reasons (CellError.Reason).
const (
	ReasonCPUTime   = "cpu_time"
	ReasonMemory    = "memory"
	ReasonCallDepth = "call_depth"
	ReasonTimeout   = "timeout"
	ReasonCancelled = "cancelled"
	ReasonRestart   = "restart"
	ReasonInternal  = "internal"
)

// Cell is what one execute returns (JSON-encoded for the model).
type Cell struct {
	Stdout string `json:"stdout"`
	// Result is the JSON of the cell's last expression (or returned value);
	// absent when it is undefined.
	Result json.RawMessage `json:"result,omitempty"`
	Error  *CellError      `json:"error,omitempty"`
	Status Status          `json:"status"`
	// Truncated is set when stdout or the result was cut at the output cap
	// (an error's message and stack are cut there too, marked "…").
	Truncated      bool `json:"truncated"`
	ExecutionCount int  `json:"execution_count"`
	// Notice tells the model about its environment: state restored from a
	// snapshot, or reset.
	Notice string `json:"notice,omitempty"`
}

// CellError describes why a cell did not end ok.
type CellError struct {
	Name    string `json:"name,omitempty"`
	Message string `json:"message"`
	// Stack has "cell[N]:line:column" positions in the cell's own lines
	// (columns in UTF-16 code units, as JavaScript counts); a position in
	// a cell older than the last 64 is "cell[N]:line". A function restored
	// from a saved state has "saved[name]:line:column" positions in its own
	// source.
	Stack string `json:"stack,omitempty"`
	// Reason is set for aborted cells.
	Reason string `json:"reason,omitempty"`
}

// JSON returns the cell as the model sees it.
func (c *Cell) JSON() string {
	b, _ := json.Marshal(c)
	return string(b)
}

// cellName names a cell's code in positions and stacks.
func cellName(n int) string { return "cell[" + strconv.Itoa(n) + "]" }
