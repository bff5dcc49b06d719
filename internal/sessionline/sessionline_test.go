package sessionline

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
)

func TestMergeState(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name                   string
		read, now, over, newer map[string]any
		want                   map[string]any
	}{
		{"the run's new key joins the newer state",
			map[string]any{"x": 1.0}, map[string]any{"x": 1.0, "mine": true}, nil,
			map[string]any{"x": 1.0, "theirs": true}, map[string]any{"x": 1.0, "mine": true, "theirs": true}},
		{"a key the run left as it read keeps the newer value",
			map[string]any{"x": 1.0}, map[string]any{"x": 1}, nil,
			map[string]any{"x": 2.0}, map[string]any{"x": 2.0}},
		{"a key the run changed takes the run's value",
			map[string]any{"x": 1.0}, map[string]any{"x": 5.0}, nil,
			map[string]any{"x": 2.0}, map[string]any{"x": 5.0}},
		{"a key the call set wins even at the value read",
			map[string]any{"x": 1.0}, map[string]any{"x": 1.0}, map[string]any{"x": 1.0},
			map[string]any{"x": 2.0}, map[string]any{"x": 1.0}},
		{"a key the run removed is removed",
			map[string]any{"x": 1.0, "y": 1.0}, map[string]any{"y": 1.0}, nil,
			map[string]any{"x": 2.0, "y": 1.0}, map[string]any{"y": 1.0}},
		{"a nested change counts",
			map[string]any{"m": map[string]any{"k": 1.0}}, map[string]any{"m": map[string]any{"k": 2.0}}, nil,
			map[string]any{"m": map[string]any{"k": 1.0}, "z": 0.0}, map[string]any{"m": map[string]any{"k": 2.0}, "z": 0.0}},
		{"no newer state",
			nil, map[string]any{"x": 1.0}, map[string]any{"x": 1.0},
			nil, map[string]any{"x": 1.0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := MergeState(c.read, c.now, c.over, c.newer)
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
}

// The registry's turns: a run that read before another run's write gets that
// row to rebase on, a run whose read came after it (or that wrote it) does
// not; a run that read before it joined (UnknownSeq) gets any row written
// here; a second acquire waits for the first release.
func TestSessionLines_Turns(t *testing.T) {
	t.Parallel()
	var r Registry
	k := Key{DB: &db.DB{}, ID: "s"}
	early := r.Join(k)
	if base := r.Acquire(k, early); base != nil {
		t.Fatalf("first write rebased on %v", base)
	}
	row := &db.Session{SessionID: "s"}
	early2 := r.Join(k) // joined before the write lands: reads what is stored
	if seq := r.Release(k, row, early, false); seq != 1 {
		t.Fatalf("seq after the first write %d", seq)
	}
	late := r.Join(k)
	claimed := UnknownSeq
	r.Join(k)
	if base := r.Acquire(k, early2); base != row {
		t.Fatalf("a run that read before the write rebased on %v", base)
	}
	got := make(chan *db.Session)
	go func() { got <- r.Acquire(k, late) }()
	select {
	case b := <-got:
		t.Fatalf("a second acquire did not wait (%v)", b)
	case <-time.After(50 * time.Millisecond):
	}
	if seq := r.Release(k, nil, early2, true); seq != 1 {
		t.Fatalf("seq after a rebased run wrote nothing %d", seq)
	}
	if base := <-got; base != nil {
		t.Fatalf("a run that read after the write rebased on %v", base)
	}
	r.Release(k, nil, late, false)
	if base := r.Acquire(k, claimed); base != row {
		t.Fatalf("a run that read before it joined rebased on %v", base)
	}
	r.Release(k, nil, claimed, true)
	for range 4 {
		r.Leave(k)
	}
	if r.Held(k) {
		t.Fatal("the line outlived its writers")
	}
}

// A reader that took a mark before it read a session learns whether a row
// was written through the session's line since: while the line is in
// progress, after it ended (as long as the registry remembers it), and not
// for a write before the mark or another session's write.
func TestRegistry_WrittenSince(t *testing.T) {
	t.Parallel()
	var r Registry
	k, other := Key{DB: &db.DB{}, ID: "s"}, Key{DB: &db.DB{}, ID: "s"}
	write := func(k Key) {
		seq := r.Join(k)
		r.Acquire(k, seq)
		r.Release(k, &db.Session{SessionID: k.ID}, seq, false)
		r.Leave(k)
	}
	write(k)
	mark := r.Mark()
	if r.WrittenSince(k, mark) {
		t.Fatal("a write before the mark counts")
	}
	write(other)
	if r.WrittenSince(k, mark) {
		t.Fatal("another session's write counts")
	}
	r.Join(k) // in progress while the next write lands
	write(k)
	if !r.WrittenSince(k, mark) {
		t.Fatal("a write since the mark, line in progress, is not seen")
	}
	r.Leave(k)
	if !r.WrittenSince(k, mark) {
		t.Fatal("a write since the mark, line ended, is not seen")
	}
	r.Join(k) // starts and ends again without writing: still seen
	r.Leave(k)
	for range endedLines - 1 {
		write(Key{DB: k.DB, ID: "filler"})
	}
	if !r.WrittenSince(k, mark) {
		t.Fatal("forgotten before endedLines other lines ended")
	}
	for i := range endedLines {
		write(Key{DB: k.DB, ID: string(rune('a' + i%26))})
		write(Key{DB: other.DB, ID: string(rune('a'+i%26)) + "x"})
	}
	if len(r.ended) > endedLines {
		t.Fatalf("%d ended lines remembered, at most %d", len(r.ended), endedLines)
	}
}

func TestUpdate_RunsAgainWhileTheSessionChanged(t *testing.T) {
	t.Parallel()
	r := &Registry{}
	k := Key{ID: "s-changed"}
	calls := 0
	err := r.Update(k, func() (*db.Session, error) {
		calls++
		if calls < 3 {
			return nil, fmt.Errorf("write: %w", db.ErrSessionChanged)
		}
		return &db.Session{SessionID: "s-changed"}, nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("Update = %v after %d calls, want nil after 3", err, calls)
	}
	// Bounded: a row that changes every time fails as changed.
	calls = 0
	err = r.Update(k, func() (*db.Session, error) {
		calls++
		return nil, db.ErrSessionChanged
	})
	if !errors.Is(err, db.ErrSessionChanged) || calls != MaxChangedRetries+1 {
		t.Fatalf("Update = %v after %d calls, want ErrSessionChanged after %d", err, calls, MaxChangedRetries+1)
	}
	// Other errors are not retried.
	calls = 0
	boom := errors.New("boom")
	if err := r.Update(k, func() (*db.Session, error) { calls++; return nil, boom }); err != boom || calls != 1 {
		t.Fatalf("Update = %v after %d calls, want boom after 1", err, calls)
	}
	if r.Held(k) {
		t.Fatal("the line is still held")
	}
}
