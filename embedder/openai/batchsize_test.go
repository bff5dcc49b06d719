package openai_test

import (
	"strings"
	"testing"

	"github.com/agentryhq/agentry/embedder/openai"
)

// A batch size OpenAI refuses (over 2,048 inputs), or whose answer could
// pass the client's 64 MiB bound for the vector size, would fail every
// request: New refuses it, naming the most that works.
func TestNew_RefusesBatchesThatCannotWork(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		batch, dims int
		ok          bool
	}{
		{0, 3072, true},    // the default, 100
		{800, 3072, true},  // ~59 MB of JSON at most
		{2048, 256, true},  // OpenAI's most, small vectors
		{2049, 256, false}, // over OpenAI's limit
		{2000, 3072, false},
	} {
		_, err := openai.New(openai.Config{BaseURL: "http://127.0.0.1:1", Model: "text-embedding-3-large", Dimensions: tc.dims, BatchSize: tc.batch})
		if (err == nil) != tc.ok {
			t.Errorf("batch %d of %d dimensions: err = %v, want ok %v", tc.batch, tc.dims, err, tc.ok)
		}
	}
}

// A vector size whose one answer could not fit the client's 64 MiB bound
// is refused by New, also one so large that the bound's arithmetic would
// overflow (a YAML dimensions value is any int).
func TestNew_RefusesDimensionsNoAnswerCanHold(t *testing.T) {
	t.Parallel()
	for _, dims := range []int{3 << 20, 1 << 61, 1<<63 - 1} {
		var err error
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("%d dimensions: New panicked: %v", dims, p)
				}
			}()
			_, err = openai.New(openai.Config{BaseURL: "http://127.0.0.1:1", Model: "m", Dimensions: dims, BatchSize: 1})
		}()
		if err == nil || !strings.Contains(err.Error(), "Dimensions") {
			t.Errorf("%d dimensions: err = %v, want Dimensions refused", dims, err)
		}
	}
}
