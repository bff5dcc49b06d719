package agent

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentryhq/agentry/run"
)

// FuzzInputSchema: any text input is accepted with its decoded value or
// refused with an InputCheckError; nothing panics.
func FuzzInputSchema(f *testing.F) {
	for _, s := range []string{`{"city":"Paris","days":2}`, `{"city":1}`, `[]`, `"x"`, `{"city":"a"} {}`, `1e999`, ``, `{"city":"\ud800"}`} {
		f.Add(s)
	}
	s, err := compileInputSchema(json.RawMessage(citySchema))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		in := run.TextInput(text)
		err := s.validate(&in)
		if err != nil {
			var ice *InputCheckError
			if !errors.As(err, &ice) || ice.Trigger != TriggerValidationFailed {
				t.Fatalf("error %v is not a validation_failed InputCheckError", err)
			}
			return
		}
		if m, ok := in.InputContent.(map[string]any); !ok || m["city"] == nil {
			t.Fatalf("accepted %q as %#v", text, in.InputContent)
		}
	})
}
