package bedrock

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"testing"

	"github.com/agentryhq/agentry/model"
)

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// A frame whose prelude announces a payload far over the event limit is
// refused from its prelude: the decoder does not read (and buffer) the
// announced gigabytes first.
func TestStream_OversizedFrameIsRefusedBeforeItIsRead(t *testing.T) {
	t.Parallel()
	prelude := make([]byte, 12)
	binary.BigEndian.PutUint32(prelude[0:], 1<<30) // total length: 1 GiB
	binary.BigEndian.PutUint32(prelude[4:], 0)     // headers length
	binary.BigEndian.PutUint32(prelude[8:], crc32.ChecksumIEEE(prelude[:8]))
	body := &countingReader{r: io.MultiReader(bytes.NewReader(msgStart()), bytes.NewReader(prelude), io.LimitReader(zeros{}, 1<<30))}
	var err error
	for _, e := range decodeStream(body, "") {
		if e != nil {
			err = e
		}
	}
	if !errors.Is(err, model.ErrMalformedResponse) {
		t.Fatalf("err = %v, want ErrMalformedResponse", err)
	}
	if body.n > 4*maxEventPayload {
		t.Errorf("read %d bytes of the body before refusing the frame", body.n)
	}
}
