// Package sqlstore is the one SQL implementation of db.Driver shared by the
// sqlite, postgres and mysql drivers: a Store over database/sql parameterised by
// a small Dialect, the embedded versioned DDL of Agno 3.0's tables, and the
// schema check that refuses 2.x databases. The migrate package builds on the
// exported Dialect, Tables, DDL, Columns and Store.SQL.
package sqlstore
