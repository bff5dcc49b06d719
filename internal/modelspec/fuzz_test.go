package modelspec

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// FuzzParse: no spec panics; a refusal is ErrInvalidSpec; an accepted spec
// names a listed provider (lower case) and a non-empty, trimmed id, and
// writing them back as provider:id parses to the same pair.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"openai:gpt-4o-mini", " OpenAI : gpt ", "ollama:llama3.2:1b", "scripted:/tmp/x.yaml", ":x", "x:", "",
		"nope:model", "azure-openai:gpt-4o", "\x00:\x00", "OPENAI:\xff", "litellm: a b "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		provider, id, err := Parse(spec)
		if err != nil {
			if !errors.Is(err, ErrInvalidSpec) {
				t.Fatalf("Parse(%q) error %v is not ErrInvalidSpec", spec, err)
			}
			return
		}
		if !slices.Contains(Providers, provider) {
			t.Fatalf("Parse(%q) provider %q is not listed", spec, provider)
		}
		if id == "" || id != strings.TrimSpace(id) {
			t.Fatalf("Parse(%q) id %q", spec, id)
		}
		p2, id2, err := Parse(provider + ":" + id)
		if err != nil || p2 != provider || id2 != id {
			t.Fatalf("Parse(%q) = %q, %q; again as %q: %q, %q, %v", spec, provider, id, provider+":"+id, p2, id2, err)
		}
	})
}
