package mcpserver

import (
	"errors"
	"testing"
)

func TestOptions_BuiltinTags(t *testing.T) {
	off := false
	for _, c := range []struct {
		name string
		o    Options
		core bool
		sess bool
	}{
		{"default", Options{}, true, true},
		{"include core", Options{IncludeTags: []string{TagCore}}, true, false},
		{"include none", Options{IncludeTags: []string{}}, false, false},
		{"exclude core", Options{ExcludeTags: []string{TagCore}}, false, true},
		{"builtins off", Options{EnableBuiltinTools: &off, IncludeTags: []string{TagCore}}, false, false},
	} {
		tags := c.o.builtinTags()
		if tags[TagCore] != c.core || tags[TagSession] != c.sess {
			t.Errorf("%s: %v", c.name, tags)
		}
	}
}

func TestOptions_Validate(t *testing.T) {
	for _, o := range []Options{
		{IncludeTags: []string{"memory"}},
		{ExcludeTags: []string{""}},
		{ResultMode: "brief"},
		{MaxResultBytes: -1},
		{Tools: nil, IncludeTags: []string{"Core"}},
	} {
		if err := o.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v", o, err)
		}
	}
	if err := (Options{ResultMode: ResultFull, IncludeTags: []string{TagSession}}).Validate(); err != nil {
		t.Error(err)
	}
	if _, err := New(Config{Options: Options{ResultMode: "brief"}}); !errors.Is(err, ErrConfig) {
		t.Errorf("New: %v", err)
	}
}
