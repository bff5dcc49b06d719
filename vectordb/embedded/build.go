package embedded

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// addBatch inserts unit vectors for keys (len(keys) == len(vs)) with up to
// workers goroutines (GOMAXPROCS when ≤ 0) and returns their node ids in
// order. The nodes and their levels are allocated first, in order, so the
// ids and levels do not depend on the schedule; the links do (the order in
// which concurrent insertions see one another), as in hnswlib's parallel
// build. The caller serialises addBatch against searches and other writes.
func (x *index) addBatch(keys []int64, vecs [][]float32, workers int) []int32 {
	if len(keys) == 0 {
		return nil
	}
	ids := make([]int32, len(keys))
	n := len(keys)
	x.keys = slices.Grow(x.keys, n)
	x.vecs = slices.Grow(x.vecs, n*x.dims)
	x.codes = slices.Grow(x.codes, n*x.dims)
	x.scales = slices.Grow(x.scales, n)
	x.deleted = slices.Grow(x.deleted, n)
	x.l0 = slices.Grow(x.l0, n*(x.m0+1))
	x.upper = slices.Grow(x.upper, n)
	for i, v := range vecs {
		ids[i] = x.alloc(keys[i], v)
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, len(ids))
	// A few nodes are linked alone first: with a handful of nodes in the
	// graph, concurrent insertions would mostly miss one another.
	seq := min(len(ids), 64)
	if workers == 1 {
		seq = len(ids)
	}
	vs := x.visitSet()
	for _, id := range ids[:seq] {
		x.link(vs, id)
	}
	x.visited.Put(vs)
	if seq == len(ids) {
		return ids
	}
	x.locks = make([]sync.Mutex, len(x.keys))
	defer func() { x.locks = nil }()
	var next atomic.Int64
	next.Store(int64(seq))
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			vs := x.visitSet()
			defer x.visited.Put(vs)
			for {
				i := int(next.Add(1) - 1)
				if i >= len(ids) {
					return
				}
				x.link(vs, ids[i])
			}
		})
	}
	wg.Wait()
	return ids
}
