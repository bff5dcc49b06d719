// Package memory is an in-memory db.Driver for tests and demos. It keeps
// sessions, runs and memories in maps behind one lock, with the same semantics
// as the SQL drivers (user scope, run_index assignment, cascade) and no persistence.
//
// Stored runs are immutable values: a save copies run_data once (and skips
// the JSON check for rows db.RunFromOutput encoded), an update stores a new
// value, and reads share run_data instead of copying it, so reading a long
// history costs no copies. Returned run_data is read-only.
package memory
