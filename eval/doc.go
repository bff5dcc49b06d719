// Package eval owns evaluations of agents, teams and workflows, in Agno 3.0's
// four kinds: accuracy (a judge model scores outputs against an expected
// answer), performance (latency and memory over warmups and iterations),
// reliability (expected tool calls made, forbidden ones not) and
// agent-as-judge (criteria, pass/fail with reasoning). Each result stores as
// one agno_eval_runs row keyed by run_id, with eval_data and eval_input in
// Agno's field names, so a Python Agno process reads them; Cases runs a YAML
// file of cases for `agentry eval`.
package eval
