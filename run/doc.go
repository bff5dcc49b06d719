// Package run owns the vocabulary shared by agent, team and workflow runs:
// RunOutput (in Agno's run_data field names), RunStatus, run inputs, streamed
// events with Agno's names, tool executions and requirements of paused runs.
package run
