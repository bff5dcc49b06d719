package embedded

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
)

// index is one HNSW graph (Malkov & Yashunin, 2016) over unit vectors,
// where distance is 1 − dot product. Nodes are dense int32 ids; keys maps
// them to the store's row ids. Deleted nodes stay in the graph as
// tombstones (still traversed, never returned) until the partition is
// rebuilt. The caller serialises writes against reads; addBatch inserts
// concurrently under per-node locks of its own.
//
// The walk compares int8 codes (codes, scales); the float32 vectors (vecs)
// re-score the walk's results (rerank). Layer 0, where a search spends
// nearly all of its time, is one flat array with a fixed slot per node,
// so a node's links are one memory access away, not three.
type index struct {
	dims     int
	m, m0    int // max links per node above layer 0, and on layer 0
	efBuild  int
	ml       float64
	vecs     []float32   // node i's vector is vecs[i*dims:(i+1)*dims]
	codes    []int8      // node i's int8 code, same layout
	scales   []float32   // dot(i, j) ≈ scales[i] × scales[j] × dotI8(code i, code j)
	l0       []int32     // node i's layer-0 slot l0[i*(m0+1):]: a count, then up to m0 ids
	upper    [][][]int32 // upper[i][l-1]: node i's links on layer l ≥ 1
	keys     []int64
	deleted  []bool
	live     int
	entry    int32
	maxLevel int
	rng      *rand.Rand
	visited  sync.Pool // *visitSet

	// Set only while addBatch runs: a lock per node guarding its links,
	// and one for the entry point.
	locks   []sync.Mutex
	entryMu sync.Mutex
}

// visitSet is one search's scratch: the visited marks (stamped with a
// generation, so a search does not clear them), the two heaps and the
// buffers, pooled so that a search allocates only its result.
type visitSet struct {
	mark       []uint32
	gen        uint32
	cands, res candHeap
	qcode      []int8
	nbuf       []int32 // a copy of a node's links, taken under its lock
	fresh      []int32 // the unvisited neighbours of the node being expanded
	sink       int8
	fsink      float32
	ndist      int // distance computations, the load-independent cost
}

func newIndex(dims, m, efBuild int, seed uint64) *index {
	return &index{dims: dims, m: m, m0: 2 * m, efBuild: efBuild, ml: 1 / math.Log(float64(m)), entry: -1,
		rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

func (x *index) vec(i int32) []float32 { return x.vecs[int(i)*x.dims : (int(i)+1)*x.dims] }
func (x *index) code(i int32) []int8   { return x.codes[int(i)*x.dims : (int(i)+1)*x.dims] }

// qdist is the quantised distance from the query code qc (scale qs) to i.
func (x *index) qdist(qc []int8, qs float32, i int32) float32 {
	return 1 - qs*x.scales[i]*float32(dotI8(qc, x.code(i)))
}

func (x *index) pairDist(a, b int32) float32 { return x.qdist(x.code(a), x.scales[a], b) }

type cand struct {
	id int32
	d  float32
}

// candHeap is a binary min-heap of candidates by distance, typed so that a
// push does not box the candidate into an interface (container/heap's
// Push(any) allocated once per visited node). A max-heap is the same heap
// over negated distances.
type candHeap []cand

func (h *candHeap) push(c cand) {
	s := append(*h, c)
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if s[p].d <= s[i].d {
			break
		}
		s[p], s[i] = s[i], s[p]
		i = p
	}
	*h = s
}

func (h *candHeap) pop() cand {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	siftDown(s, 0)
	*h = s
	return top
}

func (h candHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		siftDown(h, i)
	}
}

func siftDown(s []cand, i int) {
	n := len(s)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		j := l
		if r := l + 1; r < n && s[r].d < s[l].d {
			j = r
		}
		if s[i].d <= s[j].d {
			return
		}
		s[i], s[j] = s[j], s[i]
		i = j
	}
}

func (x *index) visitSet() *visitSet {
	v, _ := x.visited.Get().(*visitSet)
	if v == nil {
		v = &visitSet{}
	}
	if len(v.mark) < len(x.keys) {
		v.mark = make([]uint32, len(x.keys)+len(x.keys)/4+16)
		v.gen = 0
	}
	v.gen++
	v.ndist = 0
	if v.gen == 0 { // wrapped: clear
		clear(v.mark)
		v.gen = 1
	}
	return v
}

// links returns i's links on level: the slot itself when no insertion runs
// concurrently, else a copy into buf taken under i's lock.
func (x *index) links(i int32, level int, buf []int32) []int32 {
	var ls []int32
	if level == 0 {
		o := int(i) * (x.m0 + 1)
		if x.locks == nil {
			return x.l0[o+1 : o+1+int(x.l0[o])]
		}
		x.locks[i].Lock()
		ls = append(buf[:0], x.l0[o+1:o+1+int(x.l0[o])]...)
		x.locks[i].Unlock()
		return ls
	}
	up := x.upper[i]
	if level > len(up) {
		return nil
	}
	if x.locks == nil {
		return up[level-1]
	}
	x.locks[i].Lock()
	ls = append(buf[:0], up[level-1]...)
	x.locks[i].Unlock()
	return ls
}

