package embedder

import (
	"context"
	"errors"
)

// ErrDimensions: an embedding came back with a length other than the
// embedder's Dimensions.
var ErrDimensions = errors.New("embedder: embedding has the wrong number of dimensions")

// Embedder turns texts into vectors of Dimensions floats, one per text, in
// order. Implementations are safe for concurrent use.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	Dimensions() int
	// ID names the embedder and its model ("local-hash-384",
	// "openai:text-embedding-3-small"); a vector store refuses vectors from
	// a different one.
	ID() string
}
