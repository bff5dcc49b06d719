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
// rebuilt. The caller serialises writes against reads.
type index struct {
	dims     int
	m, m0    int // max links per node above layer 0, and on layer 0
	efBuild  int
	ml       float64
	vecs     []float32   // node i's vector is vecs[i*dims:(i+1)*dims]
	links    [][][]int32 // links[node][level]
	keys     []int64
	deleted  []bool
	live     int
	entry    int32
	maxLevel int
	rng      *rand.Rand
	visited  sync.Pool // *visitSet
}

// visitSet is one search's scratch: the visited marks and the two heaps,
// pooled so that a search allocates only its result.
type visitSet struct {
	mark       []uint32
	gen        uint32
	cands, res candHeap
	ndist      int // distance computations, the load-independent cost
}

func newIndex(dims, m, efBuild int, seed uint64) *index {
	return &index{dims: dims, m: m, m0: 2 * m, efBuild: efBuild, ml: 1 / math.Log(float64(m)), entry: -1,
		rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

func dot(a, b []float32) float32 {
	var s0, s1, s2, s3 float32
	n := len(a) &^ 3
	b = b[:len(a)]
	for i := 0; i < n; i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for i := n; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}

func (x *index) vec(i int32) []float32 { return x.vecs[int(i)*x.dims : (int(i)+1)*x.dims] }
func (x *index) dist(q []float32, i int32) float32 {
	return 1 - dot(q, x.vec(i))
}

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

// searchLayer is the beam search of one layer from the entry points eps,
// keeping ef results; tombstones are traversed but, when skipDeleted, not
// kept as results.
func (x *index) searchLayer(q []float32, eps []cand, ef, level int, skipDeleted bool, ndist *int) []cand {
	vs := x.visitSet()
	defer x.visited.Put(vs)
	defer func() {
		if ndist != nil {
			*ndist += vs.ndist
		}
	}()
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
		ls := x.links[c.id]
		if level >= len(ls) {
			continue
		}
		for _, n := range ls[level] {
			if vs.mark[n] == vs.gen {
				continue
			}
			vs.mark[n] = vs.gen
			d := x.dist(q, n)
			vs.ndist++
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
			if 1-dot(x.vec(c.id), x.vec(o)) < c.d {
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

// add inserts a unit vector for key and returns its node id.
func (x *index) add(key int64, v []float32) int32 {
	id := int32(len(x.keys))
	x.keys = append(x.keys, key)
	x.vecs = append(x.vecs, v...)
	x.deleted = append(x.deleted, false)
	x.live++
	level := x.randomLevel()
	x.links = append(x.links, make([][]int32, level+1))
	if x.entry < 0 {
		x.entry, x.maxLevel = id, level
		return id
	}
	ep := []cand{{x.entry, x.dist(v, x.entry)}}
	for l := x.maxLevel; l > level; l-- {
		ep = x.searchLayer(v, ep, 1, l, false, nil)[:1]
	}
	for l := min(level, x.maxLevel); l >= 0; l-- {
		w := x.searchLayer(v, ep, x.efBuild, l, false, nil)
		mmax := x.m
		if l == 0 {
			mmax = x.m0
		}
		nb := x.selectNeighbors(w, x.m)
		x.links[id][l] = nb
		for _, n := range nb {
			ls := append(x.links[n][l], id)
			if len(ls) > mmax {
				cs := make([]cand, len(ls))
				nv := x.vec(n)
				for i, o := range ls {
					cs[i] = cand{o, 1 - dot(nv, x.vec(o))}
				}
				sortCands(cs)
				ls = x.selectNeighbors(cs, mmax)
			}
			x.links[n][l] = ls
		}
		ep = w
	}
	if level > x.maxLevel {
		x.entry, x.maxLevel = id, level
	}
	return id
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

// searchCounted is search that also returns how many distances it computed.
func (x *index) searchCounted(q []float32, k, ef int) ([]cand, int) {
	if x.entry < 0 || x.live == 0 {
		return nil, 0
	}
	n := 1
	ep := []cand{{x.entry, x.dist(q, x.entry)}}
	for l := x.maxLevel; l > 0; l-- {
		ep = x.searchLayer(q, ep, 1, l, false, &n)[:1]
	}
	res := x.searchLayer(q, ep, max(ef, k), 0, true, &n)
	if len(res) > k {
		res = res[:k]
	}
	return res, n
}
