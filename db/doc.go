// Package db owns storage contracts: session, run and memory records in Agno 3.0's
// layout, filters, the per-user scope carried in context, sentinel errors, the
// small Driver interfaces each backend implements and DB, the concrete front that
// validates every call (limits, pages, sort columns) before a driver sees it
// and bounds it with the query timeout (bound.go; the deadlines of a DB's
// calls wait in one queue under one timer, deadlines.go).
package db
