package sqlstore

import (
	"database/sql"
	"strings"
	"testing"
	"unicode/utf8"

	_ "modernc.org/sqlite" // the plain driver, for the query plans
)

// planOf returns SQLite's query plan of q on a fresh agno_fs, one line per
// step.
func planOf(t *testing.T, q string, args ...any) string {
	t.Helper()
	conn, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetMaxOpenConns(1)
	if _, err := conn.Exec(`CREATE TABLE agno_fs (namespace TEXT NOT NULL, path TEXT NOT NULL, content BLOB,
		size_bytes BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 1, created_at BIGINT NOT NULL,
		updated_at BIGINT, PRIMARY KEY (namespace, path))`); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query("EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "\n")
}

// searches reports a plan that searches agno_fs's primary key (its
// autoindex) with the constraint given, and scans nothing.
func searches(plan, constraint string) bool {
	return strings.HasPrefix(plan, "SEARCH agno_fs USING INDEX sqlite_autoindex_agno_fs_1 "+constraint) &&
		!strings.Contains(plan, "SCAN")
}

// The TTL clean-up matched namespaces with substr(namespace, 1, n) = ?,
// which no index serves: every write under a TTL (which first drops its own
// namespace's expired files) and every sweep scanned the whole file table.
func TestDeleteFilesBeforeQuery_SearchesThePrimaryKeyOnSQLite(t *testing.T) {
	t.Parallel()
	for _, prefix := range []string{"agentfs/", "agentfs/0123456789abcdef0123456789abcdef"} {
		q, args := deleteFilesBeforeQuery("sqlite", "agno_fs", prefix, 100)
		plan := planOf(t, q, args...)
		if !searches(plan, "(namespace>? AND namespace<?)") {
			t.Fatalf("prefix %q: plan of %s is\n%s\nwant a search of the primary key", prefix, q, plan)
		}
	}
}

func TestStatFileQuery_SearchesThePrimaryKeyOnSQLite(t *testing.T) {
	t.Parallel()
	plan := planOf(t, statFileQuery("agno_fs"), "ns", "p")
	if !searches(plan, "(namespace=? AND path=?)") {
		t.Fatalf("plan is\n%s\nwant a search of the primary key", plan)
	}
}

// padCompare compares as MySQL's PAD SPACE collations do: the shorter
// string padded with spaces, then by code point.
func padCompare(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	for i := 0; i < max(len(ra), len(rb)); i++ {
		ca, cb := rune(' '), rune(' ')
		if i < len(ra) {
			ca = ra[i]
		}
		if i < len(rb) {
			cb = rb[i]
		}
		if ca != cb {
			if ca < cb {
				return -1
			}
			return 1
		}
	}
	return 0
}

func checkPrefixRange(t *testing.T, prefix, suffix string) {
	t.Helper()
	lo, hi, ok := prefixRange(prefix)
	if !ok {
		return
	}
	s := prefix + suffix
	if !utf8.ValidString(s) {
		return
	}
	if s < lo || s >= hi {
		t.Fatalf("%q is outside [%q, %q) in code point order", s, lo, hi)
	}
	if padCompare(s, lo) < 0 || padCompare(s, hi) >= 0 {
		t.Fatalf("%q is outside [%q, %q) with space padding", s, lo, hi)
	}
}

func TestPrefixRange_HoldsEveryStringWithThePrefix(t *testing.T) {
	t.Parallel()
	for _, c := range [][2]string{
		{"agentfs/", ""}, {"agentfs/", "\t"}, {"agentfs/", "\x01x"}, {"agentfs/", "\U0010FFFF"},
		{"a/é", "z"}, {"a/\U0010FFFF", "\U0010FFFF"}, {"a/\uD7FF", "x"}, {"a \t", "\x01"}, {"x", " "},
	} {
		checkPrefixRange(t, c[0], c[1])
	}
	for _, p := range []string{"", " ", "\t ", "\U0010FFFF", "\xff"} {
		if _, _, ok := prefixRange(p); ok {
			t.Errorf("prefixRange(%q) gave a range", p)
		}
	}
}

func FuzzPrefixRange(f *testing.F) {
	f.Add("agentfs/", "\t")
	f.Add("a\U0010FFFF", "")
	f.Add("é\uD7FF", "\x00")
	f.Fuzz(func(t *testing.T, prefix, suffix string) { checkPrefixRange(t, prefix, suffix) })
}
