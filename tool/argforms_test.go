package tool_test

import (
	"encoding/json"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentryhq/agentry/tool"
)

// outputCheck validates doc against SchemaFor(T) as an agent validates a
// structured answer (agent.OutputSchemaFor, then jsonschema-go).
func outputCheck[T any](t *testing.T, doc string) error {
	t.Helper()
	s, err := tool.SchemaFor(reflect.TypeFor[T]())
	if err != nil {
		t.Fatalf("SchemaFor: %v", err)
	}
	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back jsonschema.Schema
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	rs, err := back.Resolve(nil)
	if err != nil {
		t.Fatalf("jsonschema-go cannot resolve %s: %v", raw, err)
	}
	var v any
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatal(err)
	}
	return rs.Validate(v)
}

type treeNode struct {
	Name     string     `json:"name"`
	Children []treeNode `json:"children,omitempty"`
}

type chain struct {
	Value int    `json:"value"`
	Next  *chain `json:"next,omitempty"`
}

// recursion holds recursive types below the root, two of one name in
// different shapes (a generic type's instances), and a mutual recursion.
type recursion struct {
	Tree  treeNode             `json:"tree"`
	Chain *chain               `json:"chain"`
	Ints  *box[int]            `json:"ints,omitempty"`
	Strs  *box[string]         `json:"strs,omitempty"`
	Ping  ping                 `json:"ping"`
	Map   map[string]*box[int] `json:"map,omitempty"`
}

type box[T any] struct {
	V    T       `json:"v"`
	Next *box[T] `json:"next,omitempty"`
}

type ping struct {
	Pong *pong `json:"pong,omitempty"`
}

type pong struct {
	Ping ping `json:"ping"`
}

// Recursive types made the tool (and the output schema) fail to build
// ("cycle detected"); they are $defs entries, or "#" for the root, that
// both validators resolve.
func TestFunc_RecursiveTypesReferToTheirDefinition(t *testing.T) {
	const tree = `{"name":"a","children":[{"name":"b","children":[{"name":"c"}]}]}`
	got, err := callWith[treeNode](t, tree)
	if err != nil || got.Children[0].Children[0].Name != "c" {
		t.Fatalf("root recursion: %+v, %v", got, err)
	}
	_, err = callWith[treeNode](t, `{"name":"a","children":[{"name":"b","children":[{"name":3}]}]}`)
	if !errors.Is(err, tool.ErrInvalidArguments) || !strings.Contains(err.Error(), "/children/0/children/0/name") {
		t.Fatalf("deep wrong type: %v, want the validation refusal at its place", err)
	}
	const args = `{"tree":` + tree + `,"chain":{"value":1,"next":{"value":2,"next":null}},` +
		`"ints":{"v":1,"next":{"v":2}},"strs":{"v":"x","next":{"v":"y"}},"ping":{"pong":{"ping":{}}},"map":{"k":{"v":3,"next":null}}}`
	r, err := callWith[recursion](t, args)
	if err != nil || r.Chain.Next.Value != 2 || r.Ints.Next.V != 2 || r.Strs.Next.V != "y" || r.Ping.Pong == nil || r.Map["k"].V != 3 {
		t.Fatalf("recursion below the root: %+v, %v", r, err)
	}
	for _, bad := range []string{
		`{"tree":{"name":"a"},"chain":{"value":1,"next":{"value":"2"}},"ping":{}}`,
		`{"tree":{"name":"a"},"chain":null,"ints":{"v":1,"next":{"v":"s"}},"ping":{}}`,
		`{"tree":{"name":"a"},"chain":null,"strs":{"v":"x","next":{"v":1}},"ping":{}}`,
		`{"tree":{"name":"a"},"chain":null,"ping":{"pong":{"ping":{"pong":{"ping":{"x":1}}}}}}`,
	} {
		if _, err := callWith[recursion](t, bad); !errors.Is(err, tool.ErrInvalidArguments) {
			t.Errorf("%s: %v, want ErrInvalidArguments", bad, err)
		}
	}
	if err := outputCheck[recursion](t, args); err != nil {
		t.Errorf("output schema refuses valid recursive value: %v", err)
	}
	if err := outputCheck[*treeNode](t, `{"name":"a","children":[{"name":"b","children":[{"name":3}]}]}`); err == nil {
		t.Errorf("output schema accepts a deep wrong type")
	}
}

type keyedMaps struct {
	ByID    map[int]string     `json:"by_id"`
	Small   map[uint8]int      `json:"small,omitempty"`
	ByLevel map[slog.Level]int `json:"by_level,omitempty"` // keys are level names (UnmarshalText)
}

