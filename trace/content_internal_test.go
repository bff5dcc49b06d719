package trace

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentryhq/agentry/model"
)

func sampleMessages(text string) []model.Message {
	return []model.Message{
		{Role: model.RoleSystem, Content: "be brief <b>&</b>"},
		{Role: model.RoleUser, Content: text, CreatedAt: 1700000000},
		{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c1", Name: "multiply", Arguments: `{"a":6,"b":7}`}}},
		{Role: model.RoleTool, ToolCallID: "c1", ToolName: "multiply", Content: "42",
			Extra: map[string]json.RawMessage{"stored_only": json.RawMessage(`{"x":1}`)}},
	}
}

// TestMessagesJSON_UncappedIsTheStoredForm: under the cap the chat span's
// input is the messages array as the database stores each message, and it
// reads back as the same messages.
func TestMessagesJSON_UncappedIsTheStoredForm(t *testing.T) {
	t.Parallel()
	msgs := sampleMessages("what is 6*7? é <tag>")
	got := Content{MaxBytes: 1 << 20}.messagesJSON(slices.All(msgs))
	parts := make([]string, len(msgs))
	for i := range msgs {
		raw, err := msgs[i].MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		parts[i] = string(raw)
	}
	if want := "[" + strings.Join(parts, ",") + "]"; got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	var back []model.Message
	if err := json.Unmarshal([]byte(got), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, msgs) {
		t.Errorf("read back %+v", back)
	}
}

// TestMessagesJSON_CappedSaysTheWholeLength: over the cap the text is cut
// at the cap on a rune boundary and the marker gives the uncut length.
func TestMessagesJSON_CappedSaysTheWholeLength(t *testing.T) {
	t.Parallel()
	msgs := sampleMessages(strings.Repeat("é", 300))
	whole := Content{MaxBytes: 1 << 20}.messagesJSON(slices.All(msgs))
	for _, limit := range []int{1, 2, 3, 10, 100, 601, len(whole) - 1} {
		got := Content{MaxBytes: limit}.messagesJSON(slices.All(msgs))
		head, ok := cutMarker(got)
		if !ok || !strings.HasSuffix(got, " of "+itoa(len(whole))+" bytes]") {
			t.Errorf("limit %d: %q has no marker with the whole length %d", limit, got, len(whole))
			continue
		}
		if len(head) > limit || !strings.HasPrefix(whole, head) || !utf8.ValidString(head) || len(head) < limit-utf8.UTFMax {
			t.Errorf("limit %d: head %q", limit, head)
		}
	}
	if got := (Content{MaxBytes: len(whole)}).messagesJSON(slices.All(msgs)); got != whole {
		t.Errorf("exactly at the cap: %q", got)
	}
}

// cutMarker is s before its truncation marker.
func cutMarker(s string) (string, bool) {
	i := strings.LastIndex(s, "…[truncated: ")
	if i < 0 {
		return s, false
	}
	return s[:i], true
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// FuzzMessagesJSON: any text and cap give either the whole array (valid
// JSON) or a head of it no longer than the cap, followed by the marker.
func FuzzMessagesJSON(f *testing.F) {
	f.Add("hello", 8192)
	f.Add(strings.Repeat("é", 50), 7)
	f.Add("\xff\xfe<&>", 3)
	f.Fuzz(func(t *testing.T, text string, limit int) {
		if limit <= 0 || limit > 1<<16 {
			return
		}
		msgs := sampleMessages(text)
		whole := Content{MaxBytes: 1 << 30}.messagesJSON(slices.All(msgs))
		if !json.Valid([]byte(whole)) {
			t.Fatalf("invalid JSON %q", whole)
		}
		got := Content{MaxBytes: limit}.messagesJSON(slices.All(msgs))
		if len(whole) <= limit {
			if got != whole {
				t.Fatalf("under the cap: %q, want %q", got, whole)
			}
			return
		}
		head, ok := cutMarker(got)
		if !ok || len(head) > limit || !strings.HasPrefix(whole, head) {
			t.Fatalf("limit %d: %q", limit, got)
		}
	})
}

// TestAttrBudget_StringListPastTheBudgetEndsWithAMarker: once a span's
// budget is spent, a string list keeps what it had and says how many
// strings were left out, and a string becomes the marker alone.
func TestAttrBudget_StringListPastTheBudgetEndsWithAMarker(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("y", MaxAttributeBytes)
	b := attrBudget(MaxAttributeBytes + 10)
	got := b.bound([]string{big, "0123456789abc", "z", "w"}).([]string)
	want := []string{big, "0123456789…[truncated: 10 of 13 bytes]", "…[truncated: 2 more strings]"}
	if !slices.Equal(got, want) {
		t.Fatalf("list past the budget: %q", got)
	}
	if s := b.bound("abc"); s != "…[truncated: 0 of 3 bytes]" {
		t.Fatalf("string past the budget: %q", s)
	}
	if v := b.bound(42); v != 42 {
		t.Fatalf("a number is not bounded: %v", v)
	}
}
