package sqltools

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/agentryhq/agentry/migrate/migratetest"
	"github.com/agentryhq/agentry/tool"
)

// logBuffer is a slog handler's output, safe for the toolkit's goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// privilegedUser is a DSN of a user holding privileges a read-only
// transaction does not stop (with a password the log must not show), and
// one of a user with only SELECT on the fixture's tables.
type privilegedUsers struct {
	privileged, plain, password string
}

func privilegeUsers(t *testing.T, f fixture) privilegedUsers {
	t.Helper()
	password := migratetest.RandomName("pw_secret_")
	plain := migratetest.RandomName("agentry_plain_")
	switch f.dialect {
	case Postgres:
		// Trust authentication: the password is sent nowhere, but it is in
		// the DSN the toolkit was given.
		cfg, err := pgx.ParseConfig(f.dsn)
		if err != nil {
			t.Fatal(err)
		}
		f.exec(t, "CREATE ROLE "+plain+" LOGIN")
		f.exec(t, "GRANT SELECT ON notes TO "+plain)
		t.Cleanup(func() {
			f.exec(t, "REVOKE ALL ON notes FROM "+plain)
			f.exec(t, "DROP ROLE "+plain)
		})
		withUser := func(user string) string {
			return strings.Replace(f.dsn, "postgres://"+cfg.User+"@", "postgres://"+user+":"+password+"@", 1)
		}
		return privilegedUsers{privileged: withUser(cfg.User), plain: withUser(plain), password: password}
	case MySQL:
		cfg, err := mysql.ParseDSN(f.dsn)
		if err != nil {
			t.Fatal(err)
		}
		// The server's root has no password; a user of its own has one,
		// and is made privileged by a grant.
		priv := migratetest.RandomName("agentry_priv_")
		for _, u := range []string{plain, priv} {
			f.exec(t, "CREATE USER '"+u+"'@'%' IDENTIFIED BY '"+password+"'")
			f.exec(t, "GRANT SELECT ON `"+cfg.DBName+"`.* TO '"+u+"'@'%'")
			t.Cleanup(func() { f.exec(t, "DROP USER '"+u+"'@'%'") })
		}
		f.exec(t, "GRANT FILE, PROCESS ON *.* TO '"+priv+"'@'%'")
		withUser := func(user string) string {
			c := cfg.Clone()
			c.User, c.Passwd = user, password
			return c.FormatDSN()
		}
		return privilegedUsers{privileged: withUser(priv), plain: withUser(plain), password: password}
	}
	t.Fatalf("no users for %s", f.dialect)
	return privilegedUsers{}
}

// TestSQL_PrivilegedUserIsWarnedOfOrRefused: connected as a user whose
// privileges reach past a read-only transaction (a Postgres superuser, a
// MariaDB user with FILE and PROCESS, root) the toolkit logs one warning
// naming the user, never the DSN's password; with RefusePrivileged every
// call fails with ErrPrivileged and runs nothing. A user with only SELECT
// is neither warned of nor refused.
func TestSQL_PrivilegedUserIsWarnedOfOrRefused(t *testing.T) {
	for _, f := range []fixture{postgresFixture(t), mysqlFixture(t)} {
		t.Run(f.dialect, func(t *testing.T) {
			users := privilegeUsers(t, f)
			for _, c := range []struct {
				name       string
				dsn        string
				privileged bool
			}{
				{"fixture user", f.dsn, true}, // postgres superuser, MariaDB root
				{"privileged user", users.privileged, true},
				{"plain user", users.plain, false},
			} {
				t.Run(c.name, func(t *testing.T) {
					var logs logBuffer
					logger := slog.New(slog.NewTextHandler(&logs, nil))
					set := newSet(t, Config{DSN: c.dsn, Logger: logger})
					for range 3 {
						if res, _ := query(t, set, "SELECT body FROM notes WHERE id = 1", 1); res.Err != nil {
							t.Fatalf("warned only: %v", res.Err)
						}
					}
					if res := call(t, set, "list_tables", `{}`); res.Err != nil {
						t.Fatal(res.Err)
					}
					warned := strings.Count(logs.String(), "privileged database user")
					if c.privileged && warned != 1 || !c.privileged && warned != 0 {
						t.Errorf("%d warnings, want privileged %v: %s", warned, c.privileged, logs.String())
					}
					if strings.Contains(logs.String(), users.password) {
						t.Errorf("the log shows the DSN's password: %s", logs.String())
					}

					refusing := newSet(t, Config{DSN: c.dsn, Logger: logger, RefusePrivileged: true})
					res, _ := query(t, refusing, "SELECT body FROM notes WHERE id = 1", 1)
					lt := call(t, refusing, "list_tables", `{}`)
					if c.privileged {
						for _, r := range []tool.Result{res, lt} {
							if !errors.Is(r.Err, ErrPrivileged) || strings.Contains(r.Content, users.password) {
								t.Errorf("privileged and refused: %s %v; want ErrPrivileged", r.Content, r.Err)
							}
						}
					} else if res.Err != nil || lt.Err != nil {
						t.Errorf("a plain user is refused: %v %v", res.Err, lt.Err)
					}
				})
			}
		})
	}
}

