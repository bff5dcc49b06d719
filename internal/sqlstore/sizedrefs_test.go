package sqlstore

import (
	"strconv"
	"strings"
	"testing"
)

func TestNextSizedRef(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want sizedRef
		rest string
		ok   bool
	}{
		{in: "3,1700000000,120,2:r1", want: sizedRef{id: "r1", idx: 3, upd: 1700000000, size: 120, idxValid: true, updValid: true, sizeValid: true}, ok: true},
		{in: "3,1,2,2:r12,1,2,2:r0", want: sizedRef{id: "r1", idx: 3, upd: 1, size: 2, idxValid: true, updValid: true, sizeValid: true}, rest: "2,1,2,2:r0", ok: true},
		{in: ",,,1:x", want: sizedRef{id: "x"}, ok: true},
		{in: "-7,0,0,0:", want: sizedRef{idx: -7, idxValid: true, updValid: true, sizeValid: true}, ok: true},
		{in: "1,2,3,9:1,2,3,4:x", want: sizedRef{id: "1,2,3,4:x", idx: 1, upd: 2, size: 3, idxValid: true, updValid: true, sizeValid: true}, ok: true},
		{in: "1,2,3,5:é€", want: sizedRef{id: "é€", idx: 1, upd: 2, size: 3, idxValid: true, updValid: true, sizeValid: true}, ok: true},
		{in: "3.5,1,2,1:x"},                  // REAL run_index
		{in: "1,soon,2,1:x"},                 // text updated_at
		{in: "1,2,3,:x"},                     // NULL run_id
		{in: "1,2,3,5:x"},                    // id shorter than its length
		{in: "1,2,3,-1:x"},                   // negative length
		{in: "1,2,3"},                        // cut short
		{in: "1,2,3,1x"},                     // no ':'
		{in: "99999999999999999999,1,2,1:x"}, // out of range
	} {
		got, rest, ok := nextSizedRef(tc.in)
		if ok != tc.ok || got != tc.want || rest != tc.rest {
			t.Errorf("nextSizedRef(%q) = %+v, %q, %v; want %+v, %q, %v", tc.in, got, rest, ok, tc.want, tc.rest, tc.ok)
		}
	}
}

// formatSizedRef writes r as SQLite's sizedRefEntry does.
func formatSizedRef(r sizedRef) string {
	opt := func(v int64, valid bool) string {
		if !valid {
			return ""
		}
		return strconv.FormatInt(v, 10)
	}
	return opt(r.idx, r.idxValid) + "," + opt(r.upd, r.updValid) + "," + opt(r.size, r.sizeValid) + "," + strconv.Itoa(len(r.id)) + ":" + r.id
}

// FuzzNextSizedRef: any text parses or is refused without a panic, a parse
// always consumes input (the caller's loop ends), and an entry written as
// SQLite writes it reads back as it was, whatever its id holds.
func FuzzNextSizedRef(f *testing.F) {
	f.Add("3,1700000000,120,2:r1", "r1", int64(3))
	f.Add(",,,1:x", "a,b:c", int64(-1))
	f.Add("1,2,3,9:1,2,3,4:x", "", int64(0))
	f.Fuzz(func(t *testing.T, text, id string, n int64) {
		for s := text; s != ""; {
			_, rest, ok := nextSizedRef(s)
			if !ok {
				break
			}
			if len(rest) >= len(s) {
				t.Fatalf("nextSizedRef(%q) consumed nothing", s)
			}
			s = rest
		}
		want := sizedRef{id: id, idx: n, upd: n / 2, size: n % 1000, idxValid: n%3 != 0, updValid: n%5 != 0, sizeValid: n%7 != 0}
		if !want.idxValid {
			want.idx = 0
		}
		if !want.updValid {
			want.upd = 0
		}
		if !want.sizeValid {
			want.size = 0
		}
		entries := formatSizedRef(want) + formatSizedRef(want)
		for range 2 {
			got, rest, ok := nextSizedRef(entries)
			if !ok || got != want {
				t.Fatalf("nextSizedRef(%q) = %+v, %v; want %+v", entries, got, ok, want)
			}
			entries = rest
		}
		if entries != "" {
			t.Fatalf("left %q", entries)
		}
	})
}

// The one-row form's entries must come newest first (run_index descending,
// NULL last), the order SessionHistoryRefs' subquery gives group_concat;
// entries in any other order leave the history to SessionHistory.
func TestRefsAcc_SizedRefsOrder(t *testing.T) {
	e := func(idx string, id string) string { return idx + ",1,2," + strconv.Itoa(len(id)) + ":" + id }
	for _, tc := range []struct {
		name    string
		text    string
		limit   int
		decided bool
		ids     string // newest first
	}{
		{"newest first", e("3", "c") + e("2", "b") + e("1", "a"), 10, true, "c b a"},
		{"past the limit", e("3", "c") + e("2", "b") + e("1", "a"), 2, true, "c b"},
		{"NULL past the limit", e("3", "c") + e("2", "b") + e("", "n"), 2, true, "c b"},
		{"oldest first", e("1", "a") + e("2", "b") + e("3", "c"), 10, false, ""},
		{"out of order past the limit", e("3", "c") + e("1", "a") + e("2", "b"), 2, false, ""},
		{"run after a NULL", e("3", "c") + e("", "n") + e("1", "a"), 1, false, ""},
		{"tie", e("3", "c") + e("3", "d"), 10, false, ""},
		{"unparsable", e("3", "c") + "x", 10, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := refsAcc{limit: tc.limit, decided: true}
			a.sizedRefs(&sizedHistory{}, tc.text)
			if a.decided != tc.decided {
				t.Fatalf("decided = %v, want %v", a.decided, tc.decided)
			}
			if !tc.decided {
				return
			}
			var ids []string
			for _, r := range a.refs {
				ids = append(ids, r.RunID)
			}
			if got := strings.Join(ids, " "); got != tc.ids {
				t.Fatalf("refs %q, want %q", got, tc.ids)
			}
		})
	}
}
