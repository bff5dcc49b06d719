// Command agentry is Agentry's CLI: `serve` (the AgentOS server), `run` (one agent
// run from flags or an agent file), `runs` (list and read stored runs), `migrate`
// (upgrade Agno 2.x databases: up, down, status, cleanup), `loadtest` (drive a
// local server's run route) and `version`.
package main
