package team

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// The leader's task summary shows at most 200 bytes of a result, cut at a
// rune boundary: a long answer in Japanese stays valid UTF-8 for the model.
func TestTaskSummary_LongResultIsCutAtARuneBoundary(t *testing.T) {
	r := strings.Repeat("日本語", 30) // 270 bytes: byte 200 is inside the 67th rune
	l := &taskList{Tasks: []*task{{ID: "1", Title: "translate", Status: "completed", Result: &r}}}
	s := l.summary()
	if !utf8.ValidString(s) {
		t.Fatalf("summary is not valid UTF-8: %q", s)
	}
	if !strings.Contains(s, "Result: "+strings.Repeat("日本語", 22)+"...") {
		t.Fatalf("result not cut to the last whole rune within 200 bytes: %q", s)
	}
}