// TestSQL_MariaDBRolePrivilegesAreDetected: a MariaDB user that holds FILE
// and PROCESS only through its default role (granted through a second
// role) sees other users' sessions as a user granted PROCESS directly does:
// it is warned of and, with RefusePrivileged, refused. A user granted that role without it being
// its default role holds nothing in the toolkit's sessions (enabling a role
// takes SET ROLE, which the gate refuses): it is neither.
func TestSQL_MariaDBRolePrivilegesAreDetected(t *testing.T) {
	f := mysqlFixture(t)
	cfg, err := mysql.ParseDSN(f.dsn)
	if err != nil {
		t.Fatal(err)
	}
	password := migratetest.RandomName("pw_")
	files := migratetest.RandomName("agentry_files_role_")
	outer := migratetest.RandomName("agentry_outer_role_")
	withRole := migratetest.RandomName("agentry_role_user_")
	granted := migratetest.RandomName("agentry_granted_user_")
	f.exec(t, "CREATE ROLE "+files)
	t.Cleanup(func() { f.exec(t, "DROP ROLE "+files) })
	f.exec(t, "CREATE ROLE "+outer)
	t.Cleanup(func() { f.exec(t, "DROP ROLE "+outer) })
	f.exec(t, "GRANT FILE, PROCESS ON *.* TO "+files)
	f.exec(t, "GRANT "+files+" TO "+outer)
	for _, u := range []string{withRole, granted} {
		f.exec(t, "CREATE USER '"+u+"'@'%' IDENTIFIED BY '"+password+"'")
		t.Cleanup(func() { f.exec(t, "DROP USER '"+u+"'@'%'") })
		f.exec(t, "GRANT SELECT ON `"+cfg.DBName+"`.* TO '"+u+"'@'%'")
	}
	f.exec(t, "GRANT "+outer+" TO '"+withRole+"'@'%'")
	f.exec(t, "SET DEFAULT ROLE "+outer+" FOR '"+withRole+"'@'%'")
	f.exec(t, "GRANT "+files+" TO '"+granted+"'@'%'")
	dsnOf := func(user string) string {
		c := cfg.Clone()
		c.User, c.Passwd = user, password
		return c.FormatDSN()
	}
	for _, c := range []struct {
		user       string
		privileged bool
	}{{withRole, true}, {granted, false}} {
		t.Run(c.user, func(t *testing.T) {
			var logs logBuffer
			logger := slog.New(slog.NewTextHandler(&logs, nil))
			set := newSet(t, Config{DSN: dsnOf(c.user), Logger: logger})
			// What the user's sessions can do: see the fixture's (root's)
			// session.
			res, out := query(t, set, "SELECT COUNT(*) > 0 FROM information_schema.processlist WHERE user = '"+cfg.User+"'", 1)
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			if reads := fmt.Sprint(out.Rows) == "[[1]]"; reads != c.privileged {
				t.Fatalf("the user sees %s's sessions: %v (%v); the test expects %v", cfg.User, reads, out.Rows, c.privileged)
			}
			warned := strings.Count(logs.String(), "privileged database user")
			if c.privileged && (warned != 1 || !strings.Contains(logs.String(), "FILE PROCESS")) || !c.privileged && warned != 0 {
				t.Errorf("%d warnings, want privileged %v: %s", warned, c.privileged, logs.String())
			}
			refusing := newSet(t, Config{DSN: dsnOf(c.user), Logger: logger, RefusePrivileged: true})
			res, _ = query(t, refusing, "SELECT 1", 1)
			if c.privileged != errors.Is(res.Err, ErrPrivileged) || !c.privileged && res.Err != nil {
				t.Errorf("refusing toolkit: %s %v, want refused %v", res.Content, res.Err, c.privileged)
			}
		})
	}
}

