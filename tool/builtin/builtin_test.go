package builtin

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/tool"
)

func TestNew_UnknownNameListsBuiltins(t *testing.T) {
	t.Parallel()
	_, err := New("duckduckgo", nil)
	if !errors.Is(err, ErrUnknown) {
		t.Fatalf("err = %v, want ErrUnknown", err)
	}
}

func TestBuiltins_ExecuteThroughSet(t *testing.T) {
	t.Parallel()
	var tools []tool.Tool
	for _, n := range Names() {
		if n != "calculator" && n != "current_time" {
			continue
		}
		tl, err := New(n, nil)
		if err != nil {
			t.Fatal(err)
		}
		tools = append(tools, tl...)
	}
	set, err := tool.NewSet(tools)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tests := []struct {
		name, args, want string
		isErr            bool
	}{
		{"calculator", `{"a":6,"b":7,"op":"multiply"}`, "42", false},
		{"calculator", `{"a":1,"b":0,"op":"divide"}`, "", true},
		{"calculator", `{"a":1,"b":2,"op":"modulo"}`, "", true},
		{"calculator", `{"a":"x","b":2,"op":"add"}`, "", true},
		{"current_time", `{"timezone":"Mars/Olympus"}`, "", true},
	}
	for _, tc := range tests {
		res := set.Execute(ctx, model.ToolCall{ID: "1", Name: tc.name, Arguments: tc.args})
		if res.IsError() != tc.isErr {
			t.Errorf("%s(%s): error = %v, want error %v", tc.name, tc.args, res.Err, tc.isErr)
		}
		if tc.want != "" && res.Content != tc.want {
			t.Errorf("%s(%s) = %q, want %q", tc.name, tc.args, res.Content, tc.want)
		}
	}
	res := set.Execute(ctx, model.ToolCall{ID: "2", Name: "current_time", Arguments: `{}`})
	if _, err := time.Parse(time.RFC3339, res.Content); err != nil {
		t.Fatalf("current_time = %q: %v", res.Content, err)
	}
}
