package embedded

import (
	"bufio"
	"encoding/gob"
	"errors"
	"fmt"
	"os"
	"regexp"
)

var tableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// graphFile is what Path.hnsw holds: the graphs as of a generation of the
// rows. A file of another generation, dimension or shape is ignored and
// the graphs are rebuilt from the rows (crash-safe: the rows are the truth).
type graphFile struct {
	Version    int
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
	gf := graphFile{Version: graphVersion, Generation: s.gen, Dims: s.cfg.Dimensions}
	for o, x := range s.parts {
		gf.Parts = append(gf.Parts, graphPart{Owner: o, M: x.m, Vecs: x.vecs, Links: x.links, Keys: x.keys, Deleted: x.deleted, Entry: x.entry, MaxLevel: x.maxLevel})
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
	if gf.Version != graphVersion || gf.Generation != gen || gf.Dims != s.cfg.Dimensions {
		return nil, false
	}
	parts = map[string]*index{}
	for _, p := range gf.Parts {
		x := newIndex(gf.Dims, max(p.M, 2), s.cfg.EfConstruction, uint64(len(p.Keys))+1)
		x.vecs, x.links, x.keys, x.deleted, x.entry, x.maxLevel = p.Vecs, p.Links, p.Keys, p.Deleted, p.Entry, p.MaxLevel
		if !x.wellFormed() {
			s.cfg.Logger.Warn("vectordb/embedded: malformed graph file; rebuilding", "path", s.graphPath())
			return nil, false
		}
		for _, d := range x.deleted {
			if !d {
				x.live++
			}
		}
		parts[p.Owner] = x
	}
	return parts, true
}

// wellFormed checks every length and link so that a damaged file cannot
// make a search index out of range.
func (x *index) wellFormed() bool {
	n := len(x.keys)
	if len(x.vecs) != n*x.dims || len(x.links) != n || len(x.deleted) != n || n == 0 {
		return false
	}
	if x.entry < 0 || int(x.entry) >= n || x.maxLevel < 0 || x.maxLevel > 16 || len(x.links[x.entry]) != x.maxLevel+1 {
		return false
	}
	for _, ls := range x.links {
		if len(ls) == 0 || len(ls) > x.maxLevel+1 {
			return false
		}
		for _, l := range ls {
			for _, id := range l {
				if id < 0 || int(id) >= n {
					return false
				}
			}
		}
	}
	return true
}
