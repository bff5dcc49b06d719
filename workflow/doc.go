// Package workflow runs steps in sequence, each by an agent.Runner (an agent,
// a team, another workflow or a kind of its own), each
// step's input being the previous step's output. A workflow run is stored as
// one run (run_type workflow) plus the steps' runs (parent_run_id = it).
//
// Only sequential steps exist: Agno's Loop, Parallel, Condition, Router and
// human review steps are out of scope for now, as is continuing a paused
// step (a step that pauses fails the workflow run).
package workflow
