// Package apiroot checks an OpenAI-style API root and picks its key, for the
// Chat Completions and Responses models alike.
package apiroot

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/agentryhq/agentry/model"
)

// Default is OpenAI's API root.
const Default = "https://api.openai.com/v1"

// Root is a checked API root and the key its requests carry.
type Root struct {
	// Base is the API root without a trailing slash.
	Base string
	// Key is the API key, empty when none is sent.
	Key string
	// Official: the root is OpenAI's own (api.openai.com).
	Official bool
}

// Resolve checks base (Default when empty) and picks the key: key when
// given; for OpenAI itself OPENAI_API_KEY, which is never sent to another
// server. OpenAI without any key is model.ErrNoAPIKey unless keyless
// (another credential, a token source, is configured). prefix starts the
// error messages ("openai", "responses").
func Resolve(prefix, modelID, base, key string, keyless bool) (Root, error) {
	if strings.TrimSpace(modelID) == "" {
		return Root{}, errors.New(prefix + ": Config.Model is required (a model id such as \"gpt-4o-mini\")")
	}
	if base == "" {
		base = Default
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Root{}, fmt.Errorf("%s: Config.BaseURL %q must be an absolute http(s) URL such as %s", prefix, base, Default)
	}
	official := strings.EqualFold(u.Hostname(), "api.openai.com")
	if key == "" && official {
		// The environment's key goes only to OpenAI itself: a compatible
		// server gets a key only when the caller passes one explicitly.
		key = os.Getenv("OPENAI_API_KEY")
	}
	if key == "" && official && !keyless {
		return Root{}, fmt.Errorf("%s: %w: set Config.APIKey or the OPENAI_API_KEY environment variable", prefix, model.ErrNoAPIKey)
	}
	return Root{Base: strings.TrimRight(base, "/"), Key: key, Official: official}, nil
}
