// Package testdbs opens a fresh database on every SQL driver for tests of
// packages built on the db (agentfs, offload): SQLite in a temp dir, and
// Postgres and MariaDB on the project's loopback test servers, each in its
// own schema or database dropped afterwards. An unreachable server fails
// the test; nothing is skipped.
package testdbs
