package run_test

import (
	"reflect"
	"testing"

	"github.com/agentryhq/agentry/run"
)

// MergeMetadata merges over into base, into nested objects too, over's
// value winning a conflict, and changes neither map.
func TestMergeMetadata_OverWinsAndNestedObjectsMerge(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		base, over map[string]any
		want       map[string]any
	}{
		{"both empty", nil, map[string]any{}, nil},
		{"base only", map[string]any{"a": 1}, nil, map[string]any{"a": 1}},
		{"over only", nil, map[string]any{"a": 1}, map[string]any{"a": 1}},
		{"conflict", map[string]any{"a": 1, "b": 2}, map[string]any{"a": 3}, map[string]any{"a": 3, "b": 2}},
		{"nested", map[string]any{"t": map[string]any{"x": 1, "y": 2}}, map[string]any{"t": map[string]any{"x": 9, "z": 3}},
			map[string]any{"t": map[string]any{"x": 9, "y": 2, "z": 3}}},
		{"object over a value", map[string]any{"t": "s"}, map[string]any{"t": map[string]any{"x": 1}}, map[string]any{"t": map[string]any{"x": 1}}},
		{"value over an object", map[string]any{"t": map[string]any{"x": 1}}, map[string]any{"t": "s"}, map[string]any{"t": "s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base, over := clone(tc.base), clone(tc.over)
			if got := run.MergeMetadata(tc.base, tc.over); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("MergeMetadata(%v, %v) = %v, want %v", tc.base, tc.over, got, tc.want)
			}
			if !reflect.DeepEqual(base, tc.base) || !reflect.DeepEqual(over, tc.over) {
				t.Errorf("the maps given changed: %v %v", tc.base, tc.over)
			}
		})
	}
}

func clone(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if vm, ok := v.(map[string]any); ok {
			v = clone(vm)
		}
		out[k] = v
	}
	return out
}
