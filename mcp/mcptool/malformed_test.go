package mcptool_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentryhq/agentry/mcp/mcptool"
)

// A server whose answers hold null among a resource's contents or in a
// listing gets the rest read: the resource tool dereferenced the null and
// panicked in the agent's process, and Resources and Prompts handed the
// nulls to their caller.
func TestToolkit_NullsInAnswersAreSkipped(t *testing.T) {
	ts := answering(t, map[string]string{
		"resources/read": `{"contents":[null,{"uri":"note://hello","text":"hi"},null]}`,
		"resources/list": `{"resources":[null,{"uri":"note://hello","name":"hello"}]}`,
		"prompts/list":   `{"prompts":[{"name":"greet"},null]}`,
	})
	k := newKit(t, mcptool.Config{Name: "srv", URL: ts.URL})
	tools, err := k.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rs, err := k.Resources(context.Background())
	if err != nil || len(rs) != 1 || rs[0] == nil || rs[0].Name != "hello" {
		t.Fatalf("resources %v, %v", rs, err)
	}
	ps, err := k.Prompts(context.Background())
	if err != nil || len(ps) != 1 || ps[0] == nil || ps[0].Name != "greet" {
		t.Fatalf("prompts %v, %v", ps, err)
	}
	out, err := find(t, tools, "srv_read_resource").Call(context.Background(), json.RawMessage(`{"uri":"note://hello"}`))
	if err != nil || out != "hi" {
		t.Fatalf("read: %q, %v", out, err)
	}
}
