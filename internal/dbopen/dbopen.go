package dbopen

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/sqlite"
)

// ErrUnsupported is returned for a DSN scheme no driver handles.
var ErrUnsupported = errors.New("dbopen: unsupported database DSN")

// Dialect names the backend a DSN selects: "sqlite", "postgres" or "mysql".
func Dialect(dsn string) (string, error) {
	dsn = strings.TrimSpace(dsn)
	scheme, _, hasScheme := strings.Cut(dsn, "://")
	switch {
	case dsn == "":
		return "", fmt.Errorf("%w: empty DSN (use a file path such as ./agentry.db, postgres://… or mysql://…)", ErrUnsupported)
	case !hasScheme, scheme == "sqlite", scheme == "file":
		return "sqlite", nil
	case scheme == "postgres" || scheme == "postgresql":
		return "postgres", nil
	case scheme == "mysql" || scheme == "mariadb":
		return "mysql", nil
	}
	return "", fmt.Errorf("%w %q: use a file path, postgres://… or mysql://…", ErrUnsupported, scheme+"://")
}

// Options tune Open.
type Options struct {
	// ID is the db_id; empty means the dialect.
	ID string
	// SkipSchemaCheck opens a database without checking or creating tables
	// (for migrations of 2.x databases).
	SkipSchemaCheck bool
	// QueryTimeout bounds every database call; zero means
	// db.DefaultQueryTimeout.
	QueryTimeout time.Duration
}

// Open opens the database a DSN names.
func Open(ctx context.Context, dsn string, opts Options) (*db.DB, error) {
	dialect, err := Dialect(dsn)
	if err != nil {
		return nil, err
	}
	switch dialect {
	case "sqlite":
		path := dsn
		for _, p := range []string{"sqlite://", "file://"} {
			path = strings.TrimPrefix(path, p)
		}
		return sqlite.Open(ctx, sqlite.Config{Path: path, ID: opts.ID, SkipSchemaCheck: opts.SkipSchemaCheck, QueryTimeout: opts.QueryTimeout})
	}
	return openServer(ctx, dialect, dsn, opts)
}
