// Package sqlstore is the one SQL implementation of db.Driver shared by the
// sqlite, postgres and mysql drivers: a Store over database/sql that uses
// only the parts of a Dialect each driver package builds (with its embedded
// versioned DDL), and the schema check that refuses 2.x databases. The
// migrate package builds on the same Dialect, Tables, DDL and Store.SQL.
package sqlstore
