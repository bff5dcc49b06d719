package s3_test

import (
	"context"
	"iter"

	"github.com/agentryhq/agentry/model"
)

// probeModel reports the bytes of every media part it is sent.
type probeModel struct {
	model.Model
	seen func([]byte)
}

func (p *probeModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	for _, m := range req.All() {
		for _, part := range m.Parts {
			p.seen(part.Data)
		}
	}
	return p.Model.Stream(ctx, req)
}
