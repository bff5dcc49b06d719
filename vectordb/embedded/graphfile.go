package embedded

import (
	"bufio"
	"encoding/gob"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
)

var tableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// graphFile is what Path.hnsw holds: the graphs as of a generation of the
// rows. A file of another generation, dimension or shape is ignored and
// the graphs are rebuilt from the rows (crash-safe: the rows are the truth).
// StoreID ties the file to its database: a file written before it (empty)
// or by another database at the same path is ignored too.
type graphFile struct {
	Version    int
	StoreID    string
	Generation int64
	Dims       int
	Parts      []graphPart
}

type graphPart struct {
	Owner    string
	M        int
	Vecs     []float32
	Links    [][][]int32
	Keys     []int64
	Deleted  []bool
	Entry    int32
	MaxLevel int
}

const graphVersion = 1

func (s *Store) graphPath() string { return s.cfg.Path + ".hnsw" }

// writeGraphFile saves the graphs atomically (temp file, then rename). The
// caller holds mu.
func (s *Store) writeGraphFile() error {
	gf := graphFile{Version: graphVersion, StoreID: s.storeID, Generation: s.gen, Dims: s.cfg.Dimensions}
	for o, x := range s.parts {
		gf.Parts = append(gf.Parts, x.part(o))
	}
	tmp := s.graphPath() + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	err = errors.Join(gob.NewEncoder(w).Encode(&gf), w.Flush(), f.Sync(), f.Close())
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("vectordb/embedded: save graphs: %w", err)
	}
	return os.Rename(tmp, s.graphPath())
}

// readGraphFile loads the saved graphs if they are of generation gen and
// well formed.
func (s *Store) readGraphFile(gen int64) (parts map[string]*index, ok bool) {
	f, err := os.Open(s.graphPath())
	if err != nil {
		return nil, false
	}
	defer f.Close()
	var gf graphFile
	if err := gob.NewDecoder(bufio.NewReaderSize(f, 1<<20)).Decode(&gf); err != nil {
		s.cfg.Logger.Warn("vectordb/embedded: unreadable graph file; rebuilding", "path", s.graphPath(), "err", err)
		return nil, false
	}
	if gf.Version != graphVersion || gf.StoreID != s.storeID || gf.Generation != gen || gf.Dims != s.cfg.Dimensions {
		return nil, false
	}
	parts = map[string]*index{}
	for _, p := range gf.Parts {
		x, ok := indexFromPart(p, gf.Dims, s.cfg.EfConstruction)
		if !ok {
			s.cfg.Logger.Warn("vectordb/embedded: malformed graph file; rebuilding", "path", s.graphPath())
			return nil, false
		}
		parts[p.Owner] = x
	}
	return parts, true
}

// part is x in the file's shape. The file keeps version 1's layout (a
// node's links per level, float32 vectors only), so files written before
// the flat layer 0 and the int8 codes load unchanged: the codes are derived
// from the vectors on load.
func (x *index) part(owner string) graphPart {
	n := len(x.keys)
	links := make([][][]int32, n)
	for i := range n {
		id := int32(i)
		ls := make([][]int32, 1+len(x.upper[i]))
		ls[0] = slices.Clone(x.links(id, 0, nil))
		for l := 1; l < len(ls); l++ {
			ls[l] = x.upper[i][l-1]
		}
		links[i] = ls
	}
	return graphPart{Owner: owner, M: x.m, Vecs: x.vecs, Links: links, Keys: x.keys, Deleted: x.deleted, Entry: x.entry, MaxLevel: x.maxLevel}
}

// indexFromPart rebuilds an index from its file shape after checking every
// length and link, so that a damaged file cannot make a search index out
// of range.
func indexFromPart(p graphPart, dims, efBuild int) (*index, bool) {
	if p.M > maxM {
		return nil, false // its layer 0 alone would be n × 2M slots
	}
	m := max(p.M, 2)
	x := newIndex(dims, m, efBuild, uint64(len(p.Keys))+1)
	n := len(p.Keys)
	if len(p.Vecs) != n*dims || len(p.Links) != n || len(p.Deleted) != n || n == 0 {
		return nil, false
	}
	if p.Entry < 0 || int(p.Entry) >= n || p.MaxLevel < 0 || p.MaxLevel > 16 || len(p.Links[p.Entry]) != p.MaxLevel+1 {
		return nil, false
	}
	x.vecs, x.keys, x.deleted, x.entry, x.maxLevel = p.Vecs, p.Keys, p.Deleted, p.Entry, p.MaxLevel
	x.codes = make([]int8, n*dims)
	x.scales = make([]float32, n)
	x.l0 = make([]int32, n*(x.m0+1))
	x.upper = make([][][]int32, n)
	for i, ls := range p.Links {
		if len(ls) == 0 || len(ls) > p.MaxLevel+1 || len(ls[0]) > x.m0 {
			return nil, false
		}
		for _, l := range ls {
			for _, id := range l {
				if id < 0 || int(id) >= n {
					return nil, false
				}
			}
		}
		id := int32(i)
		x.scales[i] = quantize(x.vec(id), x.code(id))
		x.setLinks(id, 0, ls[0])
		x.upper[i] = ls[1:]
		if !p.Deleted[i] {
			x.live++
		}
	}
	return x, true
}
