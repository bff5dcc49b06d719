package apiroot

import (
	"errors"
	"testing"

	"github.com/agentryhq/agentry/model"
)

func TestResolve(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "env-key")
	cases := []struct {
		name, base, key string
		keyless         bool
		want            Root
	}{
		{"default root takes the environment's key", "", "", false, Root{Base: Default, Key: "env-key", Official: true}},
		{"an explicit key wins", "https://api.openai.com/v1/", "mine", false, Root{Base: Default, Key: "mine", Official: true}},
		{"another server never gets the environment's key", "http://127.0.0.1:8080/v1", "", false, Root{Base: "http://127.0.0.1:8080/v1"}},
		{"another server gets an explicit key", "http://127.0.0.1:8080/v1/", "k", false, Root{Base: "http://127.0.0.1:8080/v1", Key: "k"}},
	}
	for _, c := range cases {
		got, err := Resolve("p", "m", c.base, c.key, c.keyless)
		if err != nil || got != c.want {
			t.Errorf("%s: %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}

	t.Setenv("OPENAI_API_KEY", "")
	if _, err := Resolve("p", "m", "", "", false); !errors.Is(err, model.ErrNoAPIKey) {
		t.Errorf("OpenAI without a key: %v, want ErrNoAPIKey", err)
	}
	if got, err := Resolve("p", "m", "", "", true); err != nil || got.Key != "" || !got.Official {
		t.Errorf("OpenAI keyless (a token source): %+v, %v", got, err)
	}
	for _, base := range []string{"api.openai.com/v1", "ftp://x/v1", "http://"} {
		if _, err := Resolve("p", "m", base, "k", false); err == nil {
			t.Errorf("base %q accepted", base)
		}
	}
	if _, err := Resolve("p", " ", "", "k", false); err == nil {
		t.Error("an empty model id accepted")
	}
}
