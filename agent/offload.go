package agent

import (
	"errors"
	"fmt"
	"slices"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/offload"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// newOffloader builds the offloader of Config.OffloadToolResults, refusing
// a configuration that cannot work.
func newOffloader(c *Config) (*offload.Offloader, error) {
	if c.OffloadToolResults == nil {
		return nil, nil
	}
	if c.DB == nil {
		return nil, errors.New("agent: OffloadToolResults needs Config.DB (results are stored in its agno_fs and agno_tool_results tables)")
	}
	for _, t := range c.Tools {
		if n := t.Definition().Name; n == offload.ReadToolName || n == offload.SearchToolName {
			return nil, fmt.Errorf("agent: a tool is named %q, which OffloadToolResults adds; rename it", n)
		}
	}
	off, err := offload.New(c.DB, *c.OffloadToolResults)
	if err != nil {
		return nil, fmt.Errorf("agent: OffloadToolResults: %w", err)
	}
	return off, nil
}

// toolsWithOffload returns the agent's tools plus the memory tools and the
// offload tools when they are on.
func (a *Agent) toolsWithOffload() []tool.Tool {
	tools := a.conf().Tools
	if a.mem != nil && len(a.mem.tools) > 0 {
		tools = append(slices.Clip(tools), a.mem.tools...)
	}
	if a.off == nil {
		return tools
	}
	return append(slices.Clip(tools), a.off.Tools()...)
}

// offloadResult replaces an oversized successful result by its envelope (in
// the tool message and the stored run alike). Output that is not text is
// replaced by a tool error; a store that refuses leaves a stored="false"
// envelope and the run goes on.
func (st *state) offloadResult(call *model.ToolCall, exec *run.ToolExecution) {
	off := st.offloader()
	if off == nil || exec.ToolCallError || call.Name == offload.ReadToolName || call.Name == offload.SearchToolName {
		return
	}
	out, err := off.Offload(st.ctx, offload.Call{Scope: st.offloadScope(), ToolCallID: call.ID, ToolName: call.Name, Args: call.Arguments}, exec.Result)
	if err != nil {
		exec.Result, exec.ToolCallError = fmt.Sprintf("tool %s returned output that cannot be given to the model: %v", call.Name, err), true
		return
	}
	exec.Result = out.Content
}

func (st *state) offloadScope() offload.Scope {
	return offload.Scope{SessionID: st.out.SessionID, RunID: st.out.RunID, UserID: st.out.UserID}
}
