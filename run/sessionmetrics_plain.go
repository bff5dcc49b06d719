package run

import (
	"bytes"
	"maps"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/agentryhq/agentry/internal/lossless"
	"github.com/agentryhq/agentry/model"
)

// Every turn that spends tokens reads its session's metrics and writes them
// back (UpdateSessionData). Through reflection that was about a third of an
// in-memory turn's CPU, so the forms this package writes itself are read and
// written here directly; anything else (members kept in Extra, escapes,
// numbers in other forms) takes the general path, which gives the same
// value: TestPlainSessionMetrics_SameAsGeneral and FuzzPlainSessionMetrics
// compare the two.

// decodePlainSessionMetrics reads the valid JSON value data as
// SessionMetrics.UnmarshalJSON does when it is an object holding only what
// SessionMetrics models, in the forms UnmarshalJSON keeps nothing of; ok
// false for anything else.
func decodePlainSessionMetrics(data []byte) (m SessionMetrics, ok bool) {
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return m, false
	}
	details := false
	r := lossless.ReadMembers(data)
	for key, raw, more := r.Next(); more; key, raw, more = r.Next() {
		if string(key) == "details" {
			if details {
				return m, false // repeated: encoding/json merges the two
			}
			details = true
			if m.Details, ok = decodePlainDetails(raw); !ok {
				return m, false
			}
			continue
		}
		if !setPlainUsage(&m.Usage, key, raw) {
			return m, false
		}
	}
	return m, true
}

// decodePlainDetails reads a details object: per role, a list of models.
func decodePlainDetails(raw []byte) (map[string][]ModelMetrics, bool) {
	if raw[0] != '{' {
		return nil, false
	}
	d := make(map[string][]ModelMetrics, 1)
	r := lossless.ReadMembers(raw)
	for key, list, more := r.Next(); more; key, list, more = r.Next() {
		role := string(key)
		if list[0] != '[' || bytes.IndexByte(key, '\\') >= 0 || !utf8.ValidString(role) {
			return nil, false
		}
		if _, dup := d[role]; dup {
			return nil, false
		}
		models := []ModelMetrics{}
		els := lossless.ReadElements(list)
		for el, more := els.Next(); more; el, more = els.Next() {
			mm, ok := decodePlainModel(el)
			if !ok {
				return nil, false
			}
			models = append(models, mm)
		}
		d[role] = models
	}
	if len(d) == 0 {
		return nil, false // {}: omitted when written, so kept as stored
	}
	return d, true
}

// decodePlainModel reads one model's entry: its id, provider and usage.
func decodePlainModel(raw []byte) (mm ModelMetrics, ok bool) {
	if raw[0] != '{' {
		return mm, false
	}
	r := lossless.ReadMembers(raw)
	for key, v, more := r.Next(); more; key, v, more = r.Next() {
		switch string(key) {
		case "id":
			if mm.ID, ok = plainString(v); !ok {
				return mm, false
			}
		case "provider":
			if mm.Provider, ok = plainString(v); !ok {
				return mm, false
			}
		default:
			if !setPlainUsage(&mm.Usage, key, v) {
				return mm, false
			}
		}
	}
	return mm, true
}

// plainString is a JSON string without escapes, in valid UTF-8.
func plainString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || bytes.IndexByte(raw, '\\') >= 0 || !utf8.Valid(raw) {
		return "", false
	}
	return string(raw[1 : len(raw)-1]), true
}

// setPlainUsage sets the Usage member key from raw: a nonzero integer
// count, or a nonzero float that encoding/json writes back as Python reads
// it (lossless.Lossy). A zero is omitted when written, so the general path
// keeps its stored form; false for it and for any other member.
func setPlainUsage(u *model.Usage, key, raw []byte) bool {
	var n *int
	switch string(key) {
	case "input_tokens":
		n = &u.InputTokens
	case "output_tokens":
		n = &u.OutputTokens
	case "total_tokens":
		n = &u.TotalTokens
	case "cache_read_tokens":
		n = &u.CacheReadTokens
	case "cache_write_tokens":
		n = &u.CacheWriteTokens
	case "reasoning_tokens":
		n = &u.ReasoningTokens
	}
	if n != nil {
		v, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil || v == 0 {
			return false
		}
		*n = int(v)
		return true
	}
	var f *float64
	switch string(key) {
	case "cost":
		f = &u.Cost
	case "duration":
		f = &u.Duration
	case "time_to_first_token":
		f = &u.TimeToFirstToken
	default:
		return false
	}
	if raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') || lossless.Lossy(raw) {
		return false
	}
	x, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || x == 0 {
		return false
	}
	*f = x
	return true
}

// appendPlainSessionMetrics appends m as MarshalJSON writes it when neither
// m nor a model of its details holds Extra; false otherwise (and dst is
// then unspecified).
func appendPlainSessionMetrics(dst []byte, m *SessionMetrics) ([]byte, bool) {
	if len(m.Extra) > 0 {
		return dst, false
	}
	b := append(dst, '{')
	var ok bool
	if b, ok = appendUsage(b, &m.Usage, true); !ok {
		return dst, false
	}
	if len(m.Details) > 0 {
		b = appendKey(b, "details")
		b = append(b, '{')
		var one [1]string
		roles := one[:0]
		if len(m.Details) == 1 { // the common case ("model"): nothing to sort
			for role := range m.Details {
				roles = append(roles, role)
			}
		} else {
			roles = slices.Sorted(maps.Keys(m.Details))
		}
		for i, role := range roles {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(appendString(b, role), ':')
			list := m.Details[role]
			if list == nil {
				b = append(b, "null"...)
				continue
			}
			b = append(b, '[')
			for j := range list {
				mm := &list[j]
				if len(mm.Extra) > 0 {
					return dst, false
				}
				if j > 0 {
					b = append(b, ',')
				}
				b = append(b, '{')
				b = appendAlways(b, "id", mm.ID)
				b = appendAlways(b, "provider", mm.Provider)
				if b, ok = appendUsage(b, &mm.Usage, true); !ok {
					return dst, false
				}
				b = append(b, '}')
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	return append(b, '}'), true
}
