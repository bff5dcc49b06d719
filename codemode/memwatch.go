package codemode

import (
	"runtime"
	"runtime/metrics"
	"sync"
	"time"
)

// memWatch enforces the memory limit. goja has no allocator hooks, so the
// heap is watched from outside: while cells run, a ticker samples the Go
// heap and interrupts a cell whose run has grown the live heap by more than
// the limit. The heap is the process's, so growth is attributed to every
// cell executing JavaScript at the time (a cell awaiting tools is not
// charged): under concurrency a cell may be stopped for another's
// allocations, never the other way round.
//
// Garbage does not count. A cell is stopped when the bytes the last
// collection marked live exceed the lowest heap sampled during the cell by
// more than the limit: every marked object was in the heap at that sample
// or allocated after it (a sample after the mark is never below it), so
// that much was allocated during the cell and still reachable. When the
// heap has grown by half the limit the watcher starts a collection (at most
// every 100 ms) on a goroutine of its own, so that its mark is under way
// when the limit is crossed (objects allocated during a mark are counted as
// live by it) and the sampling goes on meanwhile; it checks again as soon as
// the collection ends. The cell is stopped at the first check after the
// collection marked its growth over the limit, once the operation it is
// running completes: a string doubling loop ends with its string at two to
// four times the limit (TestSandbox_MemoryLimitStopsAStringDoublingLoopPromptly).
type memWatch struct {
	limit uint64
	tick  time.Duration

	mu         sync.Mutex
	cells      map[*cellRun]uint64 // lowest heap sampled during the cell
	active     bool
	collecting bool
	lastGC     time.Time
	sample     []metrics.Sample
}

const (
	heapMetric = "/memory/classes/heap/objects:bytes"
	liveMetric = "/gc/heap/live:bytes"
)

func newMemWatch(limit int64) *memWatch {
	return &memWatch{limit: uint64(limit), tick: 2 * time.Millisecond, cells: map[*cellRun]uint64{},
		sample: []metrics.Sample{{Name: heapMetric}, {Name: liveMetric}}}
}

// heap reads the bytes of heap objects (live and not yet swept) and of the
// objects the last collection marked live; callers hold w.mu.
func (w *memWatch) heap() (objects, live uint64) {
	metrics.Read(w.sample)
	if w.sample[0].Value.Kind() == metrics.KindUint64 {
		objects = w.sample[0].Value.Uint64()
	}
	if w.sample[1].Value.Kind() == metrics.KindUint64 {
		live = w.sample[1].Value.Uint64()
	}
	return objects, live
}

func (w *memWatch) enter(c *cellRun) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cells[c], _ = w.heap()
	if !w.active {
		w.active = true
		go w.run()
	}
}

func (w *memWatch) leave(c *cellRun) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.cells, c)
}

// run samples until no cell is registered.
func (w *memWatch) run() {
	t := time.NewTicker(w.tick)
	defer t.Stop()
	for range t.C {
		if !w.check(true) {
			return
		}
	}
}

// check samples once; it reports false when no cell is running (and then
// stops the watcher if the ticker asked).
func (w *memWatch) check(ticker bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.cells) == 0 {
		if ticker {
			w.active = false
		}
		return false
	}
	h, live := w.heap()
	var over []*cellRun
	unsure := false
	for c, low := range w.cells {
		if h < low {
			w.cells[c], low = h, h
		}
		if !c.inVM.Load() {
			continue
		}
		switch {
		case live > low && live-low > w.limit:
			over = append(over, c)
		case h-low > w.limit/2:
			// Grown, maybe with garbage: a collection tells. It starts at
			// half the limit so that its mark is under way, counting what
			// is allocated meanwhile, when the limit is crossed.
			unsure = true
		}
	}
	if unsure && !w.collecting && time.Since(w.lastGC) > 100*time.Millisecond {
		w.collecting, w.lastGC = true, time.Now()
		go func() {
			runtime.GC()
			w.mu.Lock()
			w.collecting = false
			w.mu.Unlock()
			w.check(false) // at once: the collection may have decided it
		}()
	}
	for _, c := range over {
		c.abort(ReasonMemory)
	}
	return true
}
