package sqltools

import (
	"fmt"
	"testing"
)

// A query whose answer holds a float that is not a number (Postgres' NaN
// and ±Infinity, SQLite's 1e999) is answered, the value written as
// Postgres writes it: the JSON encoding of the result refused it, and the
// model got "json: unsupported value: NaN" for a valid read. MySQL stores
// no such value.
func TestSQL_NonFiniteFloatsAreAnswered(t *testing.T) {
	queries := map[string]string{
		SQLite:   "SELECT 1e999 AS x, -1e999 AS y, 1.5 AS z",
		Postgres: "SELECT 'Infinity'::float8 AS x, '-Infinity'::float4 AS y, 'NaN'::float8 AS z, 'NaN'::numeric AS n",
	}
	want := map[string][]any{
		SQLite:   {"Infinity", "-Infinity", 1.5},
		Postgres: {"Infinity", "-Infinity", "NaN", "NaN"},
	}
	eachFixture(t, func(t *testing.T, f fixture) {
		set := newSet(t, Config{DSN: f.dsn})
		res, out := query(t, set, queries[f.dialect], 0)
		if res.Err != nil {
			t.Fatalf("query: %v", res.Err)
		}
		if len(out.Rows) != 1 || fmt.Sprint(out.Rows[0]) != fmt.Sprint(want[f.dialect]) {
			t.Fatalf("rows %v, want [%v]", out.Rows, want[f.dialect])
		}
	}, SQLite, Postgres)
}
