package local

import (
	"context"
	"math"
	"testing"
)

func cos(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func TestEmbed_DeterministicUnitVectors(t *testing.T) {
	t.Parallel()
	e := New(Config{})
	a, _ := e.Embed(context.Background(), []string{"the quick brown fox", "", "the quick brown fox"})
	if len(a) != 3 || len(a[0]) != 384 {
		t.Fatalf("got %d vectors of %d dims", len(a), len(a[0]))
	}
	for i, v := range a {
		if n := cos(v, v); math.Abs(n-1) > 1e-5 {
			t.Fatalf("vector %d has norm² %v", i, n)
		}
	}
	if cos(a[0], a[2]) < 0.9999 {
		t.Fatal("same text gave different vectors")
	}
}

func TestEmbed_SharedWordsAreCloser(t *testing.T) {
	t.Parallel()
	e := New(Config{Dimensions: 256})
	v, _ := e.Embed(context.Background(), []string{"postgres vector index tuning", "tuning the postgres vector index", "banana bread recipe"})
	if near, far := cos(v[0], v[1]), cos(v[0], v[2]); near <= far+0.3 {
		t.Fatalf("overlapping texts %.3f, unrelated %.3f", near, far)
	}
}

func TestEmbed_CancelledContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := New(Config{}).Embed(ctx, []string{"x"}); err == nil {
		t.Fatal("cancelled context embedded")
	}
}

// A vector size no machine can allocate (a YAML dimensions value is any
// int) is an error from Embed, not a panic or an out-of-memory crash.
func TestEmbed_RefusesDimensionsOverTheMost(t *testing.T) {
	t.Parallel()
	for _, dims := range []int{1 << 50, MaxDimensions + 1} {
		e := New(Config{Dimensions: dims})
		var err error
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("%d dimensions: Embed panicked: %v", dims, p)
				}
			}()
			_, err = e.Embed(context.Background(), []string{"x"})
		}()
		if err == nil {
			t.Fatalf("%d dimensions embedded", dims)
		}
	}
	if v, err := New(Config{Dimensions: MaxDimensions}).Embed(context.Background(), []string{"x"}); err != nil || len(v[0]) != MaxDimensions {
		t.Fatalf("MaxDimensions: %v", err)
	}
}

// FuzzEmbed: any text, also invalid UTF-8 or odd Unicode, gives a finite
// unit vector of the configured length, the same every time.
func FuzzEmbed(f *testing.F) {
	f.Add("the quick brown fox", 384)
	f.Add("", 1)
	f.Add("\xff\xfe İstanbul ΣΑΣ e\u0301 👩\u200d💻 🇫🇷", 7)
	f.Fuzz(func(t *testing.T, text string, dims int) {
		dims = dims%512 + 1
		if dims < 1 {
			dims += 512
		}
		e := New(Config{Dimensions: dims})
		a, err := e.Embed(context.Background(), []string{text, text})
		if err != nil || len(a) != 2 || len(a[0]) != dims {
			t.Fatalf("Embed: %d vectors, %v", len(a), err)
		}
		for i := range a[0] {
			if x := float64(a[0][i]); math.IsNaN(x) || math.IsInf(x, 0) || a[0][i] != a[1][i] {
				t.Fatalf("dimension %d: %v and %v", i, a[0][i], a[1][i])
			}
		}
		if n := cos(a[0], a[0]); math.Abs(n-1) > 1e-4 {
			t.Fatalf("norm² %v", n)
		}
	})
}
