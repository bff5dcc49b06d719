package dsn

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
)

// Dialects a DSN selects.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
	MySQL    = "mysql"
)

// ErrInvalid is wrapped by every error Parse returns.
var ErrInvalid = errors.New("invalid database DSN")

// Form is one accepted way to write a DSN.
type Form struct {
	// Example is a DSN in this form; Dialect the backend it selects.
	Example string
	Dialect string
	// Note says how the form is read.
	Note string
}

// Forms is the table of accepted forms, in the order Parse tries them. The
// README's "Database DSNs" section shows the same table.
var Forms = []Form{
	{"./agentry.db", SQLite, "a file path (no scheme): the SQLite file, created by `serve` and `run` when missing"},
	{"sqlite:///var/lib/agentry.db", SQLite, "everything after sqlite:// is the path (so sqlite:///tmp/a.db is /tmp/a.db); sqlite:PATH too"},
	{"file:/var/lib/agentry.db", SQLite, "a SQLite file: URI (file:PATH, file:///PATH), percent-decoded; no ?parameters"},
	{":memory:", SQLite, "a private in-memory SQLite database (gone when the process exits)"},
	{"postgres://user:pass@host:5432/db?sslmode=disable", Postgres, "also postgresql://; host and database are required; parameters go to pgx"},
	{"mysql://user:pass@host:3306/db?tls=true", MySQL, "also mariadb://; host and database are required; the port defaults to 3306; parameters go to the driver"},
	{"user:pass@tcp(host:3306)/db?parseTime=true", MySQL, "the go-sql-driver form (tcp(…) or unix(…) after the @); the database is required"},
}

// DSN is a parsed database name.
type DSN struct {
	// Dialect is SQLite, Postgres or MySQL.
	Dialect string
	// Path is the SQLite file (":memory:" for a private in-memory database).
	Path string
	// Conn is what a server driver connects with: the postgres:// URL as
	// given (pgx reads it), or a go-sql-driver DSN for MySQL and MariaDB.
	Conn string
	// given is the DSN as written, for messages (see String).
	given string
}

// String is the DSN as given, with any password replaced by "xxxxx".
func (d DSN) String() string { return redact(d.given) }

// HasPassword reports whether the DSN carries a password (String hides it).
func (d DSN) HasPassword() bool { return d.String() != d.given }

var (
	// scheme is a URL scheme followed by "://".
	scheme = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*)://`)
	// nativeMySQL is go-sql-driver's form: [user[:pass]@]tcp(…)/db or unix(…).
	nativeMySQL = regexp.MustCompile(`^(?:.*@)?(?:tcp6?|unix)\(`)
	// nativeAt is where a go-sql-driver DSN's address starts.
	nativeAt = regexp.MustCompile(`@(?:tcp6?|unix)\(`)
	// keyValue is libpq's key=value form, which reads as a path otherwise.
	keyValue = regexp.MustCompile(`(?:^|\s)(?:host|dbname|user)=\S`)
)

// Parse reads a DSN in one of Forms. An incomplete DSN (no host, no
// database, no file) or one no form matches fails with an error wrapping
// ErrInvalid that says what is missing; no error repeats a password.
func Parse(s string) (DSN, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return DSN{}, invalid("empty DSN: use a SQLite path such as ./agentry.db, postgres://… or mysql://…")
	}
	if m := scheme.FindStringSubmatch(s); m != nil {
		switch strings.ToLower(m[1]) {
		case "postgres", "postgresql":
			return parsePostgres(s)
		case "mysql", "mariadb":
			return parseMySQLURL(s, m[1])
		case "sqlite", "sqlite3":
			return sqlitePath(s, s[len(m[0]):], false)
		case "file":
			return parseFileURI(s)
		}
		return DSN{}, invalid("unsupported scheme %q in %s: use a SQLite path, postgres://… or mysql://…", m[1]+"://", redact(s))
	}
	switch lower := strings.ToLower(s); {
	case nativeMySQL.MatchString(s):
		return parseNativeMySQL(s)
	case strings.HasPrefix(lower, "file:"):
		return parseFileURI(s)
	case strings.HasPrefix(lower, "sqlite:"):
		return sqlitePath(s, s[len("sqlite:"):], false)
	case strings.HasPrefix(lower, "postgres:"), strings.HasPrefix(lower, "postgresql:"),
		strings.HasPrefix(lower, "mysql:"), strings.HasPrefix(lower, "mariadb:"):
		scheme, _, _ := strings.Cut(lower, ":")
		// Not echoed: without "://" a password in it cannot be found.
		return DSN{}, invalid("a %s DSN is a URL: write %s://USER:PASSWORD@HOST:PORT/DATABASE", scheme, scheme)
	case keyValue.MatchString(s):
		return DSN{}, invalid("libpq key=value DSNs are not accepted (it would be read as a file name): write postgres://USER@HOST:PORT/DATABASE")
	}
	return sqlitePath(s, s, false)
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// sqlitePath checks a SQLite path taken from a DSN: literally, or decoded
// from a file: URI (where a '?' was written %3F).
func sqlitePath(given, path string, decoded bool) (DSN, error) {
	switch {
	case path == "":
		return DSN{}, invalid("%q names no file: write sqlite://PATH or just the path", given)
	case strings.ContainsRune(path, '?') && !decoded:
		return DSN{}, invalid("%q: SQLite DSNs take no ?parameters (Agentry sets its own); a file name holding '?' is written file:NAME%%3F…", given)
	case strings.ContainsRune(path, 0):
		return DSN{}, invalid("the SQLite path holds a NUL byte")
	}
	return DSN{Dialect: SQLite, Path: path, given: given}, nil
}

