package sqltools

import (
	"fmt"
	"strings"
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

// One row wider than MaxOutput (many long cells: each is cut at 2,000
// bytes, but a row may have thousands) is cut to fit, marked truncated:
// the first row was always kept whole, and 1,000 cells of 3,000 bytes made
// a 2 MB answer under the 64 KiB cap.
func TestSQL_AWideFirstRowKeepsToMaxOutput(t *testing.T) {
	repeat := map[string]string{SQLite: "printf('%%.3000c', 'x')", Postgres: "repeat('x', 3000)", MySQL: "repeat('x', 3000)"}
	fixtures(t, func(t *testing.T, f fixture) {
		set := newSet(t, Config{DSN: f.dsn})
		var cols []string
		for i := range 1000 {
			cols = append(cols, fmt.Sprintf(repeat[f.dialect]+" AS c%d", i))
		}
		res, out := query(t, set, "SELECT "+strings.Join(cols, ", "), 0)
		if res.Err != nil {
			t.Fatalf("query: %v", res.Err)
		}
		if len(res.Content) > DefaultMaxOutput {
			t.Fatalf("the answer is %d bytes, over MaxOutput (%d)", len(res.Content), DefaultMaxOutput)
		}
		if !out.Truncated || len(out.Rows) != 1 || len(out.Rows[0]) != 1000 || len(out.Columns) != 1000 {
			t.Fatalf("truncated %v, %d rows, %d columns", out.Truncated, len(out.Rows), len(out.Columns))
		}
		for i, c := range out.Rows[0] {
			s, ok := c.(string)
			if !ok || !strings.HasPrefix(s, "xxxx") || !strings.Contains(s, "more bytes]") {
				t.Fatalf("cell %d = %v, want the start of its text and how much was cut", i, c)
			}
		}
	})
}
