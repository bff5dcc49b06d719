// Package sessionline owns the session lines: the in-process order in which
// the runs (agents', teams', workflows') and the server's session edits of
// one session write its row.
//
// A run reads its session row when it starts and writes it when it saves:
// its session_state with the run's changes, its session_metrics with the
// run's tokens added. A run that wrote the row it read, plus its own
// changes, would drop what an overlapping run wrote in between. The line of
// a session keeps the last row written through it and lets one writer at a
// time compute and write the row; a run that read the session before
// another writer's write starts its own write from that newer row (rebase),
// with its state changes merged over it (MergeState).
//
// A line covers the writers of one *db.DB handle in this process, whatever
// agent, team or workflow they run for (agents built per request
// included). Processes that share a database do not see each other's
// lines: across them the last write of the session row wins, as in Agno.
package sessionline