// setLinks replaces i's links on level; the caller holds i's lock when
// insertions run concurrently.
func (x *index) setLinks(i int32, level int, ls []int32) {
	if level == 0 {
		o := int(i) * (x.m0 + 1)
		x.l0[o] = int32(copy(x.l0[o+1:o+1+x.m0], ls))
		return
	}
	x.upper[i][level-1] = ls
}

// searchLayer is the beam search of one layer from the entry points eps,
// keeping ef results by quantised distance to the code qc (scale qs);
// tombstones are traversed but, when skipDeleted, not kept as results.
func (x *index) searchLayer(vs *visitSet, qc []int8, qs float32, eps []cand, ef, level int, skipDeleted bool) []cand {
	vs.gen++
	if vs.gen == 0 {
		clear(vs.mark)
		vs.gen = 1
	}
	// cands pops the closest first; res holds negated distances, so it pops
	// the farthest kept result first.
	cands, res := vs.cands[:0], vs.res[:0]
	defer func() { vs.cands, vs.res = cands[:0], res[:0] }()
	for _, e := range eps {
		vs.mark[e.id] = vs.gen
		cands = append(cands, e)
		if !skipDeleted || !x.deleted[e.id] {
			res = append(res, cand{e.id, -e.d})
		}
	}
	cands.init()
	res.init()
	for len(cands) > 0 {
		c := cands.pop()
		if len(res) >= ef && c.d > -res[0].d {
			break
		}
		ns := x.links(c.id, level, vs.nbuf)
		if x.locks != nil {
			vs.nbuf = ns
		}
		fresh := vs.fresh[:0]
		for _, n := range ns {
			if vs.mark[n] != vs.gen {
				vs.mark[n] = vs.gen
				fresh = append(fresh, n)
			}
		}
		vs.fresh = fresh
		vs.sink += x.touch(fresh)
		vs.ndist += len(fresh)
		for _, n := range fresh {
			d := x.qdist(qc, qs, n)
			if len(res) < ef || d < -res[0].d {
				cands.push(cand{n, d})
				if skipDeleted && x.deleted[n] {
					continue
				}
				res.push(cand{n, -d})
				if len(res) > ef {
					res.pop()
				}
			}
		}
	}
	out := make([]cand, len(res))
	for i := len(res) - 1; i >= 0; i-- {
		c := res.pop()
		out[i] = cand{c.id, -c.d}
	}
	return out // closest first
}

// selectNeighbors is the paper's heuristic: keep a candidate only if it is
// closer to the new node than to every neighbour already kept, then fill up
// with the closest rejected ones. cs is sorted closest first.
func (x *index) selectNeighbors(cs []cand, m int) []int32 {
	out := make([]int32, 0, m)
	var rejected []int32
	for _, c := range cs {
		if len(out) >= m {
			break
		}
		good := true
		for _, o := range out {
			if x.pairDist(c.id, o) < c.d {
				good = false
				break
			}
		}
		if good {
			out = append(out, c.id)
		} else {
			rejected = append(rejected, c.id)
		}
	}
	for _, r := range rejected {
		if len(out) >= m {
			break
		}
		out = append(out, r)
	}
	return out
}

func (x *index) randomLevel() int {
	u := x.rng.Float64()
	if u <= 0 {
		u = 1e-12
	}
	return min(int(-math.Log(u)*x.ml), 16)
}

// alloc appends an unlinked node for key with a random level.
func (x *index) alloc(key int64, v []float32) int32 {
	id := int32(len(x.keys))
	x.keys = append(x.keys, key)
	x.vecs = append(x.vecs, v...)
	x.codes = append(x.codes, make([]int8, x.dims)...)
	x.scales = append(x.scales, quantize(v, x.code(id)))
	x.deleted = append(x.deleted, false)
	x.l0 = append(x.l0, make([]int32, x.m0+1)...)
	x.upper = append(x.upper, make([][]int32, x.randomLevel()))
	x.live++
	return id
}

