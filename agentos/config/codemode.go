package config

import (
	"fmt"
	"github.com/agentryhq/agentry/offload"
	"reflect"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/agentryhq/agentry/codemode"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/tool"
	"github.com/agentryhq/agentry/tool/builtin"
)

// CodeMode turns on CodeMode for an agent or a team (package codemode): the
// model gets execute (and restart) and calls tools from code. In YAML:
// `code_mode: true`, or a mapping of the settings below. Zero values take
// codemode's defaults.
type CodeMode struct {
	Enabled bool `yaml:"enabled"`
	// Tools are callable from code. When empty, an agent's own `tools` move
	// into code (the model then sees execute and restart only).
	Tools            []Tool        `yaml:"tools"`
	AllowRestart     *bool         `yaml:"allow_restart"`
	CPUTimeLimit     time.Duration `yaml:"cpu_time_limit"`
	CellTimeout      time.Duration `yaml:"cell_timeout"`
	MemoryLimit      ByteSize      `yaml:"memory_limit"`
	MaxCallDepth     int           `yaml:"max_call_depth"`
	MaxOutputChars   int           `yaml:"max_output_chars"`
	MaxCodeBytes     int           `yaml:"max_code_bytes"`
	MaxToolCalls     int           `yaml:"max_tool_calls"`
	MaxParallelCalls int           `yaml:"max_parallel_calls"`
	MaxResultBytes   ByteSize      `yaml:"max_result_bytes"`
	IdleTTL          time.Duration `yaml:"idle_ttl"`
	MaxKernels       int           `yaml:"max_kernels"`
	// Busy is "wait" (default, up to busy_wait) or "refuse".
	Busy     string        `yaml:"busy"`
	BusyWait time.Duration `yaml:"busy_wait"`
	// Persist snapshots variables to the server's database.
	Persist          bool     `yaml:"persist"`
	MaxVariableBytes ByteSize `yaml:"max_variable_bytes"`
	MaxSnapshotBytes ByteSize `yaml:"max_snapshot_bytes"`
}

// codeModeKeys are the keys a code_mode mapping may use.
var codeModeKeys = func() []string {
	var keys []string
	t := reflect.TypeFor[CodeMode]()
	for i := range t.NumField() {
		keys = append(keys, t.Field(i).Tag.Get("yaml"))
	}
	return keys
}()

// UnmarshalYAML accepts true/false or a mapping (enabled unless it says
// enabled: false); unknown keys are errors.
func (c *CodeMode) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		var on bool
		if err := n.Decode(&on); err != nil {
			return fmt.Errorf("line %d: code_mode is true, false or a mapping of settings", n.Line)
		}
		*c = CodeMode{Enabled: on}
		return nil
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if key := n.Content[i]; !slices.Contains(codeModeKeys, key.Value) {
				return fmt.Errorf("line %d: field %s not found in code_mode (allowed: %s)", key.Line, key.Value, strings.Join(codeModeKeys, ", "))
			}
		}
		type plain CodeMode
		p := plain{Enabled: true}
		if err := n.Decode(&p); err != nil {
			return err
		}
		*c = CodeMode(p)
		return nil
	}
	return fmt.Errorf("line %d: code_mode is true, false or a mapping of settings", n.Line)
}

// on reports whether code mode is declared and enabled.
func (c *CodeMode) on() bool { return c != nil && c.Enabled }

// validate reports the invalid values of a code_mode block.
func (c *CodeMode) validate(bad func(string, ...any), where string) {
	if !c.on() {
		return
	}
	for _, t := range c.Tools {
		if t.Name == "" {
			bad("%s.code_mode.tools: a tool needs a name", where)
		} else if !builtin.Has(t.Name) {
			bad("%s.code_mode.tools: unknown tool %q (built-in tools: %s)", where, t.Name, strings.Join(builtin.Names(), ", "))
		}
		noToolReview(bad, where+".code_mode.tools", t)
	}
	if c.Busy != "" && c.Busy != string(codemode.BusyWait) && c.Busy != string(codemode.BusyRefuse) {
		bad("%s.code_mode.busy %q: use wait or refuse", where, c.Busy)
	}
	for name, v := range map[string]int64{"cpu_time_limit": int64(c.CPUTimeLimit), "cell_timeout": int64(c.CellTimeout),
		"memory_limit": int64(c.MemoryLimit), "max_call_depth": int64(c.MaxCallDepth), "max_output_chars": int64(c.MaxOutputChars),
		"max_code_bytes": int64(c.MaxCodeBytes), "max_tool_calls": int64(c.MaxToolCalls), "max_parallel_calls": int64(c.MaxParallelCalls),
		"max_result_bytes": int64(c.MaxResultBytes), "idle_ttl": int64(c.IdleTTL), "max_kernels": int64(c.MaxKernels),
		"busy_wait": int64(c.BusyWait), "max_variable_bytes": int64(c.MaxVariableBytes), "max_snapshot_bytes": int64(c.MaxSnapshotBytes)} {
		if v < 0 {
			bad("%s.code_mode.%s must not be negative", where, name)
		}
	}
}

// build makes the CodeMode of a component with id: tools are the tools
// callable from code; snapshots go to d under the namespace codemode/<id>.
// With off (the component's offload_tool_results), code reads the stored
// results through the `results` handle.
func (c *CodeMode) build(where, id string, d *db.DB, tools []tool.Tool, off *offload.Config) (*codemode.CodeMode, error) {
	if c.Persist && d == nil {
		return nil, fmt.Errorf("config: %s: code_mode.persist needs a database to store snapshots in", where)
	}
	cfg := codemode.Config{
		Tools: tools, CPUTimeLimit: c.CPUTimeLimit, CellTimeout: c.CellTimeout, MemoryLimit: int64(c.MemoryLimit),
		MaxCallDepth: c.MaxCallDepth, MaxOutputChars: c.MaxOutputChars, MaxCodeBytes: c.MaxCodeBytes,
		MaxToolCalls: c.MaxToolCalls, MaxParallelCalls: c.MaxParallelCalls, MaxResultBytes: int(c.MaxResultBytes),
		IdleTTL: c.IdleTTL, MaxKernels: c.MaxKernels, Busy: codemode.BusyPolicy(c.Busy), BusyWait: c.BusyWait,
		Persist: c.Persist, DB: d, Namespace: "codemode/" + id,
		MaxVariableBytes: int(c.MaxVariableBytes), MaxSnapshotBytes: int(c.MaxSnapshotBytes),
	}
	if c.AllowRestart != nil && !*c.AllowRestart {
		cfg.NoRestart = true
	}
	if off != nil && d != nil {
		o, err := offload.New(d, *off)
		if err != nil {
			return nil, fmt.Errorf("config: %s: offload_tool_results: %w", where, err)
		}
		cfg.Results = codemode.OffloadResults(o)
	}
	cm, err := codemode.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("config: %s: code_mode: %w", where, err)
	}
	return cm, nil
}

// builtinTools builds the named built-in tools.
func builtinTools(where string, decl []Tool) ([]tool.Tool, error) {
	var out []tool.Tool
	for _, t := range decl {
		tl, err := builtin.New(t.Name, t.Options)
		if err != nil {
			return nil, fmt.Errorf("config: %s: %w", where, err)
		}
		if t.HumanReview != nil {
			for i := range tl {
				tl[i] = reviewedTool{Tool: tl[i], r: *t.HumanReview}
			}
		}
		out = append(out, tl...)
	}
	return out, nil
}
