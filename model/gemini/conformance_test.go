package gemini

import (
	"net/http"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/modeltest"
)

const usageJSON = `"usageMetadata":{"promptTokenCount":120,"candidatesTokenCount":15,"totalTokenCount":163,"cachedContentTokenCount":64,"thoughtsTokenCount":28,"promptTokensDetails":[{"modality":"TEXT","tokenCount":120}]},"modelVersion":"gemini-2.5-flash","responseId":"resp-1"`

// respJSON is one GenerateContentResponse with the given parts.
func respJSON(parts, finish string, usage bool) string {
	s := `{"candidates":[{"content":{"parts":[` + parts + `],"role":"model"}`
	if finish != "" {
		s += `,"finishReason":"` + finish + `"`
	}
	s += `,"index":0}]`
	if usage {
		s += `,` + usageJSON
	} else {
		s += `,"modelVersion":"gemini-2.5-flash","responseId":"resp-1"`
	}
	return s + `}`
}

func textPart(s string) string { return `{"text":"` + s + `"}` }

func callPart(name, args, sig string) string {
	s := `{"functionCall":{"name":"` + name + `","args":` + args + `}`
	if sig != "" {
		s += `,"thoughtSignature":"` + sig + `"`
	}
	return s + `}`
}

func googleError(status int, code, msg string, h http.Header) modeltest.Reply {
	rep := modeltest.JSON(status, `{"error":{"code":`+itoa(status)+`,"message":"`+msg+`","status":"`+code+`"}}`)
	for k, v := range h {
		rep.Header[k] = v
	}
	return rep
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}

func conformanceReply(t *testing.T, s modeltest.Scenario, r *http.Request, body []byte) modeltest.Reply {
	streamed := strings.HasSuffix(r.URL.Path, ":streamGenerateContent")
	if streamed && r.URL.Query().Get("alt") != "sse" {
		t.Errorf("stream request without alt=sse: %s", r.URL)
	}
	if r.Header.Get("x-goog-api-key") != "test-key" {
		t.Errorf("x-goog-api-key = %q", r.Header.Get("x-goog-api-key"))
	}
	switch s {
	case modeltest.RateLimited:
		return googleError(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota).", http.Header{"Retry-After": {"7"}})
	case modeltest.ServerError:
		return googleError(503, "UNAVAILABLE", "The model is overloaded. Please try again later.", nil)
	case modeltest.ContextLength:
		return googleError(400, "INVALID_ARGUMENT", "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).", nil)
	case modeltest.Unauthorized:
		// Google answers a wrong API key with 400, not 401: the reason in
		// the details says what it is.
		return modeltest.JSON(400, `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT",`+
			`"details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com","metadata":{"service":"generativelanguage.googleapis.com"}}]}}`)
	}
	paris, lyon := callPart("get_weather", `{"city":"Paris"}`, "c2lnLXBhcmlz"), callPart("get_weather", `{"city":"Lyon"}`, "")
	if !streamed {
		switch s {
		case modeltest.Text:
			return modeltest.JSON(200, respJSON(textPart("Hello, world."), "STOP", true))
		case modeltest.ToolCall:
			return modeltest.JSON(200, respJSON(paris, "STOP", true))
		case modeltest.ParallelToolCalls:
			return modeltest.JSON(200, respJSON(paris+","+lyon, "STOP", true))
		case modeltest.StructuredOutput:
			return modeltest.JSON(200, respJSON(textPart(`{\"city\":\"Paris\",\"temp_c\":21}`), "STOP", true))
		}
		t.Errorf("scenario %s asked without streaming", s)
		return modeltest.JSON(500, `{}`)
	}
	switch s {
	case modeltest.Text:
		return modeltest.EventStream(respJSON(textPart("Hello, "), "", false), respJSON(textPart("world."), "STOP", true))
	case modeltest.ToolCall:
		return modeltest.EventStream(respJSON(paris, "STOP", true))
	case modeltest.ParallelToolCalls:
		return modeltest.EventStream(respJSON(paris, "", false), respJSON(lyon, "STOP", true))
	case modeltest.StructuredOutput:
		return modeltest.EventStream(respJSON(textPart(`{\"city\":\"Paris\",`), "", false), respJSON(textPart(`\"temp_c\":21}`), "STOP", true))
	case modeltest.MalformedChunk:
		return modeltest.EventStream(respJSON(textPart("Hel"), "", false), `{"candidates":[{"content":{"parts":[{"text":"lo`)
	case modeltest.TruncatedStream:
		return modeltest.EventStream(respJSON(textPart("Hello, "), "", false))
	case modeltest.Hang:
		return modeltest.EventStream(respJSON(textPart("Hello"), "", false))
	case modeltest.StreamError:
		return modeltest.EventStream(respJSON(textPart("Hello"), "", false),
			`{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`)
	}
	t.Errorf("unknown scenario %s", s)
	return modeltest.JSON(500, `{}`)
}

func TestConformance(t *testing.T) {
	t.Parallel()
	modeltest.Run(t, modeltest.Provider{
		New: func(t *testing.T, base string, client *http.Client) model.Model {
			m, err := New(Config{APIKey: "test-key", BaseURL: base, Model: "gemini-2.5-flash", HTTPClient: client})
			if err != nil {
				t.Fatal(err)
			}
			return m
		},
		Reply: conformanceReply,
		// TotalTokens is Agno's input + output, not Google's totalTokenCount
		// (163: it adds the thoughts).
		Usage:          model.Usage{InputTokens: 120, OutputTokens: 15, TotalTokens: 135, CacheReadTokens: 64, ReasoningTokens: 28},
		WholeToolCalls: true,
	})
}
