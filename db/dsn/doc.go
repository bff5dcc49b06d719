// Package dsn owns the one way a database is named (a --db value or a config
// file's db.dsn): Parse turns it into a dialect and the connection string its
// driver takes, and Open hands it to the driver the caller links (Drivers),
// so a program links only the drivers it imports.
package dsn
