package sqlstore

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/lossless"
)

// errInvalidJSON reports a JSON column that does not hold JSON.
var errInvalidJSON = errors.New("invalid JSON")

// jsonArg binds raw JSON to a JSON column; empty is SQL NULL.
func (s *Store) jsonArg(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	return s.jsonText(raw)
}

// jsonText is raw JSON as a JSON column's text: without its \u0000
// escapes where the dialect says JSONWithoutNUL.
func (s *Store) jsonText(raw []byte) string {
	if s.d.JSONWithoutNUL {
		raw = jsonWithoutNUL(raw)
	}
	return string(raw)
}

// jsonWithoutNUL returns JSON text b without its \u0000 escapes (b itself
// when it has none). An escaped backslash followed by "u0000" is text, not
// an escape, and is kept.
func jsonWithoutNUL(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u0000`)) {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		switch {
		case b[i] != '\\' || i+1 == len(b):
			out = append(out, b[i])
			i++
		case bytes.HasPrefix(b[i:], []byte(`\u0000`)):
			i += 6
		default:
			out = append(out, b[i], b[i+1])
			i += 2
		}
	}
	return out
}

// decodeJSON reads a JSON column. SQL NULL and JSON null are empty. Agno's
// SQLite writer double-encodes (the column holds a JSON string whose value is
// JSON text): up to two such layers are removed. It also writes a float
// that is not finite as Python's json does (NaN, Infinity, -Infinity, which
// JSON has no words for): those are read as null (see lossless.WithoutNonFinite).
func decodeJSON(b []byte) (json.RawMessage, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || string(b) == "null" {
		return nil, nil
	}
	if !json.Valid(b) {
		var ok bool
		if b, ok = lossless.WithoutNonFinite(b); !ok {
			return nil, errInvalidJSON
		}
	}
	v := b
	for range 2 {
		if v[0] != '"' {
			break
		}
		var inner string
		if json.Unmarshal(v, &inner) != nil {
			break
		}
		t := bytes.TrimSpace([]byte(inner))
		if len(t) == 0 {
			break
		}
		if !json.Valid(t) {
			var ok bool
			if t, ok = lossless.WithoutNonFinite(t); !ok {
				break
			}
		}
		v = t
	}
	switch {
	case string(v) == "null":
		return nil, nil
	case v[0] == '{' || v[0] == '[':
		return json.RawMessage(bytes.Clone(v)), nil
	}
	// A plain JSON string or scalar: keep it as stored.
	return json.RawMessage(bytes.Clone(b)), nil
}

// errRunDataNotObject reports a run_data that is JSON but no object (a
// string, a number, an array: Postgres's JSONB takes any of them).
var errRunDataNotObject = errors.New("run_data is not a JSON object")

// decodeRunData reads run_data as decodeJSON does; the run is a JSON
// object, so anything else (empty, JSON null, a string, …) is an error.
func decodeRunData(b []byte) (json.RawMessage, error) {
	v, err := decodeJSON(b)
	if err == nil && (len(v) == 0 || v[0] != '{') {
		err = errRunDataNotObject
	}
	return v, err
}

// decodeJSONString reads a column holding a JSON string (memory text). Up to
// two layers of string encoding are removed; other JSON is returned as text.
func decodeJSONString(b []byte) string {
	b = bytes.TrimSpace(b)
	for range 2 {
		if len(b) == 0 || b[0] != '"' {
			break
		}
		var s string
		if json.Unmarshal(b, &s) != nil {
			break
		}
		b = []byte(s)
	}
	return string(b)
}

// DecodeJSONColumn reads a JSON column the way the store does: SQL NULL and
// JSON null are empty, Agno's double string encoding is removed, and text
// that is not JSON is an error. The migrate package uses it for rows it moves.
func DecodeJSONColumn(b []byte) (json.RawMessage, error) { return decodeJSON(b) }

// undecodable turns the Scan error of a row whose key (id, the first
// column) was read into a *db.CorruptRowError: the row arrived and one of
// its later columns does not convert (SQLite holds anything in any column:
// a REAL or text where an integer timestamp belongs). A key left empty
// means the row never arrived (sql.Row carries the query's own error to
// Scan): that error is returned as it is.
func undecodable(table, id string, err error) error {
	if id == "" || errors.Is(err, sql.ErrNoRows) {
		return err
	}
	return &db.CorruptRowError{Table: table, ID: id, Err: err}
}

// decodeRows appends the rows scan decodes to out. A row that does not
// decode (a *db.CorruptRowError: another writer's row) is left out and
// reported in corrupt, joined, so that one bad row never fails a whole
// list; any other error ends the read.
func decodeRows[T any](rows *sql.Rows, out []T, scan func(scanner) (*T, error)) (_ []T, corrupt, err error) {
	var bad []error
	for rows.Next() {
		v, err := scan(rows)
		var ce *db.CorruptRowError
		switch {
		case errors.As(err, &ce):
			bad = append(bad, err)
		case err != nil:
			return nil, nil, err
		default:
			out = append(out, *v)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	return out, errors.Join(bad...), nil
}
