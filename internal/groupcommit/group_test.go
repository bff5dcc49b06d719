package groupcommit_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentryhq/agentry/internal/groupcommit"
)

// recorder is a commit function that records its batches and can hold the
// first one until released.
type recorder struct {
	mu      sync.Mutex
	batches [][]int
	hold    chan struct{} // the first commit waits for it to close
	held    chan struct{} // closed when the first commit holds
	once    sync.Once
}

func newRecorder() *recorder {
	return &recorder{hold: make(chan struct{}), held: make(chan struct{})}
}

func (r *recorder) commit(batch []*groupcommit.Op[int]) []*groupcommit.Op[int] {
	r.once.Do(func() {
		close(r.held)
		<-r.hold
	})
	vals := make([]int, len(batch))
	for i, op := range batch {
		vals[i] = op.Val
		if op.Val < 0 {
			op.Err = fmt.Errorf("op %d refused", op.Val)
		}
	}
	r.mu.Lock()
	r.batches = append(r.batches, vals)
	r.mu.Unlock()
	return nil
}

func (r *recorder) got() [][]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.batches)
}

// waitPending waits until n callers wait for the next group.
func waitPending[T any](t *testing.T, g *groupcommit.Group[T], n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if leading, k := g.State(); leading && k == n {
			return
		}
	}
	_, k := g.State()
	t.Fatalf("%d callers pending, want %d", k, n)
}

// startLeader starts a caller that leads the first group and holds it.
func startLeader(t *testing.T, g *groupcommit.Group[int], r *recorder) <-chan error {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- g.Do(context.Background(), 0) }()
	<-r.held
	return errc
}

// Whoever arrives while a group commits joins the next one, in arrival
// order, led by the first of them; each caller gets its own outcome.
func TestGroup_CallersArrivingDuringACommitShareTheNext(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	g := &groupcommit.Group[int]{Commit: r.commit}
	first := startLeader(t, g, r)
	errs := make([]chan error, 4)
	for i := range errs {
		errs[i] = make(chan error, 1)
		v := i + 1
		if v == 3 {
			v = -3
		}
		go func() { errs[i] <- g.Do(context.Background(), v) }()
		waitPending(t, g, i+1)
	}
	close(r.hold)
	if err := <-first; err != nil {
		t.Fatalf("leader: %v", err)
	}
	for i, c := range errs {
		err := <-c
		if (i == 2) != (err != nil) {
			t.Errorf("caller %d: err %v", i+1, err)
		}
	}
	want := [][]int{{0}, {1, 2, -3, 4}}
	if got := r.got(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("batches %v, want %v", got, want)
	}
	if g.Busy() {
		t.Error("group busy after every caller returned")
	}
}

// A group holds at most Max ops; the rest form the following groups.
func TestGroup_MaxSize(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	g := &groupcommit.Group[int]{Commit: r.commit, Max: 3}
	first := startLeader(t, g, r)
	var wg sync.WaitGroup
	for i := 1; i <= 7; i++ {
		wg.Go(func() {
			if err := g.Do(context.Background(), i); err != nil {
				t.Errorf("caller %d: %v", i, err)
			}
		})
		waitPending(t, g, i)
	}
	close(r.hold)
	<-first
	wg.Wait()
	want := [][]int{{0}, {1, 2, 3}, {4, 5, 6}, {7}}
	if got := r.got(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("batches %v, want %v", got, want)
	}
}

// A caller whose context ends before a group takes it withdraws: it gets
// its context's error and its op is never committed.
func TestGroup_WithdrawsWhenContextEndsBeforeTaken(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	g := &groupcommit.Group[int]{Commit: r.commit}
	first := startLeader(t, g, r)
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan error, 1)
	go func() { gone <- g.Do(ctx, 1) }()
	waitPending(t, g, 1)
	stays := make(chan error, 1)
	go func() { stays <- g.Do(context.Background(), 2) }()
	waitPending(t, g, 2)
	cancel()
	if err := <-gone; !errors.Is(err, context.Canceled) {
		t.Fatalf("withdrawn caller: %v, want context.Canceled", err)
	}
	waitPending(t, g, 1)
	close(r.hold)
	<-first
	if err := <-stays; err != nil {
		t.Fatal(err)
	}
	want := [][]int{{0}, {2}}
	if got := r.got(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("batches %v, want %v", got, want)
	}
}

