package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"math/big"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/uuid"

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

// ownForms has fields whose JSON form is not their Go kind's.
type ownForms struct {
	Filter json.RawMessage `json:"filter"` // any JSON value
	ID     uuid.UUID       `json:"id"`     // a TextUnmarshaler: a string
	Addr   netip.Addr      `json:"addr"`   // likewise
	Big    *big.Int        `json:"big"`    // a number literal
	Amount json.Number     `json:"amount"` // a number literal
	More   []uuid.UUID     `json:"more,omitempty"`
}

// Before, the schema followed the Go kinds: a json.RawMessage was an array of
// bytes, a uuid.UUID an array of 16 integers, a netip.Addr an empty object and
// a big.Int a string, so the model's valid arguments were refused (or, for
// big.Int, could never decode); a json.Number was a string, so a number was
// refused and "abc" reached the tool through a Set (the in-place decoder
// stored it unchecked where encoding/json refuses it).
func TestFunc_TypesWithTheirOwnJSONForm(t *testing.T) {
	const id = "6ba7b810-9dad-11d1-80b4-00c04fd430c8"
	in, err := callWith[ownForms](t, `{"filter":{"tag":["a"]},"id":"`+id+`","addr":"10.0.0.1","big":123456789012345678901234567890,"amount":12.5,"more":["`+id+`"]}`)
	if err != nil {
		t.Fatal(err)
	}
	if string(in.Filter) != `{"tag":["a"]}` || in.ID.String() != id || in.Addr.String() != "10.0.0.1" ||
		in.Big.String() != "123456789012345678901234567890" || in.Amount != "12.5" || len(in.More) != 1 || in.More[0].String() != id {
		t.Fatalf("decoded %+v", in)
	}
	in, err = callWith[ownForms](t, `{"filter":"any text","id":"`+id+`","addr":"::1","big":null,"amount":0}`)
	if err != nil || string(in.Filter) != `"any text"` || in.Big != nil {
		t.Fatalf("string filter and null big: %+v, %v", in, err)
	}
	in, err = callWith[ownForms](t, `{"filter":1,"id":"`+id+`","addr":"::1","big":1,"amount":"abc"}`)
	if !errors.Is(err, tool.ErrInvalidArguments) || in.Amount != "" {
		t.Fatalf("amount abc: %+v, %v; want ErrInvalidArguments and no call", in, err)
	}
	if _, err = callWith[ownForms](t, `{"filter":1,"id":"not-a-uuid","addr":"::1","big":1,"amount":1}`); !errors.Is(err, tool.ErrInvalidArguments) {
		t.Fatalf("bad uuid: %v", err)
	}
}

type quotedArgs struct {
	N     int      `json:"n,string"`
	On    bool     `json:"on,string"`
	Ratio *float64 `json:"ratio,string,omitempty"`
	Level int      `json:"level,string" enum:"1,2"`
}

// A scalar field with the string option is decoded from a JSON string. The
// schema said integer/boolean, which encoding/json then refuses ("invalid use
// of ,string struct tag"), and refused the strings it wants: no call could
// ever succeed.
func TestFunc_StringOptionFieldsTakeStrings(t *testing.T) {
	in, err := callWith[quotedArgs](t, `{"n":"5","on":"true","ratio":"0.5","level":"2"}`)
	if err != nil || in.N != 5 || !in.On || in.Ratio == nil || *in.Ratio != 0.5 || in.Level != 2 {
		t.Fatalf("%+v, %v", in, err)
	}
	if _, err := callWith[quotedArgs](t, `{"n":"5","on":"true","level":"3"}`); !errors.Is(err, tool.ErrInvalidArguments) || !strings.Contains(err.Error(), "/level") {
		t.Fatalf("level 3: %v, want the enum refusal", err)
	}
}
