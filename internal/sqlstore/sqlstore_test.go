package sqlstore

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestDecodeJSON_UnwrapsAgnoDoubleEncoding(t *testing.T) {
	t.Parallel()
	obj := `{"a":[1,"x"]}`
	once, _ := json.Marshal(obj)
	twice, _ := json.Marshal(string(once))
	thrice, _ := json.Marshal(string(twice))
	cases := []struct {
		name, in, want string
		wantErr        bool
	}{
		{"plain object", obj, obj, false},
		{"array", `[1,2]`, `[1,2]`, false},
		{"one string layer", string(once), obj, false},
		{"two string layers", string(twice), obj, false},
		{"three layers stop at two", string(thrice), string(thrice), false},
		{"sql null", ``, ``, false},
		{"json null", `null`, ``, false},
		{"encoded null", `"null"`, ``, false},
		{"plain string kept", `"hello"`, `"hello"`, false},
		{"string of a number kept", `"42"`, `"42"`, false},
		{"number kept", `42`, `42`, false},
		{"whitespace trimmed", "  {\"a\":1}\n", `{"a":1}`, false},
		{"invalid json", `{"a":`, ``, true},
		{"string holding invalid json kept", `"{not json"`, `"{not json"`, false},
	}
	for _, c := range cases {
		got, err := decodeJSON([]byte(c.in))
		if (err != nil) != c.wantErr {
			t.Fatalf("%s: error = %v", c.name, err)
		}
		if string(got) != c.want {
			t.Fatalf("%s: got %s, want %s", c.name, got, c.want)
		}
	}
}

func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{`{}`, `"{\"a\":1}"`, `"\"[1]\""`, `null`, `"x"`, `[`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := decodeJSON(b)
		if err == nil && len(got) > 0 && !json.Valid(got) {
			t.Fatalf("decodeJSON(%q) = %q: not valid JSON", b, got)
		}
		_ = decodeJSONString(b)
	})
}

func TestDecodeJSONString_ReadsMemoryText(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`"likes tea"`:          "likes tea",
		`"\"likes tea\""`:      "likes tea",
		`{"memory":"x"}`:       `{"memory":"x"}`,
		`"emoji 🚀 \u00e9"`:     "emoji 🚀 é",
		`not json at all`:      "not json at all",
		`"say \\\"hi\\\" now"`: `say \"hi\" now`,
	} {
		if got := decodeJSONString([]byte(in)); got != want {
			t.Fatalf("decodeJSONString(%s) = %q, want %q", in, got, want)
		}
	}
}

func TestRebind_NumbersPostgresPlaceholders(t *testing.T) {
	t.Parallel()
	pg := &Dialect{Name: Postgres}
	if got := pg.Rebind("a = ? AND b IN (?, ?)"); got != "a = $1 AND b IN ($2, $3)" {
		t.Fatalf("postgres: %s", got)
	}
	for _, name := range []string{SQLite, MySQL} {
		d := &Dialect{Name: name}
		if got := d.Rebind("a = ?"); got != "a = ?" {
			t.Fatalf("%s: %s", name, got)
		}
	}
}

func TestTables_DefaultsFollowAgno(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in       Tables
		sessions string
		runs     string
	}{
		{Tables{}, "agno_sessions", "agno_runs"},
		{Tables{Sessions: "my_sessions"}, "my_sessions", "my_sessions_runs"},
		{Tables{Sessions: "my_sessions", Runs: "runs_x"}, "my_sessions", "runs_x"},
	}
	for _, c := range cases {
		got := c.in.WithDefaults()
		if got.Sessions != c.sessions || got.Runs != c.runs || got.Versions != "agno_schema_versions" || got.Evals != "agno_eval_runs" {
			t.Fatalf("%+v → %+v", c.in, got)
		}
	}
}

func TestDDL_CoversEveryTableInEveryDialect(t *testing.T) {
	t.Parallel()
	tables := Tables{Sessions: "s_tbl"}
	for _, d := range []*Dialect{{Name: SQLite}, {Name: Postgres, Schema: "ai"}, {Name: MySQL}} {
		for _, k := range Kinds {
			stmts, err := DDL(d, tables, k, Version30)
			if err != nil || len(stmts) == 0 {
				t.Fatalf("%s/%s: %v", d.Name, k, err)
			}
			all := strings.Join(stmts, "\n")
			if strings.Contains(all, "{") && !strings.Contains(all, "'{}'") {
				t.Fatalf("%s/%s: unexpanded placeholder:\n%s", d.Name, k, all)
			}
			if !strings.Contains(stmts[0], d.Table(tables.WithDefaults().Name(k))) {
				t.Fatalf("%s/%s: first statement does not create %s:\n%s", d.Name, k, d.Table(tables.WithDefaults().Name(k)), stmts[0])
			}
			for _, c := range Columns30(k) {
				if !strings.Contains(all, "\n    "+c+" ") {
					t.Fatalf("%s/%s: column %s missing from DDL", d.Name, k, c)
				}
			}
		}
		if _, err := DDL(d, tables, "nope", Version30); err == nil {
			t.Fatalf("%s: unknown kind accepted", d.Name)
		}
		if _, err := DDL(d, tables, KindRuns, "9.9.9"); err == nil {
			t.Fatalf("%s: unknown version accepted", d.Name)
		}
	}
}

func TestContainsPattern_EscapesWildcards(t *testing.T) {
	t.Parallel()
	if got := containsPattern(`50%_A\b`); got != `%50\%\_a\\b%` {
		t.Fatalf("got %s", got)
	}
}
