package model_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/agentryhq/agentry/model"
)

func texts(n int) []model.Message {
	out := make([]model.Message, n)
	for i := range out {
		out[i] = model.Text(model.RoleUser, fmt.Sprint(i))
	}
	return out
}

func contents(seq func(func(int, model.Message) bool)) (idx []int, text []string) {
	for i, m := range seq {
		idx = append(idx, i)
		text = append(text, m.Content)
	}
	return idx, text
}

func TestRequest_AllReadsHistorySegmentsThenMessagesInOrder(t *testing.T) {
	t.Parallel()
	msgs := texts(7)
	for _, tc := range []struct {
		name string
		req  model.Request
	}{
		{"messages only", model.Request{Messages: msgs}},
		{"history only", model.Request{History: model.NewHistory(msgs[:2], msgs[2:7])}},
		{"empty segments", model.Request{History: model.NewHistory(nil, msgs[:3], msgs[3:3], msgs[3:5], nil), Messages: msgs[5:]}},
		{"one message each", model.Request{History: model.NewHistory(msgs[0:1], msgs[1:2], msgs[2:3], msgs[3:4], msgs[4:5], msgs[5:6]), Messages: msgs[6:]}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			want := []string{"0", "1", "2", "3", "4", "5", "6"}
			if tc.req.Len() != 7 {
				t.Errorf("Len %d, want 7", tc.req.Len())
			}
			idx, got := contents(tc.req.All())
			if !slices.Equal(got, want) || !slices.Equal(idx, []int{0, 1, 2, 3, 4, 5, 6}) {
				t.Errorf("All yields %v at %v", got, idx)
			}
			idx, got = contents(tc.req.Backward())
			slices.Reverse(want)
			if !slices.Equal(got, want) || !slices.Equal(idx, []int{6, 5, 4, 3, 2, 1, 0}) {
				t.Errorf("Backward yields %v at %v", got, idx)
			}
			col := tc.req.Collect()
			if len(col) != 7 || col[0].Content != "0" || col[6].Content != "6" {
				t.Errorf("Collect %+v", col)
			}
			col[0].Content = "changed"
			if msgs[0].Content != "0" {
				t.Errorf("changing what Collect returned changed the request's messages")
			}
		})
	}
}

func TestRequest_AllStopsWhereTheLoopBreaks(t *testing.T) {
	t.Parallel()
	msgs := texts(6)
	req := model.Request{History: model.NewHistory(msgs[:2], msgs[2:4]), Messages: msgs[4:]}
	for _, stop := range []int{0, 1, 2, 3, 4, 5} {
		var seen []int
		for i := range req.All() {
			seen = append(seen, i)
			if i == stop {
				break
			}
		}
		if len(seen) != stop+1 {
			t.Errorf("break at %d: All yielded %v", stop, seen)
		}
		seen = nil
		for i := range req.Backward() {
			seen = append(seen, i)
			if i == stop {
				break
			}
		}
		if len(seen) != 6-stop {
			t.Errorf("break at %d: Backward yielded %v", stop, seen)
		}
	}
}

// A yielded message is a copy: assigning to its fields leaves the shared
// history as it was.
func TestHistory_YieldedMessagesAreCopies(t *testing.T) {
	t.Parallel()
	msgs := texts(3)
	req := model.Request{History: model.NewHistory(msgs[:2]), Messages: msgs[2:]}
	for _, m := range req.All() {
		m.Content, m.Role = "scribbled", model.RoleTool
		_ = m
	}
	for _, m := range req.Backward() {
		m.Content = "scribbled"
		_ = m
	}
	if _, got := contents(req.All()); !slices.Equal(got, []string{"0", "1", "2"}) {
		t.Errorf("messages now %v", got)
	}
}

func TestRequest_ZeroValueIsEmpty(t *testing.T) {
	t.Parallel()
	var req model.Request
	if req.Len() != 0 || len(req.Collect()) != 0 {
		t.Errorf("zero request: Len %d, Collect %v", req.Len(), req.Collect())
	}
	for range req.All() {
		t.Fatal("All yielded from an empty request")
	}
	for range req.Backward() {
		t.Fatal("Backward yielded from an empty request")
	}
}

func BenchmarkRequest_All(b *testing.B) {
	msgs := texts(50)
	segs := make([][]model.Message, 0, 25)
	for i := 0; i < 48; i += 2 {
		segs = append(segs, msgs[i:i+2])
	}
	req := model.Request{History: model.NewHistory(segs...), Messages: msgs[48:]}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		for _, m := range req.All() {
			n += len(m.Content)
		}
	}
	_ = n
}
