package dbopen

import (
	"context"
	"strings"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/mysql"
	"github.com/agentryhq/agentry/db/postgres"
)

// openServer opens a Postgres or MySQL/MariaDB DSN (mariadb:// is read as
// mysql://).
func openServer(ctx context.Context, dialect, dsn string, opts Options) (*db.DB, error) {
	if dialect == "postgres" {
		return postgres.Open(ctx, postgres.Config{DSN: dsn, ID: opts.ID, SkipSchemaCheck: opts.SkipSchemaCheck, QueryTimeout: opts.QueryTimeout})
	}
	if rest, ok := strings.CutPrefix(dsn, "mariadb://"); ok {
		dsn = "mysql://" + rest
	}
	return mysql.Open(ctx, mysql.Config{DSN: dsn, ID: opts.ID, SkipSchemaCheck: opts.SkipSchemaCheck, QueryTimeout: opts.QueryTimeout})
}
