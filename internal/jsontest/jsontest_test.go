package jsontest_test

import (
	"testing"

	"github.com/agentryhq/agentry/internal/jsontest"
)

// TestDiffPython_TellsApartWhatPythonDoes: ints and floats differ; spelling
// Python reads as the same value does not.
func TestDiffPython_TellsApartWhatPythonDoes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		want, got string
		same      bool
	}{
		{`{"a":2.0}`, `{"a":2}`, false},
		{`[1e+16]`, `[10000000000000000]`, false},
		{`-0.0`, `0`, false},
		{`{"a":2}`, `{"a":2.0}`, false},
		{`{"a":2.0,"b":[1.5e0]}`, `{"b":[1.5],"a":2.00}`, true},
		{`"\ud83d\ude00"`, `"😀"`, true},
		{`{"a":1}`, `{"a":1}`, true},
		{`"\udcff"`, `"\ufffd"`, true},
	}
	for _, tt := range tests {
		d := jsontest.DiffPython([]byte(tt.want), []byte(tt.got))
		if (d == "") != tt.same {
			t.Errorf("DiffPython(%s, %s) = %q, want same %v", tt.want, tt.got, d, tt.same)
		}
		if d := jsontest.Diff([]byte(tt.want), []byte(tt.got)); tt.same && d != "" {
			t.Errorf("Diff(%s, %s) = %q", tt.want, tt.got, d)
		}
	}
}
