package s3_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/media/s3"
	"github.com/agentryhq/agentry/media/s3/s3test"
)

// DeletePrefix deletes past S3's 1,000 keys a listing page and a
// DeleteObjects call take, and "d/" names a directory: the keys "d0",
// "dd/x" and "d-x/y" that merely start with "d" stay.
func TestS3_DeletePrefixPagesAndKeepsItsNeighbours(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := s3.New(ctx, s3test.Bucket(t))
	if err != nil {
		t.Fatal(err)
	}
	const n = 2345
	neighbours := []string{"d0", "dd/x", "d-x/y", "c/d/x"}
	keys := neighbours
	for i := range n {
		keys = append(keys, fmt.Sprintf("d/%05d", i))
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, k := range keys {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := s.Upload(ctx, k, bytes.NewReader([]byte("x")), 1, ""); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if err := s.DeletePrefix(ctx, "d/"); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 999, 1000, 1001, 1999, 2000, n - 1} {
		if ok, err := s.Exists(ctx, fmt.Sprintf("d/%05d", i)); ok || err != nil {
			t.Errorf("d/%05d after DeletePrefix: exists = %v, %v", i, ok, err)
		}
	}
	for _, k := range neighbours {
		if ok, err := s.Exists(ctx, k); !ok || err != nil {
			t.Errorf("%s deleted with d/: exists = %v, %v", k, ok, err)
		}
	}
}
