package db_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentryhq/agentry/db"
)

// FuzzParseTraceExpr: any input is a TraceExpr or ErrInvalidTraceExpr,
// never a panic; a parsed expression names only trace columns, nests no
// deeper than the limit and keeps NOT to one operand.
func FuzzParseTraceExpr(f *testing.F) {
	for _, s := range []string{`{"op":"EQ","key":"status","value":"OK"}`, `{"op":"IN","key":"agent_id","values":["a","b"]}`,
		`{"op":"AND","conditions":[{"op":"GT","key":"duration_ms","value":10},{"op":"NOT","condition":{"op":"CONTAINS","key":"name","value":"x"}}]}`,
		`{"op":"GTE","key":"start_time","value":"2026-01-01T00:00:00Z"}`, `[]`, `null`, `{"op":"OR","conditions":[]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		e, err := db.ParseTraceExpr(json.RawMessage(raw))
		if err != nil {
			if !errors.Is(err, db.ErrInvalidTraceExpr) {
				t.Fatalf("error %v is not ErrInvalidTraceExpr", err)
			}
			return
		}
		var walk func(e *db.TraceExpr, depth int)
		walk = func(e *db.TraceExpr, depth int) {
			if depth > db.MaxTraceExprDepth+1 {
				t.Fatalf("depth %d", depth)
			}
			switch e.Op {
			case "AND", "OR":
			case "NOT":
				if len(e.Subs) != 1 {
					t.Fatalf("NOT with %d operands", len(e.Subs))
				}
			default:
				ok := false
				for _, c := range db.TraceColumns {
					ok = ok || c == e.Key
				}
				if !ok {
					t.Fatalf("key %q", e.Key)
				}
			}
			for _, s := range e.Subs {
				walk(s, depth+1)
			}
		}
		walk(e, 0)
	})
}
