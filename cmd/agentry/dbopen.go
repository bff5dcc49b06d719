package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dsn"
	"github.com/agentryhq/agentry/db/mysql"
	"github.com/agentryhq/agentry/db/postgres"
	"github.com/agentryhq/agentry/db/sqlite"
)

const defaultDSN = "./agentry.db"

// dbFlagHelp is the --db flag's help, the same for every command.
const dbFlagHelp = "database: a SQLite path, postgres://…, mysql://… or user@tcp(host:port)/db (README: Database DSNs)"

// drivers are the database drivers the agentry binary links: all three.
var drivers = dsn.Drivers{SQLite: sqlite.OpenDSN, Postgres: postgres.OpenDSN, MySQL: mysql.OpenDSN}

// openStore opens the database a --db value names, the one way every
// command and the server do. A database that needs a migration fails with
// the exact command that migrates it, --db included.
func openStore(ctx context.Context, s string, o dsn.Options) (*db.DB, error) {
	d, err := dsn.Parse(s)
	if err != nil {
		return nil, err
	}
	store, err := drivers.Open(ctx, d, o)
	if errors.Is(err, db.ErrMigrationRequired) {
		hint := "agentry migrate up --db " + shellQuote(d.String())
		if o.Schema != "" {
			hint += " --schema " + shellQuote(o.Schema)
		}
		if d.HasPassword() {
			hint += " (with the password in place of xxxxx)"
		}
		return nil, fmt.Errorf("%w\nto migrate it, run: %s", err, hint)
	}
	return store, err
}

// shellSafe are the characters a shell passes through unquoted.
var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_./:@%+=,-]+$`)

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
