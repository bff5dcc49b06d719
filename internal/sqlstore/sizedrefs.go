package sqlstore

import (
	"strconv"
	"strings"
)

// sizedRefEntry is one history run in SessionHistoryRefs' SQLite statement
// with cached runs: "run_index,updated_at,size,len:run_id", an empty field
// for NULL, size the run_data's bytes and len the run id's. The runs come
// as one text of entries, newest first, in a single row: a row of the
// statement costs ~20 calls into the driver (its 15 columns, each behind
// the connection's mutex), ~2 µs, which was most of what a whole-history
// turn spent reading history (docs/hotpath.md).
const sizedRefEntry = "ifnull(run_index, '') || ',' || ifnull(updated_at, '') || ',' || ifnull(octet_length(run_data), '') || ',' || " +
	"ifnull(octet_length(run_id), '') || ':' || ifnull(run_id, '')"

// sizedRef is a parsed sizedRefEntry.
type sizedRef struct {
	id                            string
	idx, upd, size                int64
	idxValid, updValid, sizeValid bool
}

// nextSizedRef parses the entry at the start of s and returns the rest. ok
// is false when s does not start with a well-formed entry (a value that is
// not an integer, such as a REAL run_index, or a NULL run_id): the caller
// then reads the history the general way, which reports such rows.
func nextSizedRef(s string) (r sizedRef, rest string, ok bool) {
	var f string
	if f, s, ok = strings.Cut(s, ","); ok {
		r.idx, r.idxValid, ok = optionalInt(f)
	}
	if ok {
		if f, s, ok = strings.Cut(s, ","); ok {
			r.upd, r.updValid, ok = optionalInt(f)
		}
	}
	if ok {
		if f, s, ok = strings.Cut(s, ","); ok {
			r.size, r.sizeValid, ok = optionalInt(f)
		}
	}
	if ok {
		f, s, ok = strings.Cut(s, ":")
	}
	if !ok {
		return sizedRef{}, "", false
	}
	n, err := strconv.Atoi(f)
	if err != nil || n < 0 || n > len(s) {
		return sizedRef{}, "", false
	}
	r.id, rest = s[:n], s[n:]
	return r, rest, true
}

// optionalInt is an entry's integer field; "" is NULL.
func optionalInt(f string) (v int64, valid, ok bool) {
	if f == "" {
		return 0, false, true
	}
	v, err := strconv.ParseInt(f, 10, 64)
	return v, true, err == nil
}
