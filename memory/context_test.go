package memory

import (
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
)

func TestContextBlock_BoundsCountCharactersNotBytes(t *testing.T) {
	t.Parallel()
	// 3,000 characters (9,000 bytes of UTF-8) is within both the 5,000
	// characters a memory may have and the 8,000 the block takes.
	long := strings.Repeat("東", 3000)
	ms := []db.Memory{{MemoryID: "1", Memory: long}, {MemoryID: "2", Memory: "Likes green tea."}}
	got := ContextBlock(ms, false)
	if !strings.Contains(got, long) || !strings.Contains(got, "Likes green tea.") {
		t.Fatalf("memories left out of the block (%d bytes):\n%.300s", len(got), got)
	}
	// the budget still holds: three such memories are 9,000 characters
	got = ContextBlock([]db.Memory{{Memory: long}, {Memory: long}, {Memory: long + "x"}}, false)
	if n := strings.Count(got, long); n != 2 {
		t.Fatalf("%d memories of 3,000 characters in the block, want 2", n)
	}
}