// Once a group holds an op, its caller's cancelled context does not end
// the wait: the caller returns the group's outcome, so it never returns
// before the commit that holds its write.
func TestGroup_MemberCancelledWhileItsGroupCommitsGetsTheOutcome(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	committing := make(chan struct{})
	release := make(chan struct{})
	var committed atomic.Bool
	hold := make(chan struct{})
	leader := make(chan error, 1)
	started := make(chan struct{})
	g := &groupcommit.Group[int]{}
	// The leader's group (op 0) waits until op 1 is pending, so op 1 is
	// taken by the next group.
	g.Commit = func(batch []*groupcommit.Op[int]) []*groupcommit.Op[int] {
		switch batch[0].Val {
		case 0:
			close(started)
			<-hold
		case 1:
			close(committing)
			<-release
			committed.Store(true)
		}
		return nil
	}
	go func() { leader <- g.Do(context.Background(), 0) }()
	<-started
	member := make(chan error, 1)
	go func() { member <- g.Do(ctx, 1) }()
	waitPending(t, g, 1)
	close(hold)
	<-committing
	cancel()
	select {
	case err := <-member:
		t.Fatalf("member returned %v before its group committed", err)
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	if err := <-member; err != nil {
		t.Fatalf("member: %v, want its group's outcome (nil)", err)
	}
	if !committed.Load() {
		t.Fatal("member returned before the commit")
	}
	if err := <-leader; err != nil {
		t.Fatal(err)
	}
}

// When a group runs again (a batch-mate broke the shared transaction), the
// error a member got in the failed attempt does not outlive the retry, and
// Reset clears what it captured.
func TestGroup_RetryClearsAStaleOutcome(t *testing.T) {
	t.Parallel()
	type capture struct{ rows int }
	var attempts atomic.Int32
	hold := make(chan struct{})
	started := make(chan struct{})
	g := &groupcommit.Group[*capture]{
		Reset: func(op *groupcommit.Op[*capture]) { op.Val.rows = 0 },
	}
	g.Commit = func(batch []*groupcommit.Op[*capture]) []*groupcommit.Op[*capture] {
		if len(batch) == 1 && attempts.Load() == 0 {
			close(started)
			<-hold
			batch[0].Val.rows++
			return nil
		}
		a := attempts.Add(1)
		for _, op := range batch {
			op.Val.rows++
			op.Err = errors.New("savepoint rolled back")
		}
		if a == 1 {
			// The last member broke the transaction: it fails, the
			// others run again.
			batch[len(batch)-1].Err = errors.New("broke the transaction")
			return batch[:len(batch)-1]
		}
		for _, op := range batch {
			op.Err = nil
		}
		return nil
	}
	leader := make(chan error, 1)
	go func() { leader <- g.Do(context.Background(), &capture{}) }()
	<-started
	caps := []*capture{{}, {}, {}}
	errs := make([]chan error, len(caps))
	for i, c := range caps {
		errs[i] = make(chan error, 1)
		go func() { errs[i] <- g.Do(context.Background(), c) }()
		waitPending(t, g, i+1)
	}
	close(hold)
	if err := <-leader; err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := <-errs[i]; err != nil {
			t.Errorf("member %d retried: stale error %v", i, err)
		}
		if caps[i].rows != 1 {
			t.Errorf("member %d: %d rows captured, want 1 (reset before the retry)", i, caps[i].rows)
		}
	}
	if err := <-errs[2]; err == nil {
		t.Error("the member that broke the transaction succeeded")
	}
}

// The Group clears Err before a retry even without Reset: a commit
// function that only sets errors cannot leave a failed attempt's error.
func TestGroup_RetryClearsErrWithoutReset(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	g := &groupcommit.Group[int]{Commit: func(batch []*groupcommit.Op[int]) []*groupcommit.Op[int] {
		if n.Add(1) == 1 {
			for _, op := range batch {
				op.Err = errors.New("first attempt")
			}
			// Returned to run again; the second attempt sets nothing.
			return batch[1:]
		}
		return nil
	}}
	// One caller: a batch of one returned whole is no progress, so use a
	// commit that returns a strict subset of a batch of one (empty).
	if err := g.Do(context.Background(), 1); err == nil || err.Error() != "first attempt" {
		t.Fatalf("lone caller: %v", err)
	}
	n.Store(0)
	hold := make(chan struct{})
	held := make(chan struct{})
	inner := g.Commit
	var once sync.Once
	g2 := &groupcommit.Group[int]{}
	g2.Commit = func(batch []*groupcommit.Op[int]) []*groupcommit.Op[int] {
		if batch[0].Val == 0 {
			once.Do(func() { close(held); <-hold })
			return nil
		}
		return inner(batch)
	}
	leader := make(chan error, 1)
	go func() { leader <- g2.Do(context.Background(), 0) }()
	<-held
	errs := make([]chan error, 3)
	for i := range errs {
		errs[i] = make(chan error, 1)
		go func() { errs[i] <- g2.Do(context.Background(), i+1) }()
		waitPending(t, g2, i+1)
	}
	close(hold)
	<-leader
	if err := <-errs[0]; err == nil {
		t.Error("member 1, decided in the first attempt, lost its error")
	}
	for i := 1; i < 3; i++ {
		if err := <-errs[i]; err != nil {
			t.Errorf("member %d: stale error %v after a successful retry", i+1, err)
		}
	}
}

