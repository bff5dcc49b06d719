// Package local is a deterministic, offline embedder for tests, demos and a
// fresh clone with no embeddings API. It hashes words and character
// trigrams into a fixed number of dimensions (feature hashing): texts that
// share words land near each other, but it knows nothing of meaning
// (synonyms, paraphrases, other languages are far apart). Use an embeddings
// model for real semantic search.
package local

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"strings"
	"unicode"
)

// DefaultDimensions is the vector length when Config.Dimensions is zero.
const DefaultDimensions = 384

// MaxDimensions bounds Config.Dimensions (pgvector's limit; embedding
// models use at most a few thousand).
const MaxDimensions = 16000

// Config configures the embedder.
type Config struct {
	// Dimensions of each vector; zero means DefaultDimensions. Over
	// MaxDimensions, Embed fails.
	Dimensions int
}

// Embedder is the hashing embedder. The zero value is not usable; call New.
type Embedder struct{ dims int }

// New returns the embedder.
func New(cfg Config) *Embedder {
	if cfg.Dimensions <= 0 {
		cfg.Dimensions = DefaultDimensions
	}
	return &Embedder{dims: cfg.Dimensions}
}

// Dimensions returns the vector length.
func (e *Embedder) Dimensions() int { return e.dims }

// ID names the embedder and its dimensions.
func (e *Embedder) ID() string { return fmt.Sprintf("local-hash-%d", e.dims) }

// Embed hashes each text; it fails only on a cancelled context, or when
// Dimensions is over MaxDimensions (New takes any value; a vector that
// size would not be allocated).
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if e.dims > MaxDimensions {
		return nil, fmt.Errorf("embedder/local: %d dimensions; the most is %d", e.dims, MaxDimensions)
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if i%256 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		out[i] = e.vector(t)
	}
	return out, nil
}

func (e *Embedder) vector(text string) []float32 {
	v := make([]float32, e.dims)
	add := func(feature string, weight float32) {
		h := fnv.New64a()
		h.Write([]byte(feature))
		x := h.Sum64()
		sign := float32(1)
		if x>>63 == 1 {
			sign = -1
		}
		v[x%uint64(e.dims)] += sign * weight
	}
	for _, w := range Words(text) {
		add("w:"+w, 1)
		r := []rune(" " + w + " ")
		for j := 0; j+3 <= len(r); j++ {
			add("t:"+string(r[j:j+3]), 0.5)
		}
	}
	var norm float64
	for _, x := range v {
		norm += float64(x) * float64(x)
	}
	if norm == 0 {
		v[0] = 1 // the empty text still has a unit vector
		return v
	}
	inv := float32(1 / math.Sqrt(norm))
	for i := range v {
		v[i] *= inv
	}
	return v
}

// Words splits text into lower-case words of letters and digits.
func Words(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
}
