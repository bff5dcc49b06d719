// Package migrate owns the schema versions of Agentry's SQL tables (agno_schema_versions)
// and the steps between them: Manager.Up/Down, the resumable 2.x→3.0 copy of runs out of
// the sessions table's legacy `runs` column, merged reads until cleanup, and the cleanup.
package migrate
