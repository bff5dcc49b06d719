package memory

import (
	"errors"
	"strings"
	"testing"
)

func TestParseUpdates_ValidAnswers(t *testing.T) {
	known := map[string]bool{"m1": true, "m2": true}
	got, err := ParseUpdates("```json\n"+`{"updates":[{"op":"add","memory_id":"","memory":" likes tea ","topics":["drinks"," "]},`+
		`{"op":"update","memory_id":"m1","memory":"lives in Oslo","topics":[]},{"op":"delete","memory_id":"m2","memory":"","topics":[]}]}`+"\n```", known)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Memory != "likes tea" || len(got[0].Topics) != 1 || got[1].MemoryID != "m1" || got[2].Op != OpDelete {
		t.Fatalf("got %+v", got)
	}
	none, err := ParseUpdates(`{"updates":[]}`, nil)
	if err != nil || len(none) != 0 {
		t.Fatalf("no change: %v %v", none, err)
	}
}

func TestParseUpdates_MalformedIsRefusedWithAReason(t *testing.T) {
	known := map[string]bool{"m1": true}
	cases := map[string]string{
		"not json":         `I will remember that`,
		"empty":            ``,
		"truncated":        `{"updates":[{"op":"add","memory":"x"`,
		"no updates":       `{}`,
		"unknown field":    `{"updates":[],"extra":1}`,
		"unknown op":       `{"updates":[{"op":"clear"}]}`,
		"unknown id":       `{"updates":[{"op":"delete","memory_id":"other-users-memory"}]}`,
		"add with id":      `{"updates":[{"op":"add","memory_id":"m1","memory":"x"}]}`,
		"blank memory":     `{"updates":[{"op":"add","memory":"  "}]}`,
		"twice":            `{"updates":[{"op":"update","memory_id":"m1","memory":"a"},{"op":"delete","memory_id":"m1"}]}`,
		"trailing":         `{"updates":[]} {"updates":[]}`,
		"trailing brace":   `{"updates":[]}}`,
		"trailing bracket": `{"updates":[{"op":"add","memory":"x"}]}] and more`,
		"too long":         `{"updates":[{"op":"add","memory":"` + strings.Repeat("x", MaxMemoryChars+1) + `"}]}`,
		"too many":         `{"updates":[` + strings.TrimSuffix(strings.Repeat(`{"op":"add","memory":"x"},`, MaxUpdates+1), ",") + `]}`,
		"wrong type":       `{"updates":{"op":"add"}}`,
		"topics not list":  `{"updates":[{"op":"add","memory":"x","topics":"a"}]}`,
	}
	for name, in := range cases {
		_, err := ParseUpdates(in, known)
		if !errors.Is(err, ErrMalformedUpdates) {
			t.Errorf("%s: err = %v, want ErrMalformedUpdates", name, err)
		}
	}
}

func TestParseSummary(t *testing.T) {
	s, err := ParseSummary(`{"summary":" talked about tea ","topics":["tea",""]}`)
	if err != nil || s.Summary != "talked about tea" || len(s.Topics) != 1 {
		t.Fatalf("got %+v, %v", s, err)
	}
	for _, bad := range []string{``, `{}`, `{"summary":""}`, `{"summary":"x","mood":"ok"}`, `nope`, `{"summary":1}`,
		`{"summary":"x"} {"summary":"y"}`, `{"summary":"a\u0000b"}`, `{"summary":"x","topics":["\u0000"]}`, `{"summary":"x"}}`, `{"summary":"x"}] and more`} {
		if _, err := ParseSummary(bad); !errors.Is(err, ErrMalformedSummary) {
			t.Errorf("%q: err = %v", bad, err)
		}
	}
}

func FuzzParseUpdates(f *testing.F) {
	f.Add(`{"updates":[{"op":"add","memory":"x","topics":["a"]}]}`, "m1")
	f.Add("```json\n{\"updates\":[{\"op\":\"delete\",\"memory_id\":\"m1\"}]}\n```", "m1")
	f.Add(`{"updates":[{"op":"update","memory_id":"m1","memory":"\u0000"}]}`, "m1")
	f.Add("```", "")
	f.Fuzz(func(t *testing.T, in, id string) {
		known := map[string]bool{id: true}
		ups, err := ParseUpdates(in, known)
		if err != nil {
			if !errors.Is(err, ErrMalformedUpdates) {
				t.Fatalf("error %v does not wrap ErrMalformedUpdates", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, u := range ups {
			switch u.Op {
			case OpAdd:
				if u.MemoryID != "" || u.Memory == "" {
					t.Fatalf("bad add accepted: %+v", u)
				}
			case OpUpdate, OpDelete:
				if !known[u.MemoryID] || seen[u.MemoryID] {
					t.Fatalf("bad %s accepted: %+v", u.Op, u)
				}
				seen[u.MemoryID] = true
			default:
				t.Fatalf("unknown op accepted: %+v", u)
			}
		}
	})
}

func FuzzParseSummary(f *testing.F) {
	f.Add(`{"summary":"x","topics":["a"]}`)
	f.Add("```\n{\"summary\":\"x\"}\n```")
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseSummary(in)
		if err != nil {
			if !errors.Is(err, ErrMalformedSummary) {
				t.Fatalf("error %v does not wrap ErrMalformedSummary", err)
			}
			return
		}
		if strings.TrimSpace(s.Summary) == "" {
			t.Fatal("empty summary accepted")
		}
	})
}