// A commit function that returns every member to run again fails the
// first, so that the retries end.
func TestGroup_NoProgressEnds(t *testing.T) {
	t.Parallel()
	g := &groupcommit.Group[int]{Commit: func(batch []*groupcommit.Op[int]) []*groupcommit.Op[int] { return batch }}
	if err := g.Do(context.Background(), 1); !errors.Is(err, groupcommit.ErrNoProgress) {
		t.Fatalf("err %v, want ErrNoProgress", err)
	}
	if g.Busy() {
		t.Error("group busy after its only caller returned")
	}
}

// A commit function that panics decides its group with ErrCommitPanicked;
// the group keeps working.
func TestGroup_PanickingCommitFailsItsGroupOnly(t *testing.T) {
	t.Parallel()
	g := &groupcommit.Group[int]{Commit: func(batch []*groupcommit.Op[int]) []*groupcommit.Op[int] {
		if batch[0].Val < 0 {
			panic("boom")
		}
		return nil
	}}
	if err := g.Do(context.Background(), -1); !errors.Is(err, groupcommit.ErrCommitPanicked) {
		t.Fatalf("err %v, want ErrCommitPanicked", err)
	}
	if err := g.Do(context.Background(), 1); err != nil {
		t.Fatalf("after a panic: %v", err)
	}
}

// Enter and Leave bracket every leader's groups, and the batch is taken
// after Enter: callers arriving while the leader waits in Enter join it.
func TestGroup_EnterBeforeTakingTheBatch(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{}, 1)
	gate <- struct{}{} // held by someone else
	var sizes []int
	var inside atomic.Int32
	g := &groupcommit.Group[int]{
		Enter: func() { gate <- struct{}{} },
		Leave: func() { <-gate },
	}
	g.Commit = func(batch []*groupcommit.Op[int]) []*groupcommit.Op[int] {
		if inside.Add(1) != 1 {
			t.Error("two groups at once")
		}
		sizes = append(sizes, len(batch))
		inside.Add(-1)
		return nil
	}
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Go(func() { _ = g.Do(context.Background(), i) })
		waitPending(t, g, i+1)
	}
	<-gate
	wg.Wait()
	if !slices.Equal(sizes, []int{5}) {
		t.Errorf("group sizes %v, want [5]", sizes)
	}
}

// Many concurrent callers: each op is committed exactly once, whatever
// the interleaving of arrivals, withdrawals and hand-overs.
func TestGroup_EveryOpCommittedOnce(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := map[int]int{}
	g := &groupcommit.Group[int]{Max: 5, Commit: func(batch []*groupcommit.Op[int]) []*groupcommit.Op[int] {
		mu.Lock()
		defer mu.Unlock()
		for _, op := range batch {
			seen[op.Val]++
		}
		return nil
	}}
	var withdrawn atomic.Int32
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			ctx := context.Background()
			if i%7 == 0 {
				c, cancel := context.WithCancel(ctx)
				cancel()
				ctx = c
			}
			err := g.Do(ctx, i)
			switch {
			case errors.Is(err, context.Canceled):
				withdrawn.Add(1)
			case err != nil:
				t.Errorf("op %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for i := range 200 {
		if n := seen[i]; n > 1 {
			t.Errorf("op %d committed %d times", i, n)
		}
	}
	if got := len(seen) + int(withdrawn.Load()); got != 200 {
		t.Errorf("%d committed + %d withdrawn, want 200", len(seen), withdrawn.Load())
	}
	if g.Busy() {
		t.Error("group busy after every caller returned")
	}
}
