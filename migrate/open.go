package migrate

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
	_ "modernc.org/sqlite"             // registers "sqlite"
)

// ConnectTimeout bounds how long Open waits for a server.
const ConnectTimeout = 5 * time.Second

// Open opens the database a DSN names and checks it answers within
// ConnectTimeout: postgres:// or postgresql:// URLs; mysql://user:pass@host:port/db
// or a go-sql-driver DSN (user@tcp(host:port)/db); anything else is a SQLite
// file path or file: URI (foreign keys on, WAL, busy timeout).
func Open(ctx context.Context, dsn string) (*sql.DB, Dialect, error) {
	driver, dialect, conn, err := parseDSN(dsn)
	if err != nil {
		return nil, "", err
	}
	db, err := sql.Open(driver, conn)
	if err != nil {
		return nil, "", fmt.Errorf("migrate: open %s database: %w", dialect, err)
	}
	pctx, cancel := context.WithTimeout(ctx, ConnectTimeout)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		db.Close()
		return nil, "", fmt.Errorf("migrate: cannot reach the %s database at %s within %s (is the server running and the DSN right?): %w",
			dialect, redact(dsn), ConnectTimeout, err)
	}
	return db, dialect, nil
}

func parseDSN(dsn string) (driver string, d Dialect, conn string, err error) {
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		u, err := url.Parse(dsn)
		if err != nil {
			return "", "", "", fmt.Errorf("migrate: bad postgres DSN: %w", err)
		}
		q := u.Query()
		if q.Get("connect_timeout") == "" {
			q.Set("connect_timeout", fmt.Sprint(int(ConnectTimeout/time.Second)))
		}
		u.RawQuery = q.Encode()
		return "pgx", Postgres, u.String(), nil
	case strings.HasPrefix(dsn, "mysql://"):
		u, err := url.Parse(dsn)
		if err != nil {
			return "", "", "", fmt.Errorf("migrate: bad mysql DSN: %w", err)
		}
		cfg := mysql.NewConfig()
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
		cfg.Net, cfg.Addr = "tcp", u.Host
		if u.Port() == "" {
			cfg.Addr += ":3306"
		}
		cfg.DBName = strings.TrimPrefix(u.Path, "/")
		cfg.Timeout = ConnectTimeout
		return "mysql", MySQL, cfg.FormatDSN(), nil
	case strings.Contains(dsn, "@tcp(") || strings.Contains(dsn, "@unix("):
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			return "", "", "", fmt.Errorf("migrate: bad mysql DSN: %w", err)
		}
		if cfg.Timeout == 0 {
			cfg.Timeout = ConnectTimeout
		}
		return "mysql", MySQL, cfg.FormatDSN(), nil
	}
	path := strings.TrimPrefix(strings.TrimPrefix(dsn, "sqlite://"), "sqlite:")
	if !strings.HasPrefix(path, "file:") {
		path = "file:" + path + "?_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)"
	}
	return "sqlite", SQLite, path, nil
}

// redact hides a DSN's password.
func redact(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
			return u.String()
		}
	}
	return dsn
}
