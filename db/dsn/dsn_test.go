package dsn_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db/dsn"
)

func TestParse_AcceptedForms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, dialect, path, conn string
	}{
		{"./agentry.db", dsn.SQLite, "./agentry.db", ""},
		{"  /tmp/x.db\n", dsn.SQLite, "/tmp/x.db", ""},
		{"data/my db.sqlite", dsn.SQLite, "data/my db.sqlite", ""},
		{":memory:", dsn.SQLite, ":memory:", ""},
		{"sqlite:///tmp/x.db", dsn.SQLite, "/tmp/x.db", ""},
		{"sqlite://rel.db", dsn.SQLite, "rel.db", ""},
		{"sqlite:rel.db", dsn.SQLite, "rel.db", ""},
		{"SQLITE:///tmp/x.db", dsn.SQLite, "/tmp/x.db", ""},
		{"file:///tmp/x.db", dsn.SQLite, "/tmp/x.db", ""},
		{"file://localhost/tmp/x.db", dsn.SQLite, "/tmp/x.db", ""},
		{"file:/tmp/my%20db.db", dsn.SQLite, "/tmp/my db.db", ""},
		{"file:rel.db", dsn.SQLite, "rel.db", ""},
		{"file:what%3F.db", dsn.SQLite, "what?.db", ""},
		{"postgres://u:p@127.0.0.1/test", dsn.Postgres, "", "postgres://u:p@127.0.0.1/test"},
		{"postgresql://u@db.example:6432/app?sslmode=require", dsn.Postgres, "", "postgresql://u@db.example:6432/app?sslmode=require"},
		{"postgres:///app?host=/var/run/postgresql", dsn.Postgres, "", "postgres:///app?host=/var/run/postgresql"},
		{"postgres://u@h/?dbname=app", dsn.Postgres, "", "postgres://u@h/?dbname=app"},
		{"mysql://root@127.0.0.1/test", dsn.MySQL, "", "root@tcp(127.0.0.1:3306)/test"},
		{"mariadb://u:p%40ss@db:3307/app?tls=true&parseTime=true", dsn.MySQL, "", "u:p@ss@tcp(db:3307)/app?tls=true&parseTime=true"},
		{"mysql://u@[::1]/app", dsn.MySQL, "", "u@tcp([::1]:3306)/app"},
		// An empty port (a URL may write "host:") is the default port.
		{"mysql://u@h:/app", dsn.MySQL, "", "u@tcp(h:3306)/app"},
		{"mariadb://u@[::1]:/app", dsn.MySQL, "", "u@tcp([::1]:3306)/app"},
		// A '/' in a parameter (a valid URL) would end the driver's address.
		{"mysql://u@h/app?loc=Europe/Paris&tls=custom", dsn.MySQL, "", "u@tcp(h:3306)/app?loc=Europe%2FParis&tls=custom"},
		{"root@tcp(127.0.0.1:3306)/test", dsn.MySQL, "", "root@tcp(127.0.0.1:3306)/test"},
		{"u:pa/ss@tcp(h:1)/db?timeout=5s", dsn.MySQL, "", "u:pa/ss@tcp(h:1)/db?timeout=5s"},
		{"root@unix(/run/mysqld.sock)/app", dsn.MySQL, "", "root@unix(/run/mysqld.sock)/app"},
		{"tcp(127.0.0.1)/test", dsn.MySQL, "", "tcp(127.0.0.1)/test"},
	}
	for _, tc := range tests {
		d, err := dsn.Parse(tc.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if d.Dialect != tc.dialect || d.Path != tc.path || d.Conn != tc.conn {
			t.Errorf("Parse(%q) = %s path %q conn %q; want %s path %q conn %q", tc.in, d.Dialect, d.Path, d.Conn, tc.dialect, tc.path, tc.conn)
		}
	}
}

// Every example of the forms table parses to its dialect, and the README
// shows each of them.
func TestForms_ExamplesParseAndAreInTheREADME(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range dsn.Forms {
		d, err := dsn.Parse(f.Example)
		if err != nil || d.Dialect != f.Dialect {
			t.Errorf("Parse(%q) = %s, %v; want %s", f.Example, d.Dialect, err, f.Dialect)
		}
		if !strings.Contains(string(readme), "`"+f.Example+"`") {
			t.Errorf("README.md does not show the form %s", f.Example)
		}
	}
}

func TestParse_IncompleteOrUnknownIsRefused(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"":                                 "empty DSN",
		"   ":                              "empty DSN",
		"postgres://":                      "names no host",
		"postgresql://u:secret@/app":       "names no host",
		"postgres://u:secret@127.0.0.1":    "names no database",
		"postgres://u:secret@127.0.0.1/":   "names no database",
		"mysql://":                         "names no host",
		"mariadb:///test":                  "names no host",
		"mysql://root:secret@127.0.0.1":    "names no database",
		"mysql://root@h/a/b":               "holds a '/'",
		"mysql://root@h/a%3Fb":             "holds a '?'",
		"mysql://ro%3Aot:secret@h/db":      "holds a ':'",
		"root:secret@tcp(127.0.0.1:3306)/": "names no database",
		"root:secret@tcp(127.0.0.1:3306)":  "names no database",
		"sqlite://":                        "names no file",
		"sqlite:":                          "names no file",
		"file:":                            "names no file",
		"file://":                          "names no file",
		"file:x.db?mode=ro":                "no ?parameters",
		"./x.db?_pragma=foo":               "no ?parameters",
		"sqlite:///x.db?cache=shared":      "no ?parameters",
		"file://otherhost/x.db":            "names host",
		"redis://127.0.0.1:6379":           "unsupported scheme",
		"mongodb://u:secret@h/db":          "unsupported scheme",
		"postgres:app":                     "is a URL",
		"mysql:u:secret@h/db":              "is a URL",
		"host=localhost dbname=app":        "key=value",
		"user=u password=secret host=h":    "key=value",
		"postgres://u:secret@h:x/db":       "not a valid URL",
	}
	for in, want := range tests {
		_, err := dsn.Parse(in)
		if !errors.Is(err, dsn.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want ErrInvalid saying %q", in, err, want)
			continue
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("Parse(%q) error %q repeats the password", in, err)
		}
	}
}

