package codemode

import (
	"runtime"
	"runtime/metrics"
	"sync"
	"time"
)

// memWatch enforces the memory limit. goja has no allocator hooks, so the
// heap is watched from outside: while cells run, a ticker samples the Go
// heap and interrupts a cell whose run has grown it by more than the limit.
// The heap is the process's, so growth is attributed to every cell executing
// JavaScript at the time (a cell awaiting tools is not charged): under
// concurrency a cell may be stopped for another's allocations, never the
// other way round. Before stopping a cell the watcher collects garbage once
// (at most every 100 ms) so that dead objects do not count.
type memWatch struct {
	limit uint64
	tick  time.Duration

	mu     sync.Mutex
	cells  map[*cellRun]uint64 // lowest heap seen during the cell
	active bool
	lastGC time.Time
	sample []metrics.Sample
}

const heapMetric = "/memory/classes/heap/objects:bytes"

func newMemWatch(limit int64) *memWatch {
	return &memWatch{limit: uint64(limit), tick: 2 * time.Millisecond, cells: map[*cellRun]uint64{},
		sample: []metrics.Sample{{Name: heapMetric}}}
}

// heap reads the bytes of heap objects (live and not yet swept); callers
// hold w.mu.
func (w *memWatch) heap() uint64 {
	metrics.Read(w.sample)
	if w.sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return w.sample[0].Value.Uint64()
}

func (w *memWatch) enter(c *cellRun) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cells[c] = w.heap()
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
		if !w.check() {
			return
		}
	}
}

// check samples once; it reports false (and stops the watcher) when no cell
// is running.
func (w *memWatch) check() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.cells) == 0 {
		w.active = false
		return false
	}
	h := w.heap()
	var over []*cellRun
	for c, base := range w.cells {
		if h < base {
			w.cells[c], base = h, h
		}
		if c.inVM.Load() && h-base > w.limit {
			over = append(over, c)
		}
	}
	if len(over) == 0 {
		return true
	}
	if time.Since(w.lastGC) > 100*time.Millisecond {
		// Garbage is not the cell's: collect it, then look again.
		w.lastGC = time.Now()
		w.mu.Unlock()
		runtime.GC()
		w.mu.Lock()
		h = w.heap()
		kept := over[:0]
		for _, c := range over {
			if base, ok := w.cells[c]; ok && h > base && h-base > w.limit {
				kept = append(kept, c)
			}
		}
		over = kept
	}
	for _, c := range over {
		c.abort(ReasonMemory)
	}
	return true
}