// parseFileURI reads a SQLite file: URI: file:PATH, file:///PATH or
// file://localhost/PATH, percent-decoded.
func parseFileURI(s string) (DSN, error) {
	u, err := url.Parse(s)
	if err != nil {
		return DSN{}, invalid("%q is not a valid file: URI: %v", s, urlErr(s, err))
	}
	if u.RawQuery != "" || u.ForceQuery {
		return DSN{}, invalid("%q: SQLite DSNs take no ?parameters (Agentry sets its own)", s)
	}
	if u.Host != "" && u.Host != "localhost" {
		return DSN{}, invalid("%q names host %q: a file: URI names a local file (file:///PATH)", s, u.Host)
	}
	path := u.Path
	if u.Opaque != "" {
		if path, err = url.PathUnescape(u.Opaque); err != nil {
			return DSN{}, invalid("%q is not a valid file: URI: %v", s, err)
		}
	}
	d, err := sqlitePath(s, path, true)
	if err != nil && path == "" {
		return DSN{}, invalid("%q names no file: write file:PATH", s)
	}
	return d, err
}

// parsePostgres checks a postgres:// URL names a host and a database (in the
// URL or as host= and dbname= parameters); pgx reads the rest.
func parsePostgres(s string) (DSN, error) {
	u, err := url.Parse(s)
	if err != nil {
		return DSN{}, invalid("%s is not a valid URL: %v", redact(s), urlErr(s, err))
	}
	q := u.Query()
	shape := "write postgres://USER:PASSWORD@HOST:PORT/DATABASE"
	if u.Hostname() == "" && q.Get("host") == "" {
		return DSN{}, invalid("%s names no host: %s", redact(s), shape)
	}
	if strings.Trim(u.Path, "/") == "" && q.Get("dbname") == "" {
		return DSN{}, invalid("%s names no database: %s", redact(s), shape)
	}
	return DSN{Dialect: Postgres, Conn: s, given: s}, nil
}

// parseMySQLURL turns a mysql:// or mariadb:// URL into the go-sql-driver
// form, keeping every parameter.
func parseMySQLURL(s, scheme string) (DSN, error) {
	u, err := url.Parse(s)
	if err != nil {
		return DSN{}, invalid("%s is not a valid URL: %v", redact(s), urlErr(s, err))
	}
	shape := "write " + scheme + "://USER:PASSWORD@HOST:PORT/DATABASE"
	if u.Hostname() == "" {
		return DSN{}, invalid("%s names no host: %s", redact(s), shape)
	}
	name := strings.TrimPrefix(u.Path, "/")
	switch {
	case name == "":
		return DSN{}, invalid("%s names no database: %s", redact(s), shape)
	case strings.Contains(name, "/"):
		return DSN{}, invalid("%s: the database name %q holds a '/'", redact(s), name)
	case strings.Contains(name, "?"):
		// The driver would read the rest as parameters.
		return DSN{}, invalid("%s: the database name %q holds a '?'", redact(s), name)
	case u.User != nil && strings.Contains(u.User.Username(), ":"):
		// The driver ends the user name at the first ':'.
		return DSN{}, invalid("%s: the user name %q holds a ':', which the MySQL driver cannot take", redact(s), u.User.Username())
	}
	// Hostname and Port, not Host: a URL may write an empty port ("h:"),
	// which is the default port, not part of the address.
	port := u.Port()
	if port == "" {
		port = "3306"
	}
	addr := net.JoinHostPort(u.Hostname(), port)
	var b strings.Builder
	if u.User != nil {
		b.WriteString(u.User.Username())
		if p, ok := u.User.Password(); ok {
			b.WriteString(":" + p)
		}
		b.WriteString("@")
	}
	b.WriteString("tcp(" + addr + ")/" + name)
	if u.RawQuery != "" {
		// The driver finds the database after the DSN's last '/': one in a
		// parameter (loc=Europe/Paris, valid in a URL) is escaped, and the
		// parameters that can hold one (loc, tls, serverPubKey, system
		// variables) are unescaped by the driver.
		b.WriteString("?" + strings.ReplaceAll(u.RawQuery, "/", "%2F"))
	}
	return DSN{Dialect: MySQL, Conn: b.String(), given: s}, nil
}

