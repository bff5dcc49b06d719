package tool_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/tool"
)

// callWith runs one call of a Func tool through a Set, as an agent does, and
// returns the argument value the function received (zero when it did not
// run) with the call's error.
func callWith[In any](t *testing.T, args string) (In, error) {
	t.Helper()
	var got In
	tl, err := tool.Func(tool.FuncConfig{Name: "f", Description: "d"}, func(_ context.Context, in In) (string, error) {
		got = in
		return "ok", nil
	})
	if err != nil {
		t.Fatalf("Func: %v", err)
	}
	set, err := tool.NewSet([]tool.Tool{tl})
	if err != nil {
		t.Fatal(err)
	}
	res := set.Execute(context.Background(), model.ToolCall{ID: "c1", Name: "f", Arguments: args})
	return got, res.Err
}

// Country is an exported string type (encoding/json skips unexported
// embedded non-struct types).
type Country string

type address struct {
	City    string `json:"city"`
	Country string `json:"country,omitempty" enum:"FR,DE"`
}

// namedEmbedding embeds structs and a non-struct type the ways encoding/json
// reads differently from plain promotion.
type namedEmbedding struct {
	address `json:"address"` // a named embedding is one property
	Country                  // an embedded non-struct type is a property named after its type
	Name    string           `json:"name"`
}

type labelled struct {
	Label string `json:"label"`
}

type shadowing struct {
	labelled
	Title string `json:"label"` // the shallower field owns the name
}

// The schema offers what encoding/json decodes: before, a named embedded
// struct's fields were offered at the top level (where encoding/json ignores
// them: the tool ran with empty values) and the nested object the decoder
// wants was refused; an embedded string type had no property at all; and two
// fields with one JSON name made the tool fail to build.
func TestFunc_EmbeddedFieldsFollowEncodingJSON(t *testing.T) {
	in, err := callWith[namedEmbedding](t, `{"address":{"city":"Paris","country":"FR"},"Country":"fr","name":"n"}`)
	if err != nil || in.City != "Paris" || in.address.Country != "FR" || in.Country != "fr" || in.Name != "n" {
		t.Fatalf("nested form: %+v, %v", in, err)
	}
	if _, err := callWith[namedEmbedding](t, `{"city":"Paris","Country":"fr","name":"n"}`); !errors.Is(err, tool.ErrInvalidArguments) {
		t.Fatalf("promoted form (encoding/json would drop city): err = %v, want ErrInvalidArguments", err)
	}
	_, err = callWith[namedEmbedding](t, `{"address":{"city":"Paris","country":"IT"},"Country":"fr","name":"n"}`)
	if !errors.Is(err, tool.ErrInvalidArguments) || !strings.Contains(err.Error(), "/address/country") {
		t.Fatalf("enum inside the named embedding: err = %v", err)
	}
	sh, err := callWith[shadowing](t, `{"label":"x"}`)
	if err != nil || sh.Title != "x" || sh.Label != "" {
		t.Fatalf("shadowed name: %+v, %v", sh, err)
	}
}
