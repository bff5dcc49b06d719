// Package team runs a team of agents in Agno's default "coordinate" mode: a
// leader model delegates tasks to member agents through tools and answers
// from their results. Team runs are stored as one team run plus one run per
// member call (parent_run_id = the team run).
package team
