package sqltools

import (
	"database/sql"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

// The DSN is read by db/dsn, the parser of --db: a libpq key=value string
// is refused without being repeated (it was taken for a SQLite path, and
// the error quoted it, password and all, twice); go-sql-driver's unix(…)
// form is MySQL; sqlite:PATH and a percent-encoded file: URI name their
// file (both were taken for literal paths and not found).
func TestNew_ReadsDSNsAsDBDoes(t *testing.T) {
	for _, d := range []string{"host=db.example user=u password=s3cret dbname=shop", "u:s3cret@tcp(db.example:3306)/shop?bad=%zz"} {
		_, err := New(Config{DSN: d})
		if err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("New(%q) = %v, want an error without the password", d, err)
		}
	}
	k, err := New(Config{DSN: "u:s3cret@unix(/nonexistent/mysqld.sock)/shop"})
	if err != nil {
		t.Fatalf("a go-sql-driver unix socket DSN: %v", err)
	}
	if k.Dialect() != MySQL {
		t.Errorf("a go-sql-driver unix socket DSN opened %s", k.Dialect())
	}
	k.Close()

	path := filepath.Join(t.TempDir(), "my shop.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for _, d := range []string{"sqlite:" + path, "file:" + (&url.URL{Path: path}).EscapedPath()} {
		set := newSet(t, Config{DSN: d})
		if res := call(t, set, "list_tables", `{}`); res.Err != nil || !strings.Contains(res.Content, "notes") {
			t.Errorf("%s: list_tables = %s, %v", d, res.Content, res.Err)
		}
	}
}
