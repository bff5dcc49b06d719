// Package dbopen owns turning a --db DSN (a SQLite path, sqlite://PATH,
// postgres://…, postgresql://… or mysql://…) into an opened *db.DB.
package dbopen
