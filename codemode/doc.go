// Package codemode owns CodeMode: a sandboxed JavaScript interpreter (goja),
// one per session, in which the model writes code that calls the agent's
// tools as async functions, with CPU, memory, depth and output limits, idle
// eviction and optional snapshots of its variables in the project's database.
//
// An interpreter and its snapshot belong to the user of the run that made
// them ("" for a run without a user) and are reached by that user's runs
// only. Deleting a session is the caller's to tell CodeMode:
// CodeMode.ForgetSession(ctx, sessionID, ownerUserID) drops the session's
// interpreter and deletes its snapshot, and the user's latest state when
// that session saved it.
package codemode
