// Package workflow runs workflows: trees of Agno 3.0's primitives (Step, Steps,
// Loop, Parallel, Condition, Router) over agents, teams, other workflows and Go
// functions, with a session state shared by the steps and HumanReview pauses
// continued from a journal (ContinueRun), also after a restart. A workflow
// run is stored as one run (run_type workflow, step_results in Agno's shape)
// plus its steps' runs (parent_run_id = it); a paused run's requirements are
// also rows of agno_approvals.
package workflow