// encoding/json reads integer map keys from their decimal text (and a
// TextUnmarshaler key with its UnmarshalText): a map with integer keys made
// the tool fail to build ("unsupported map key type"), while a key type with
// only MarshalText was offered as any object, which encoding/json refuses.
func TestFunc_IntegerMapKeysAreDecimalText(t *testing.T) {
	got, err := callWith[keyedMaps](t, `{"by_id":{"1":"a","-2":"b","+3":"c"},"small":{"7":1},"by_level":{"WARN":1}}`)
	if err != nil || got.ByID[-2] != "b" || got.ByID[3] != "c" || got.Small[7] != 1 || got.ByLevel[slog.LevelWarn] != 1 {
		t.Fatalf("%+v, %v", got, err)
	}
	for _, bad := range []string{
		`{"by_id":{"abc":"a"}}`, `{"by_id":{"1.5":"a"}}`, `{"by_id":{" 1":"a"}}`, `{"by_id":{"1e2":"a"}}`,
		`{"by_id":{},"small":{"-1":1}}`, `{"by_id":{},"small":{"+1":1}}`,
	} {
		_, err := callWith[keyedMaps](t, bad)
		if !errors.Is(err, tool.ErrInvalidArguments) || strings.Contains(err.Error(), "json: cannot unmarshal") {
			t.Errorf("%s: %v, want the validation refusal", bad, err)
		}
	}
	if err := outputCheck[keyedMaps](t, `{"by_id":{"x":"a"}}`); err == nil {
		t.Errorf("output schema accepts a non-integer key")
	}
	type textOnlyKey struct {
		M map[markedKey]int `json:"m"`
	}
	if _, err := tool.SchemaFor(reflect.TypeFor[textOnlyKey]()); err == nil || !strings.Contains(err.Error(), "map key") {
		t.Errorf("a key type with MarshalText but no UnmarshalText (encoding/json refuses any object): err = %v", err)
	}
}

// markedKey marshals to text but cannot be read back.
type markedKey struct{ N int }

func (k markedKey) MarshalText() ([]byte, error) { return []byte("k"), nil }

type blob struct {
	Data  []byte  `json:"data"`
	Maybe *[]byte `json:"maybe,omitempty"`
}

// A []byte is base64 text to encoding/json: the schema said an array of
// integers, which the model then sent and, worse, base64 text was refused.
func TestFunc_ByteSlicesAreBase64(t *testing.T) {
	got, err := callWith[blob](t, `{"data":"aGVsbG8=","maybe":"aGk="}`)
	if err != nil || string(got.Data) != "hello" || string(*got.Maybe) != "hi" {
		t.Fatalf("%+v, %v", got, err)
	}
	if got, err := callWith[blob](t, `{"data":"aGVs\nbG8="}`); err != nil || string(got.Data) != "hello" {
		t.Fatalf("line break inside base64 (encoding/json skips it): %+v, %v", got, err)
	}
	if got, err := callWith[blob](t, `{"data":null}`); err != nil || got.Data != nil {
		t.Fatalf("null: %+v, %v", got, err)
	}
	for _, bad := range []string{`{"data":"hello!"}`, `{"data":"aGVsbG8"}`, `{"data":"aGVsbG8=="}`, `{"data":"aGk=aGk="}`} {
		_, err := callWith[blob](t, bad)
		if !errors.Is(err, tool.ErrInvalidArguments) || !strings.Contains(err.Error(), "/data") {
			t.Errorf("%s: %v, want the validation refusal at /data", bad, err)
		}
	}
	if err := outputCheck[blob](t, `{"data":"not base64"}`); err == nil {
		t.Errorf("output schema accepts text that is not base64")
	}
}

type hidden struct {
	Secret string `json:"secret"`
}

// Shown is exported, so encoding/json can allocate it when embedded.
type Shown struct {
	Visible string `json:"visible"`
}

type embedsPointers struct {
	*hidden
	*Shown
	Name string `json:"name"`
}

type tagsHiddenPointer struct {
	*hidden `json:"h,omitempty"`
	Name    string `json:"name"`
}

// encoding/json cannot allocate an embedded pointer to an unexported
// struct: a value for a field promoted through it fails the decode, and a
// value for it by its tag name panics. The schema offered both.
func TestFunc_EmbeddedPointerToUnexportedStructIsNotOffered(t *testing.T) {
	got, err := callWith[embedsPointers](t, `{"visible":"v","name":"n"}`)
	if err != nil || got.Shown == nil || got.Visible != "v" || got.Name != "n" {
		t.Fatalf("%+v, %v", got, err)
	}
	_, err = callWith[embedsPointers](t, `{"secret":"s","name":"n"}`)
	if !errors.Is(err, tool.ErrInvalidArguments) || !strings.Contains(err.Error(), "secret") {
		t.Fatalf("promoted through the unexported pointer: %v, want the validation refusal", err)
	}
	_, err = callWith[tagsHiddenPointer](t, `{"h":{"secret":"s"},"name":"n"}`)
	if !errors.Is(err, tool.ErrInvalidArguments) {
		t.Fatalf("the tagged unexported pointer: %v, want the validation refusal", err)
	}
	if got, err := callWith[tagsHiddenPointer](t, `{"name":"n"}`); err != nil || got.Name != "n" {
		t.Fatalf("%+v, %v", got, err)
	}
}
