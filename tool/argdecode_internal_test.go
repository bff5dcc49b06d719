package tool

//lint:file-ignore SA5008 decArgs names a member "-", a case the decoder must handle as encoding/json does

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"
	"unsafe"
)

type decLocation struct {
	City    string `json:"city"`
	Country string `json:"country,omitempty"`
}

type decUnit string

type decArgs struct {
	Location decLocation   `json:"location"`
	Days     int           `json:"days" enum:"1,3,7"`
	Unit     decUnit       `json:"unit,omitempty" enum:"celsius,fahrenheit"`
	Fields   []string      `json:"fields,omitempty"`
	Stops    []decLocation `json:"stops,omitempty"`
	Grid     [][]int       `json:"grid,omitempty"`
	Ratio    float64       `json:"ratio,omitempty"`
	F32      float32       `json:"f32,omitempty"`
	Small    int8          `json:"small,omitempty"`
	Mid      int32         `json:"mid,omitempty"`
	U        uint16        `json:"u,omitempty"`
	Big      uint64        `json:"big,omitempty"`
	On       bool          `json:"on,omitempty"`
	Note     *string       `json:"note,omitempty"`
	Where    *decLocation  `json:"where,omitempty"`
	Many     []*int        `json:"many,omitempty"`
	Plain    string        `json:",omitempty"`
	Dash     string        `json:"-,omitempty"`
	Skipped  string        `json:"-"`
	hidden   string
}