func TestString_HidesThePassword(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"postgres://u:secret@h/db":             "postgres://u:xxxxx@h/db",
		"postgres://u@h/db?password=secret":    "postgres://u@h/db?password=xxxxx",
		"mysql://u:secret@h/db":                "mysql://u:xxxxx@h/db",
		"u:secret@tcp(h:3306)/db":              "u:xxxxx@tcp(h:3306)/db",
		"u:se@c:ret@tcp(h:3306)/db?timeout=1s": "u:xxxxx@tcp(h:3306)/db?timeout=1s",
		"postgres://u@h/db":                    "postgres://u@h/db",
		// pgx reads sslpassword (the client key's passphrase) too.
		"postgres://u@h/db?sslmode=verify-full&sslpassword=secret": "postgres://u@h/db?sslmode=verify-full&sslpassword=xxxxx",
		// A pair url.ParseQuery cannot decode is still a password.
		"postgres://u@h/db?password=se%zzcret":             "postgres://u@h/db?password=xxxxx",
		"postgres://u:secret@h/db?password=sec;ret&a=b%2F": "postgres://u:xxxxx@h/db?password=xxxxx&a=b%2F",
		"mysql://u@h/db?tls=true&Password=secret":          "mysql://u@h/db?tls=true&Password=xxxxx",
		"./agentry.db": "./agentry.db",
	}
	for in, want := range tests {
		d, err := dsn.Parse(in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", in, err)
		}
		if d.String() != want || d.HasPassword() != (want != in) {
			t.Errorf("Parse(%q).String() = %q (HasPassword %v), want %q", in, d.String(), d.HasPassword(), want)
		}
	}
}

// A URL that does not parse is not quoted, nor is any piece of it: with an
// unescaped '/', '#' or '?' in the password, url.Parse ends the host inside
// it and its error quotes the start of the password as a port.
func TestParse_AnUnparsableURLRepeatsNoPieceOfThePassword(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"postgres://u:hun/ter2@h/db",
		"postgres://u:hun#ter2@h/db",
		"postgresql://u:hun?ter2@h/db",
		"mysql://u:hun/ter2@h/db",
		"mariadb://u:hun#ter2@h:3306/db",
		"postgres://u:hun%zter2@h/db",
		"postgres://u:hun ter2/x@h/db",
	} {
		_, err := dsn.Parse(in)
		if !errors.Is(err, dsn.ErrInvalid) || !strings.Contains(err.Error(), "not a valid URL") {
			t.Errorf("Parse(%q) = %v, want ErrInvalid saying it is not a valid URL", in, err)
			continue
		}
		if strings.Contains(err.Error(), "hun") || strings.Contains(err.Error(), "%z") {
			t.Errorf("Parse(%q) error %q repeats a piece of the password", in, err)
		}
		if !strings.Contains(err.Error(), "percent-encode") {
			t.Errorf("Parse(%q) error %q does not say how to write the password", in, err)
		}
	}
}

// FuzzParse: no input panics; an accepted DSN names a dialect and what its
// driver needs; an error never repeats a password given in a URL.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"./agentry.db", ":memory:", "sqlite:///x", "file:%41.db", "postgres://u:p@h/db",
		"postgresql://h/db?sslmode=disable", "mysql://u:p@h:1/db?tls=true", "mariadb://h/db", "u:p@tcp(h:1)/db",
		"u@unix(/s)/db", "postgres://", "mysql://u:p@h", "file://x/y", "x?y", "postgres://u:p@[::1", "\x00", "file:%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := dsn.Parse(s)
		if err != nil {
			if !errors.Is(err, dsn.ErrInvalid) {
				t.Fatalf("Parse(%q) error %v does not wrap ErrInvalid", s, err)
			}
			if strings.Contains(s, "://u:hunter2@") && strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("Parse(%q) error %q repeats the password", s, err)
			}
			return
		}
		switch d.Dialect {
		case dsn.SQLite:
			if d.Path == "" || strings.ContainsRune(d.Path, 0) {
				t.Fatalf("Parse(%q) = SQLite path %q", s, d.Path)
			}
		case dsn.Postgres, dsn.MySQL:
			if d.Conn == "" {
				t.Fatalf("Parse(%q) = %s without a connection string", s, d.Dialect)
			}
		default:
			t.Fatalf("Parse(%q) = dialect %q", s, d.Dialect)
		}
		_ = d.String()
	})
}
