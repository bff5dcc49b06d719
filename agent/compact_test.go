package agent

import (
	"bytes"
	"context"
	"reflect"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/media/local"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// nonZero returns a non-zero value of type t (a field of Config).
func nonZero(t *testing.T, ty reflect.Type) reflect.Value {
	t.Helper()
	v := reflect.New(ty).Elem()
	switch ty.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(7)
	case reflect.Float64:
		v.SetFloat(0.5)
	case reflect.Pointer:
		v.Set(reflect.New(ty.Elem()))
	case reflect.Slice:
		v.Set(reflect.MakeSlice(ty, 1, 1))
	case reflect.Map:
		v.Set(reflect.MakeMap(ty))
	case reflect.Func:
		v.Set(reflect.MakeFunc(ty, func([]reflect.Value) []reflect.Value { return nil }))
	case reflect.Interface:
		store, err := local.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []any{scripted.Reply("x"), &bytes.Buffer{}, store, 1} {
			if reflect.TypeOf(c).Implements(ty) {
				v.Set(reflect.ValueOf(c))
				return v
			}
		}
		t.Fatalf("no non-zero value for interface %s: add one to nonZero", ty)
	case reflect.Struct:
		// The first field of the struct that can be set, recursively.
		for i := range ty.NumField() {
			if ty.Field(i).IsExported() {
				v.Field(i).Set(nonZero(t, ty.Field(i).Type))
				return v
			}
		}
		t.Fatalf("struct %s has no exported field", ty)
	default:
		t.Fatalf("no non-zero value for %s (%s): extend nonZero", ty, ty.Kind())
	}
	return v
}

// TestCompact_EveryFieldSurvives sets each Config field (and the first
// field of each embedded or nested struct) alone and checks that the form
// New keeps loses nothing: compactConfig's fields keep the compact form and
// come back from expand, every other field selects the full form. A field
// added to Config later is covered without editing this test.
func TestCompact_EveryFieldSurvives(t *testing.T) {
	small := reflect.TypeFor[compactConfig]()
	cfgType := reflect.TypeFor[Config]()
	for i := range cfgType.NumField() {
		f := cfgType.Field(i)
		if !f.IsExported() {
			continue
		}
		t.Run(f.Name, func(t *testing.T) {
			var c Config
			reflect.ValueOf(&c).Elem().Field(i).Set(nonZero(t, f.Type))
			k, ok := compact(&c)
			_, inSmall := small.FieldByName(f.Name)
			if ok != inSmall {
				t.Fatalf("compact says %v for a Config setting only %s; want %v", ok, f.Name, inSmall)
			}
			a := &Agent{}
			if ok {
				a.small = k
			} else {
				a.full = &c
			}
			got := reflect.ValueOf(a.conf()).Elem().Field(i)
			want := reflect.ValueOf(&c).Elem().Field(i)
			if f.Type.Kind() == reflect.Func {
				if got.IsNil() {
					t.Fatalf("%s was lost", f.Name)
				}
				return
			}
			if !reflect.DeepEqual(got.Interface(), want.Interface()) {
				t.Fatalf("%s = %#v after New's form, want %#v", f.Name, got.Interface(), want.Interface())
			}
			if !reflect.DeepEqual(*a.conf(), c) && f.Type.Kind() != reflect.Func {
				t.Fatalf("the Config read back differs from the one given (field %s)", f.Name)
			}
		})
	}
}

// TestCompact_CommonAgentIsOneAllocation: an agent with a model, tools,
// instructions, a name and a database is one allocation of a few hundred
// bytes (the whole Config was 928 bytes in every Agent).
func TestCompact_CommonAgentIsOneAllocation(t *testing.T) {
	m := scripted.Reply("hi")
	echo := tool.MustFunc(tool.FuncConfig{Name: "echo", Description: "Echoes S."}, func(_ context.Context, in struct{ S string }) (string, error) { return in.S, nil })
	d := db.New("", memory.New())
	instr := Instructions{"be brief"}
	tools := []tool.Tool{echo}
	allocs := testing.AllocsPerRun(100, func() {
		a, err := New(Config{Name: "a", Model: m, Tools: tools, Instructions: instr, DB: d, AddHistoryToContext: true})
		if err != nil {
			t.Fatal(err)
		}
		if a.full != nil {
			t.Fatal("a common agent kept the whole Config")
		}
	})
	if allocs != 1 {
		t.Fatalf("New allocated %v times, want 1", allocs)
	}
	if sz := reflect.TypeFor[Agent]().Size(); sz > 320 {
		t.Fatalf("Agent is %d bytes; keep it small (see the comment on Agent)", sz)
	}
}

// TestCompact_ConfigAfterDefaults: Config() gives back what New was given,
// with New's defaults, in both forms.
func TestCompact_ConfigAfterDefaults(t *testing.T) {
	m := scripted.Reply("hi")
	for _, c := range []Config{
		{Name: "small", Model: m},
		{Name: "full", Model: m, ToolCallLimit: 3, Metadata: map[string]any{"k": "v"}},
	} {
		a := mustAgent(t, c)
		got := a.Config()
		c.NumHistoryRuns = DefaultNumHistoryRuns
		if !reflect.DeepEqual(got, c) {
			t.Fatalf("Config() = %+v, want %+v", got, c)
		}
	}
}

// TestCompact_ConcurrentFirstRuns: the whole Config is built once, on the
// first use, while several runs start at the same time (run with -race).
func TestCompact_ConcurrentFirstRuns(t *testing.T) {
	a := mustAgent(t, Config{Name: "c", Model: scripted.Reply("hi"), DB: db.New("", memory.New())})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			out, err := a.Run(context.Background(), run.TextInput("x"))
			if err != nil || out.ContentString() != "hi" {
				t.Errorf("run: %v, %q", err, out.ContentString())
			}
		})
	}
	wg.Wait()
	if a.ID() != "c" || a.Config().Name != "c" {
		t.Fatalf("id %q, name %q", a.ID(), a.Config().Name)
	}
}