// parseNativeMySQL checks a go-sql-driver DSN names a database; the driver
// parses the rest. Like go-sql-driver, it takes the database from after the
// last '/' (a password may hold one).
func parseNativeMySQL(s string) (DSN, error) {
	i := strings.LastIndexByte(s, '/')
	if i < 0 {
		return DSN{}, invalid("%s names no database: write USER:PASSWORD@tcp(HOST:PORT)/DATABASE", redact(s))
	}
	name, _, _ := strings.Cut(s[i+1:], "?")
	if name == "" {
		return DSN{}, invalid("%s names no database: write USER:PASSWORD@tcp(HOST:PORT)/DATABASE", redact(s))
	}
	return DSN{Dialect: MySQL, Conn: s, given: s}, nil
}

// urlErr is url.Parse's error on s without the URL (which may hold a
// password). When s may have a user part, the parser's own words are left
// out too: an unescaped '/', '?' or '#' in a password ends the host inside
// it, and the error then quotes the start of the password as a port (or a
// bad escape in it as such).
func urlErr(s string, err error) error {
	if _, rest, ok := strings.Cut(s, "://"); ok && strings.Contains(rest, "@") {
		return errors.New("it does not parse; percent-encode any '/', '?', '#', '@', ':', '%' or space in the user name or password (%2F, %3F, %23, %40, %3A, %25, %20)")
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// secretParam reports whether a query parameter's key names a secret:
// password, sslpassword (pgx: the client key's passphrase), in any case.
func secretParam(key string) bool {
	if k, err := url.QueryUnescape(key); err == nil {
		key = k
	}
	return strings.Contains(strings.ToLower(key), "password")
}

// redactQuery replaces the value of each secret parameter of a raw query
// with "xxxxx", leaving the rest as written: a pair url.ParseQuery cannot
// decode (a bad escape, a ';') is skipped by it but may still be read as a
// password, so the raw pairs are what is looked at.
func redactQuery(raw string) (string, bool) {
	pairs := strings.Split(raw, "&")
	changed := false
	for i, p := range pairs {
		if key, _, ok := strings.Cut(p, "="); ok && secretParam(key) {
			pairs[i], changed = key+"=xxxxx", true
		}
	}
	return strings.Join(pairs, "&"), changed
}

// redact replaces the password of a URL or go-sql-driver DSN with "xxxxx",
// as well as the value of a password= or sslpassword= parameter; a DSN
// without one is returned as is.
func redact(s string) string {
	if m := scheme.FindStringSubmatch(s); m != nil {
		u, err := url.Parse(s)
		if err != nil {
			// Unparsable: keep the scheme only, a password may be inside.
			return m[0] + "…"
		}
		changed := false
		if u.User != nil {
			if _, ok := u.User.Password(); ok {
				u.User, changed = url.UserPassword(u.User.Username(), "xxxxx"), true
			}
		}
		if q, ok := redactQuery(u.RawQuery); ok {
			u.RawQuery, changed = q, true
		}
		if changed {
			return u.String()
		}
		return s
	}
	if locs := nativeAt.FindAllStringIndex(s, -1); len(locs) > 0 {
		at := locs[len(locs)-1][0]
		if user, _, ok := strings.Cut(s[:at], ":"); ok {
			return user + ":xxxxx" + s[at:]
		}
	}
	return s
}
