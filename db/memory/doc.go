// Package memory is an in-memory db.Driver for tests and demos. It keeps
// sessions, runs and memories in maps behind one lock, with the same semantics
// as the SQL drivers (user scope, run_index assignment, cascade) and no persistence.
package memory
