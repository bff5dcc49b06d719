// Package migratetest builds Agno 2.x databases in code for tests and
// benchmarks: the 2.x layout per dialect, a canonical set of awkward sessions
// with the runs a correct migration must produce, seeded generators, and
// throwaway SQLite files, Postgres schemas and MySQL databases.
package migratetest
