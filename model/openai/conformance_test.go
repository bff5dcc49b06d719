package openai_test

import (
	"net/http"
	"testing"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/modeltest"
	"github.com/agentryhq/agentry/model/openai"
	"github.com/agentryhq/agentry/model/openai/openaitest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	modeltest.Run(t, modeltest.Provider{
		New: func(t *testing.T, base string, client *http.Client) model.Model {
			m, err := openai.New(openai.Config{APIKey: "sk-test", BaseURL: base + "/v1", Model: "gpt-4o-mini", HTTPClient: client})
			if err != nil {
				t.Fatal(err)
			}
			return m
		},
		Reply: openaitest.Reply,
		Usage: openaitest.Usage,
	})
}
