package embedded

import (
	"bytes"
	"encoding/gob"
	"testing"
)

// FuzzGraphFile decodes a graph file (a damaged or foreign Path.hnsw) as
// readGraphFile does; an index it accepts must search and grow without
// panicking, and the decoding must not allocate what the file's sizes
// merely claim.
func FuzzGraphFile(f *testing.F) {
	const dims = 4
	vecs, _ := synthetic(40, 0, dims, 1)
	x := newIndex(dims, 4, 16, 1)
	keys := make([]int64, len(vecs))
	for i := range keys {
		keys[i] = int64(i + 1)
	}
	x.addBatch(keys, vecs, 1)
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(&graphFile{Version: graphVersion, Dims: dims, Parts: []graphPart{x.part("")}}); err != nil {
		f.Fatal(err)
	}
	f.Add(b.Bytes())
	big := x.part("")
	big.M = 1 << 40
	b.Reset()
	gob.NewEncoder(&b).Encode(&graphFile{Version: graphVersion, Dims: dims, Parts: []graphPart{big}})
	f.Add(b.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		var gf graphFile
		if gob.NewDecoder(bytes.NewReader(data)).Decode(&gf) != nil || gf.Dims != dims {
			return
		}
		for _, p := range gf.Parts {
			x, ok := indexFromPart(p, dims, 16)
			if !ok {
				continue
			}
			x.search([]float32{1, 0, 0, 0}, 5, 16)
			x.addBatch([]int64{-1}, [][]float32{{0, 1, 0, 0}}, 1)
			x.search([]float32{0, 1, 0, 0}, 5, 16)
		}
	})
}