func decTool(t testing.TB) *funcTool[decArgs, string] {
	t.Helper()
	tl, err := Func(FuncConfig{Name: "dec", Description: "d"}, func(_ context.Context, in decArgs) (string, error) {
		return in.Location.City + in.hidden, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ft := tl.(*funcTool[decArgs, string])
	if ft.dec == nil || ft.validator.fast == nil {
		t.Fatal("decArgs has no fast decoder or no fast check")
	}
	return ft
}

// parseAgrees fails when parse (fast check and argDecoder when they apply)
// gives another value or error than the full validator and encoding/json.
func parseAgrees(t *testing.T, ft *funcTool[decArgs, string], args string) (fast bool) {
	t.Helper()
	got, gotErr := ft.parse(args)
	var want decArgs
	checked, wantErr := ft.validator.check(json.RawMessage(args))
	if wantErr == nil {
		want, wantErr = ft.decode(checked)
	}
	// The full validator lists violations in map order: compare sorted words.
	if sameMessage(fmt.Sprint(gotErr)) != sameMessage(fmt.Sprint(wantErr)) || !reflect.DeepEqual(got, want) {
		t.Fatalf("args %q:\nparse        = %#v, %v\nencoding/json = %#v, %v", args, got, gotErr, want, wantErr)
	}
	var in decArgs
	return ft.validator.fast.accepts([]byte(args)) && ft.dec.decode(unsafe.Pointer(&in), args)
}

func TestArgDecoder_AgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	ft := decTool(t)
	fast := []string{
		`{"location":{"city":"Paris"},"days":3}`,
		` {"location":{"city":"Zürich","country":"CH"},"days":7,"unit":"celsius"} `,
		`{"days":1,"location":{"city":""},"fields":[],"stops":[{"city":"a"},{"city":"b","country":"c"}],"grid":[[1,2],[],[3]]}`,
		`{"location":{"city":"P"},"days":3,"ratio":-1.5e3,"f32":3.4e38,"small":-128,"mid":2147483647,"u":65535,"big":1844674407370955161,"on":true,"Plain":"x","-":"dash"}`,
		`{"location":{"city":"P"},"days":3,"fields":["a","b","c","d","e","f","g","h","i"],"on":false}`,
		`{"location":{"city":"P"},"days":3,"note":"n","where":{"city":"W"},"many":[1,null,3]}`,
		`{"location":{"city":"P"},"days":3,"note":null,"where":null,"many":null}`,
	}
	for _, a := range fast {
		if !parseAgrees(t, ft, a) {
			t.Errorf("args %q: not decoded by the fast decoder", a)
		}
	}
	for _, a := range []string{
		``, `{}`, `null`, `[]`, `{"days":3}`, `{"location":{},"days":3}`,
		`{"location":{"city":"P"},"days":3,"big":18446744073709551615}`, `{"location":{"city":1},"days":3}`,
		// escapes, invalid UTF-8, control characters, null
		`{"location":{"city":"P\u00e9"},"days":3}`, `{"location":{"city":"a\"b"},"days":3}`,
		"{\"location\":{\"city\":\"\xff\"},\"days\":3}", `{"location":{"city":"\ud800"},"days":3}`,
		`{"location":{"city":"P"},"days":3,"fields":null}`, `{"location":null,"days":3}`, `{"location":{"city":"P"},"days":null}`,
		`{"location":{"city":"P"},"days":3,"where":{"city":null}}`, `{"location":{"city":"P"},"days":3,"many":[1,"2"]}`,
		// numbers that do not fit their field or are not integers
		`{"location":{"city":"P"},"days":3.0}`, `{"location":{"city":"P"},"days":3e0}`, `{"location":{"city":"P"},"days":-0}`,
		`{"location":{"city":"P"},"days":99999999999999999999}`, `{"location":{"city":"P"},"days":3,"small":128}`,
		`{"location":{"city":"P"},"days":3,"u":-1}`, `{"location":{"city":"P"},"days":3,"u":65536}`,
		`{"location":{"city":"P"},"days":3,"f32":3.5e38}`, `{"location":{"city":"P"},"days":3,"ratio":1e400}`,
		// case-folded, unknown, skipped and repeated keys
		`{"Location":{"city":"P"},"days":3}`, `{"location":{"city":"P"},"days":3,"plain":"x"}`,
		`{"location":{"city":"P"},"days":3,"Skipped":"x"}`, `{"location":{"city":"P"},"days":3,"hidden":"x"}`,
		`{"location":{"city":"P","country":"F"},"days":3,"location":{"city":"Q"}}`,
		`{"location":{"city":"P"},"days":3,"stops":[{"city":"a","country":"b"}],"stops":[{"city":"c"}]}`,
		`{"location":{"city":"P"},"days":2,"days":3}`,
		// malformed
		`{"location":`, `{"location":{"city":"P"},"days":3}}`, `{"location":{"city":"P"},"days":3,}`,
	} {
		parseAgrees(t, ft, a)
	}
}

func TestArgDecoder_OnlyPlainTypes(t *testing.T) {
	t.Parallel()
	type inner struct{ A string }
	type embeds struct {
		inner
		B string `json:"b"`
	}
	type recursive struct {
		Kids []recursive `json:"kids"`
	}
	for _, typ := range []reflect.Type{
		reflect.TypeFor[map[string]string](), reflect.TypeFor[*decArgs](),
		reflect.TypeFor[struct {
			P *any `json:"p"`
		}](),
		reflect.TypeFor[struct {
			M map[string]int `json:"m"`
		}](),
		reflect.TypeFor[struct {
			A any `json:"a"`
		}](),
		reflect.TypeFor[struct {
			B []byte `json:"b"`
		}](),
		reflect.TypeFor[struct {
			A [2]int `json:"a"`
		}](),
		reflect.TypeFor[struct {
			N int `json:"n,string"`
		}](),
		reflect.TypeFor[struct {
			T time.Time `json:"t"`
		}](),
		reflect.TypeFor[struct {
			R json.RawMessage `json:"r"`
		}](),
		reflect.TypeFor[struct {
			A string `json:"a.b"`
		}](),
		reflect.TypeFor[struct {
			A string `json:"x"`
			B string `json:"X"`
		}](),
		reflect.TypeFor[embeds](), reflect.TypeFor[recursive](),
	} {
		if newArgDecoder(typ) != nil {
			t.Errorf("%v: fast decoder built, want encoding/json", typ)
		}
	}
}

// FuzzArgDecoder is a differential fuzz target: parse must always give what
// the full validator and encoding/json give.
func FuzzArgDecoder(f *testing.F) {
	for _, seed := range []string{
		`{"location":{"city":"Paris"},"days":3}`,
		`{"location":{"city":"P"},"days":3,"ratio":1.5,"small":-1,"u":1,"big":1,"on":true,"stops":[{"city":"x"}],"grid":[[1]]}`,
		`{"location":{"city":"é"},"days":7,"fields":[]}`, `{"days":3.0}`, ``, `nul`,
	} {
		f.Add(seed)
	}
	ft := decTool(f)
	f.Fuzz(func(t *testing.T, args string) {
		parseAgrees(t, ft, args)
	})
}