// TestGlobalPrivileges_ReadsGlobalGrantLinesOnly: of SHOW GRANTS' lines only
// a grant on *.* gives the privileges a read-only transaction does not stop.
func TestGlobalPrivileges_ReadsGlobalGrantLinesOnly(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{"GRANT FILE, PROCESS ON *.* TO `agentry_files`", "[FILE PROCESS]"},
		{"GRANT ALL PRIVILEGES ON *.* TO `root`@`localhost` WITH GRANT OPTION", "[CONNECTION ADMIN FILE PROCESS SHUTDOWN SUPER]"},
		{"GRANT SELECT, RELOAD, SHUTDOWN ON *.* TO `ops`@`%`", "[SHUTDOWN]"},
		{"GRANT USAGE ON *.* TO `u`@`%` IDENTIFIED BY PASSWORD '*D8'", "[]"},
		{"GRANT ALL PRIVILEGES ON `test`.* TO `u`@`%`", "[]"},
		{"GRANT `agentry_files` TO `u`@`%`", "[]"},
		{"GRANT PROXY ON ''@'%' TO 'root'@'localhost' WITH GRANT OPTION", "[]"},
		{"SET DEFAULT ROLE `agentry_outer` FOR `u`@`%`", "[]"},
	} {
		if got := fmt.Sprint(globalPrivileges(c.line)); got != c.want {
			t.Errorf("%s: %s, want %s", c.line, got, c.want)
		}
	}
}

// TestSQL_UnreadablePrivilegesAreRememberedForAWhile: when the user's
// privileges cannot be read (here a Postgres database that revoked pg_roles
// from PUBLIC), the failure is remembered for privRetry instead of being
// read again at every call: a warning-only toolkit runs the calls and logs
// the failure once; a RefusePrivileged toolkit refuses them with
// ErrPrivileged (it cannot tell the user is not privileged), also right
// after the cause went away, until privRetry passed and a read succeeds.
func TestSQL_UnreadablePrivilegesAreRememberedForAWhile(t *testing.T) {
	f := postgresFixture(t)
	cfg, err := pgx.ParseConfig(f.dsn)
	if err != nil {
		t.Fatal(err)
	}
	plain := migratetest.RandomName("agentry_plain_")
	f.exec(t, "CREATE ROLE "+plain+" LOGIN")
	f.exec(t, "GRANT SELECT ON notes TO "+plain)
	t.Cleanup(func() {
		f.exec(t, "REVOKE ALL ON notes FROM "+plain)
		f.exec(t, "DROP ROLE "+plain)
	})
	f.exec(t, "REVOKE SELECT ON pg_catalog.pg_roles FROM PUBLIC")
	dsn := strings.Replace(f.dsn, "postgres://"+cfg.User+"@", "postgres://"+plain+"@", 1)

	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	var logs logBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	toolkit := func(refuse bool) *tool.Set {
		k, err := New(Config{DSN: dsn, Logger: logger, RefusePrivileged: refuse})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { k.Close() })
		k.now = func() time.Time { return time.Unix(0, now.Load()) }
		kit, err := k.Toolkit()
		if err != nil {
			t.Fatal(err)
		}
		set, err := tool.NewSet(nil, kit)
		if err != nil {
			t.Fatal(err)
		}
		return set
	}
	warning, refusing := toolkit(false), toolkit(true)
	const failed = "could not read the database user's privileges"
	for range 3 {
		if res, _ := query(t, warning, "SELECT body FROM notes WHERE id = 1", 1); res.Err != nil {
			t.Fatalf("warned only, privileges unreadable: %v", res.Err)
		}
	}
	if n := strings.Count(logs.String(), failed); n != 1 {
		t.Fatalf("%d warnings of the failed read after 3 calls, want 1: %s", n, logs.String())
	}
	res, _ := query(t, refusing, "SELECT body FROM notes WHERE id = 1", 1)
	if !errors.Is(res.Err, ErrPrivileged) {
		t.Fatalf("refusing toolkit, privileges unreadable: %s %v; want ErrPrivileged", res.Content, res.Err)
	}

	// The cause goes away; within privRetry the failure stands.
	f.exec(t, "GRANT SELECT ON pg_catalog.pg_roles TO PUBLIC")
	if res, _ := query(t, refusing, "SELECT body FROM notes WHERE id = 1", 1); !errors.Is(res.Err, ErrPrivileged) {
		t.Fatalf("refusing toolkit, within privRetry of the failed read: %s %v; want ErrPrivileged", res.Content, res.Err)
	}
	now.Add(int64(privRetry))
	for name, set := range map[string]*tool.Set{"warning": warning, "refusing": refusing} {
		if res, _ := query(t, set, "SELECT body FROM notes WHERE id = 1", 1); res.Err != nil {
			t.Errorf("%s toolkit, privRetry after the failed read, a plain user: %v", name, res.Err)
		}
	}
	if n := strings.Count(logs.String(), failed); n != 2 || strings.Contains(logs.String(), "privileged database user") {
		t.Fatalf("logs: %s; want the failed read twice (once per toolkit) and no privileged user", logs.String())
	}
}
