// Command agentry is Agentry's CLI: `serve` (the AgentOS server), `run` (one agent
// run from flags or an agent file), `runs` and `sessions` (read stored runs),
// `migrate` (upgrade Agno 2.x databases) and `version`.
package main
