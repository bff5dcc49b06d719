// Package migrate owns the schema versions of Agentry's SQL tables (agno_schema_versions)
// and the steps between them: Manager.Up/Down, the resumable 2.x→3.0 copy of runs out of
// the sessions table's legacy `runs` column, and the cleanup that drops that column.
//
// Until `migrate up` has run, stores refuse a 2.x database with db.ErrMigrationRequired;
// they never read the legacy column themselves, so runs a 2.x process writes there after
// Up stay unseen until Up runs again: it reads the column again and copies what the runs
// table lacks, except runs deleted from it after their copy
// (docs/adr/migrate-deleted-runs-stay-deleted.md). Status counts those runs, and
// CleanupLegacyRunsColumn refuses (ErrUncopiedRuns) to drop a column holding any run the
// runs table does not (docs/adr/migrate-cleanup-verifies-copy.md). MergeRuns and Manager.MergedSessionRuns
// read one session from both sources, merged as Down merges them; they
// are for tools that check a migration before cleanup, not a read path of the stores.
package migrate