// link connects the allocated node id into the graph. Under addBatch it
// runs concurrently with other links: every read of a node's links is a
// copy taken under its lock, every write is made under it, and no two node
// locks are held at once. A node that raises the top level holds entryMu
// throughout, as hnswlib does, so the entry point is never a node whose
// upper links are not yet made.
func (x *index) link(vs *visitSet, id int32) {
	level := len(x.upper[id])
	if x.locks != nil {
		x.entryMu.Lock()
	}
	entry, maxLevel := x.entry, x.maxLevel
	raises := level > maxLevel || entry < 0
	if x.locks != nil && !raises {
		x.entryMu.Unlock()
	}
	if x.locks != nil && raises {
		defer x.entryMu.Unlock()
	}
	if entry < 0 {
		x.entry, x.maxLevel = id, level
		return
	}
	qc, qs := x.code(id), x.scales[id]
	ep := []cand{{entry, x.qdist(qc, qs, entry)}}
	for l := maxLevel; l > level; l-- {
		ep = x.searchLayer(vs, qc, qs, ep, 1, l, false)[:1]
	}
	for l := min(level, maxLevel); l >= 0; l-- {
		w := x.searchLayer(vs, qc, qs, ep, x.efBuild, l, false)
		mmax := x.m
		if l == 0 {
			mmax = x.m0
		}
		nb := x.selectNeighbors(w, x.m)
		if x.locks != nil {
			x.locks[id].Lock()
		}
		x.setLinks(id, l, nb)
		if x.locks != nil {
			x.locks[id].Unlock()
		}
		for _, n := range nb {
			x.addLink(n, id, l, mmax)
		}
		ep = w
	}
	if raises {
		x.entry, x.maxLevel = id, level
	}
}

// addLink adds id to n's links on level l, re-pruning them with the
// heuristic when they would exceed mmax.
func (x *index) addLink(n, id int32, l, mmax int) {
	if x.locks != nil {
		x.locks[n].Lock()
		defer x.locks[n].Unlock()
	}
	var cur []int32
	if l == 0 {
		o := int(n) * (x.m0 + 1)
		cur = x.l0[o+1 : o+1+int(x.l0[o])]
		if len(cur) < mmax {
			x.l0[o+1+len(cur)] = id
			x.l0[o]++
			return
		}
	} else {
		cur = x.upper[n][l-1]
		if len(cur) < mmax {
			x.upper[n][l-1] = append(cur, id)
			return
		}
	}
	cs := make([]cand, 0, len(cur)+1)
	for _, o := range cur {
		cs = append(cs, cand{o, x.pairDist(n, o)})
	}
	cs = append(cs, cand{id, x.pairDist(n, id)})
	sortCands(cs)
	x.setLinks(n, l, x.selectNeighbors(cs, mmax))
}

func sortCands(cs []cand) {
	slices.SortFunc(cs, func(a, b cand) int { return cmp.Compare(a.d, b.d) })
}

// remove tombstones a node.
func (x *index) remove(id int32) {
	if !x.deleted[id] {
		x.deleted[id] = true
		x.live--
	}
}

// search returns up to k live nodes closest to q, closest first, exploring
// max(ef, k) candidates on layer 0.
func (x *index) search(q []float32, k, ef int) []cand {
	res, _ := x.searchCounted(q, k, ef)
	return res
}

// searchCounted is search that also returns how many distances it
// computed: the walk's quantised ones plus the float32 rerank's.
func (x *index) searchCounted(q []float32, k, ef int) ([]cand, int) {
	if x.entry < 0 || x.live == 0 {
		return nil, 0
	}
	vs := x.visitSet()
	defer x.visited.Put(vs)
	if cap(vs.qcode) < x.dims {
		vs.qcode = make([]int8, x.dims)
	}
	qc := vs.qcode[:x.dims]
	qs := quantize(q, qc)
	ep := cand{x.entry, x.qdist(qc, qs, x.entry)}
	vs.ndist = 1
	for l := x.maxLevel; l > 0; l-- {
		ep = x.greedy(vs, qc, qs, ep, l)
	}
	res := x.searchLayer(vs, qc, qs, []cand{ep}, max(ef, k), 0, true)
	x.rerank(vs, q, res)
	vs.ndist += len(res)
	if len(res) > k {
		res = res[:k]
	}
	return res, vs.ndist
}

// greedy is the descent through an upper layer: move to the closest
// neighbour while it is closer (the beam of one the paper uses there,
// without the heaps and the result slice).
func (x *index) greedy(vs *visitSet, qc []int8, qs float32, ep cand, level int) cand {
	for {
		best := ep
		ns := x.links(ep.id, level, vs.nbuf)
		vs.ndist += len(ns)
		for _, n := range ns {
			if d := x.qdist(qc, qs, n); d < best.d {
				best = cand{n, d}
			}
		}
		if best.id == ep.id {
			return ep
		}
		ep = best
	}
}

// rerank replaces the walk's quantised distances with exact ones and
// re-sorts, so the order among close results is the float32 order.
func (x *index) rerank(vs *visitSet, q []float32, res []cand) {
	var t float32
	for _, c := range res { // overlap the misses, as touch does for codes
		v := x.vec(c.id)
		for o := 0; o < len(v); o += 16 {
			t += v[o]
		}
	}
	vs.fsink += t
	for i, c := range res {
		res[i].d = 1 - dot(q, x.vec(c.id))
	}
	sortCands(res)
}
