package agentos

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/internal/wirecheck"
	"github.com/agentryhq/agentry/run"
)

// FuzzDecodeContinueForm: any body decodes or fails with a 4xx httpError.
func FuzzDecodeContinueForm(f *testing.F) {
	f.Add("application/x-www-form-urlencoded", `tools=[{"tool_call_id":"c1","confirmed":true}]&stream=false`)
	f.Add("application/x-www-form-urlencoded", `requirements=[{"id":"c1","tool_execution":{"tool_call_id":"c1","confirmed":false}}]`)
	f.Add("multipart/form-data; boundary=x", "--x\r\nContent-Disposition: form-data; name=\"tools\"\r\n\r\n[]\r\n--x--\r\n")
	f.Add("application/x-www-form-urlencoded", "tools=%ff")
	f.Add("text/plain", "tools=[]")
	f.Fuzz(func(t *testing.T, contentType, body string) {
		r := httptest.NewRequest(http.MethodPost, "/agents/a/runs/r/continue", strings.NewReader(body))
		r.Header.Set("Content-Type", contentType)
		req, err := decodeContinueForm(r)
		if err != nil {
			var he *httpError
			if !errors.As(err, &he) || he.Status < 400 || he.Status > 499 || he.Detail == "" {
				t.Fatalf("error %v is not a 4xx HTTPError", err)
			}
			return
		}
		if req == nil {
			t.Fatal("nil request without error")
		}
	})
}

// FuzzDecodeContinueForm_Answers: the answers in tools, requirements and
// step_requirements are accepted only when every member the server models
// holds a value of its field's type (checked here from the raw JSON, apart
// from the decoder), and then re-encode and decode to themselves; a
// mistyped member is a 400 naming the field it was sent in.
func FuzzDecodeContinueForm_Answers(f *testing.F) {
	for _, s := range []struct {
		field uint8
		v     string
	}{
		{0, `[{"tool_call_id":"c1","confirmed":true,"tool_args":{"n":9007199254740993}}]`},
		{0, `[{"tool_call_id":"c1","confirmed":"yes"}]`},
		{0, `[{"answered":1,"child_run_id":{"x":[1]}}]`},
		{1, `[{"id":"c1","tool_execution":{"tool_call_id":"c1","confirmed":false}}]`},
		{1, `[{"id":5}]`},
		{1, `[{"id":"a","ID":"b","tool_execution":"x"}]`},
		{2, `[{"step_id":"s","confirmed":true,"user_input":{"a":1},"selected_choices":["x"]}]`},
		{2, `[{"step_id":"s","requires_executor_input":true,"executor_requirements":[{"id":"c","tool_execution":{"confirmed":"no"}}]}]`},
		{2, `[{"step_id":"s","user_input_schema":[{"name":1}],"retry_count":"2"}]`},
		{1, `[null,{}]`},
	} {
		f.Add(s.field, s.v)
	}
	fields := []string{"tools", "requirements", "step_requirements"}
	types := []reflect.Type{reflect.TypeFor[run.ToolExecution](), reflect.TypeFor[run.Requirement](), reflect.TypeFor[run.StepRequirement]()}
	f.Fuzz(func(t *testing.T, which uint8, v string) {
		i := int(which) % len(fields)
		name := fields[i]
		r := httptest.NewRequest(http.MethodPost, "/agents/a/runs/r/continue", strings.NewReader(url.Values{name: {v}}.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req, err := decodeContinueForm(r)
		if err != nil {
			var he *httpError
			if !errors.As(err, &he) || he.Status < 400 || he.Status > 499 || !strings.Contains(he.Detail, name) {
				t.Fatalf("%s=%q: error %v is not a 4xx naming %s", name, v, err, name)
			}
			if errors.Is(err, wirecheck.ErrMistyped) && (he.Status != http.StatusBadRequest || !strings.Contains(he.Detail, name+"[")) {
				t.Fatalf("%s=%q: mistyped member refused as %d %q", name, v, he.Status, he.Detail)
			}
			return
		}
		if p := mistypedIn(t, json.RawMessage(v), reflect.SliceOf(types[i]), name); p != "" && strings.TrimSpace(v) != "" {
			t.Fatalf("%s=%q accepted with %s mistyped", name, v, p)
		}
		var got any
		switch i {
		case 0:
			got = req.Tools
		case 1:
			got = req.Requirements
		default:
			got = req.StepRequirements
		}
		b, err := json.Marshal(got)
		if err != nil {
			t.Fatalf("encode %+v: %v", got, err)
		}
		again := reflect.New(reflect.SliceOf(types[i]))
		if err := json.Unmarshal(b, again.Interface()); err != nil {
			t.Fatalf("decode %s: %v", b, err)
		}
		if b2, err := json.Marshal(again.Elem().Interface()); err != nil || !reflect.DeepEqual(jsonValue(t, b), jsonValue(t, b2)) {
			t.Fatalf("%s=%q: %s decodes to %s (%v)", name, v, b, b2, err)
		}
	})
}

// jsonValue decodes b with its numbers as written.
func jsonValue(t *testing.T, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return v
}

// mistypedIn is the fuzz target's oracle, read from the raw JSON: the path
// of a member of raw (of type t) that an answer type models but whose value
// its field cannot hold, descending into the answer types (a tool
// execution, a requirement, a step requirement) and lists of them; "" when
// there is none.
func mistypedIn(t *testing.T, raw json.RawMessage, typ reflect.Type, path string) string {
	t.Helper()
	if string(raw) == "null" {
		return ""
	}
	switch typ.Kind() {
	case reflect.Pointer:
		return mistypedIn(t, raw, typ.Elem(), path)
	case reflect.Slice:
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			return ""
		}
		for j, it := range items {
			if p := mistypedIn(t, it, typ.Elem(), fmt.Sprintf("%s[%d]", path, j)); p != "" {
				return p
			}
		}
		return ""
	case reflect.Struct:
	default:
		return ""
	}
	if typ.PkgPath() != reflect.TypeFor[run.Requirement]().PkgPath() {
		return ""
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return ""
	}
	for f := range typ.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		mv, ok := obj[name]
		if !f.IsExported() || name == "-" || name == "" || !ok {
			continue
		}
		if json.Unmarshal(mv, reflect.New(f.Type).Interface()) != nil {
			return path + "." + name
		}
		switch elem := f.Type; {
		case elem == reflect.TypeFor[*run.ToolExecution](), elem == reflect.TypeFor[[]run.Requirement]():
			if p := mistypedIn(t, mv, elem, path+"."+name); p != "" {
				return p
			}
		}
	}
	return ""
}
