package lossless

import (
	"bytes"
	"encoding/json"
	"testing"
)

// setMembers and member are ParseObject then With or Member.
func setMembers(data []byte, set ...Field) ([]byte, error) {
	o, err := ParseObject(data)
	if err != nil {
		return nil, err
	}
	return o.With(set...)
}

func member(data []byte, name string) (json.RawMessage, bool, error) {
	o, err := ParseObject(data)
	if err != nil {
		return nil, false, err
	}
	v, ok := o.Member(name)
	return v, ok, nil
}

func TestSetMembers_KeepsTheOthersAsWritten(t *testing.T) {
	for _, tc := range []struct {
		data string
		set  []Field
		want string
	}{
		{``, []Field{{"a", json.RawMessage(`1`)}}, `{"a":1}`},
		{`null`, []Field{{"a", json.RawMessage(`1`)}}, `{"a":1}`},
		{`{}`, nil, `{}`},
		{` {"n": 12345678901234567890, "s":"x\u00e9", "a":{"old":true}} `, []Field{{"a", json.RawMessage(`{"new":1}`)}, {"b", json.RawMessage(`[]`)}},
			`{"n":12345678901234567890,"s":"x\u00e9","a":{"new":1},"b":[]}`},
		// A repeated member is replaced once, where it first was.
		{`{"a":1,"z":2,"a":3}`, []Field{{"a", json.RawMessage(`9`)}}, `{"a":9,"z":2}`},
		// An escaped key is the same member.
		{`{"\u0061":1}`, []Field{{"a", json.RawMessage(`2`)}}, `{"\u0061":2}`},
		{`{"we\"ird":1}`, []Field{{"we\"ird", json.RawMessage(`2`)}, {"new\"one", json.RawMessage(`3`)}}, `{"we\"ird":2,"new\"one":3}`},
	} {
		got, err := setMembers([]byte(tc.data), tc.set...)
		if err != nil || string(got) != tc.want {
			t.Errorf("SetMembers(%s) = %s, %v; want %s", tc.data, got, err, tc.want)
		}
		if err == nil && !json.Valid(got) {
			t.Errorf("SetMembers(%s) = %s: not JSON", tc.data, got)
		}
	}
	for _, bad := range []string{`[1]`, `"s"`, `{"a":`, `7`} {
		if _, err := ParseObject([]byte(bad)); err == nil {
			t.Errorf("ParseObject(%s): want an error", bad)
		}
	}
}

func TestMember_LastOneWins(t *testing.T) {
	v, ok, err := member([]byte(`{"a":1,"b":{"a":5},"a":[2]}`), "a")
	if err != nil || !ok || string(v) != `[2]` {
		t.Fatalf("Member = %s %v %v", v, ok, err)
	}
	if _, ok, _ := member([]byte(`{"b":{"a":5}}`), "a"); ok {
		t.Fatal("a nested member was taken for a top-level one")
	}
}

func FuzzSetMembers(f *testing.F) {
	f.Add([]byte(`{"a":1,"b":"x"}`), "a")
	f.Add([]byte(`{"\u0061":[1,{"c":null}]}`), "a")
	f.Add([]byte(`null`), "z")
	f.Fuzz(func(t *testing.T, data []byte, name string) {
		got, err := setMembers(data, Field{name, json.RawMessage(`{"v":1}`)})
		if err != nil {
			return
		}
		if !json.Valid(got) {
			t.Fatalf("SetMembers(%q, %q) = %q: not JSON", data, name, got)
		}
		v, ok, err := member(got, name)
		if err != nil || !ok || string(v) != `{"v":1}` {
			t.Fatalf("Member(%q, %q) = %s %v %v", got, name, v, ok, err)
		}
	})
}

// FuzzReaders: MemberReader and ElementReader never panic and always end,
// whatever they are given (callers trust a store's columns to be valid);
// on a valid object the members are encoding/json's.
func FuzzReaders(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[1,{"c":"d"}]}`, `[1,"x",{"a":[]}]`, `{"a":}`, `[}`, `{"a`, `{"a"`, `{"a":1,`, `[,1]`, `"`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n := 0
		mr := ReadMembers(data)
		for _, _, ok := mr.Next(); ok; _, _, ok = mr.Next() {
			if n++; n > len(data) {
				t.Fatalf("%q: more members than bytes", data)
			}
		}
		n = 0
		er := ReadElements(data)
		for _, ok := er.Next(); ok; _, ok = er.Next() {
			if n++; n > len(data) {
				t.Fatalf("%q: more elements than bytes", data)
			}
		}
		var want map[string]json.RawMessage
		if json.Unmarshal(data, &want) != nil || bytes.TrimLeft(data, " \t\r\n")[0] != '{' {
			return
		}
		got := map[string]json.RawMessage{}
		mr = ReadMembers(data)
		for k, v, ok := mr.Next(); ok; k, v, ok = mr.Next() {
			var name string
			if err := json.Unmarshal(append(append([]byte{'"'}, k...), '"'), &name); err != nil {
				t.Fatalf("%q: key %q: %v", data, k, err)
			}
			got[name] = v
		}
		if len(got) != len(want) {
			t.Fatalf("%q: members %v, want %v", data, got, want)
		}
		for k, v := range want {
			if !bytes.Equal(bytes.TrimSpace(got[k]), bytes.TrimSpace(v)) {
				t.Fatalf("%q: member %q = %s, want %s", data, k, got[k], v)
			}
		}
	})
}
