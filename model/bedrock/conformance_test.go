package bedrock

import (
	"net/http"
	"testing"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/modeltest"
)

func awsError(status int, typ, msg string, h http.Header) modeltest.Reply {
	rep := modeltest.JSON(status, `{"message":"`+msg+`"}`)
	rep.Header.Set("X-Amzn-ErrorType", typ+":http://internal.amazon.com/coral/com.amazon.bedrock/")
	for k, v := range h {
		rep.Header[k] = v
	}
	return rep
}

func converse(content, stop string) modeltest.Reply {
	return modeltest.JSON(200, `{"metrics":{"latencyMs":1021},"output":{"message":{"content":`+content+`,"role":"assistant"}},"stopReason":"`+stop+`","usage":`+usageJSON+`}`)
}

func conformanceReply(t *testing.T, s modeltest.Scenario, r *http.Request, body []byte) modeltest.Reply {
	verifySigV4(t, r, body)
	streamed := r.URL.Path == unescapedPath("converse-stream")
	if !streamed && r.URL.Path != unescapedPath("converse") {
		t.Errorf("path %s (raw %s)", r.URL.Path, r.URL.RawPath)
	}
	if r.URL.RawPath != "" && r.URL.RawPath != "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse-stream" && r.URL.RawPath != "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse" {
		t.Errorf("raw path %s: the model id must be escaped as the SDK does", r.URL.RawPath)
	}
	switch s {
	case modeltest.RateLimited:
		return awsError(429, "ThrottlingException", "Too many requests, please wait before trying again.", http.Header{"Retry-After": {"7"}})
	case modeltest.ServerError:
		return awsError(503, "ServiceUnavailableException", "Bedrock is unable to process your request.", nil)
	case modeltest.ContextLength:
		return awsError(400, "ValidationException", "Input is too long for requested model.", nil)
	case modeltest.Unauthorized:
		return awsError(403, "UnrecognizedClientException", "The security token included in the request is invalid.", nil)
	}
	paris := `{"toolUse":{"toolUseId":"tooluse_a","name":"get_weather","input":{"city":"Paris"}}}`
	lyon := `{"toolUse":{"toolUseId":"tooluse_b","name":"get_weather","input":{"city":"Lyon"}}}`
	if !streamed {
		switch s {
		case modeltest.Text:
			return converse(`[{"text":"Hello, world."}]`, "end_turn")
		case modeltest.ToolCall:
			return converse(`[`+paris+`]`, "tool_use")
		case modeltest.ParallelToolCalls:
			return converse(`[`+paris+`,`+lyon+`]`, "tool_use")
		case modeltest.StructuredOutput:
			return converse(`[{"toolUse":{"toolUseId":"tooluse_f","name":"weather","input":{"city":"Paris","temp_c":21}}}]`, "tool_use")
		}
		t.Errorf("scenario %s asked without streaming", s)
		return modeltest.JSON(500, `{}`)
	}
	switch s {
	case modeltest.Text:
		return streamReply(msgStart(), textDelta("0", "Hello, "), textDelta("0", "world."), blockStop("0"), msgStop("end_turn"), metadata())
	case modeltest.ToolCall:
		return streamReply(msgStart(), toolStart("0", "tooluse_a", "get_weather"), toolDelta("0", `{\"city\":`), toolDelta("0", `\"Paris\"}`), blockStop("0"), msgStop("tool_use"), metadata())
	case modeltest.ParallelToolCalls:
		return streamReply(msgStart(), toolStart("0", "tooluse_a", "get_weather"), toolDelta("0", `{\"city\":\"Paris\"}`), blockStop("0"),
			toolStart("1", "tooluse_b", "get_weather"), toolDelta("1", `{\"city\":`), toolDelta("1", `\"Lyon\"}`), blockStop("1"), msgStop("tool_use"), metadata())
	case modeltest.StructuredOutput:
		return streamReply(msgStart(), toolStart("0", "tooluse_f", "weather"), toolDelta("0", `{\"city\":\"Paris\",`), toolDelta("0", `\"temp_c\":21}`), blockStop("0"), msgStop("tool_use"), metadata())
	case modeltest.MalformedChunk:
		return streamReply(msgStart(), frame("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"Hel`))
	case modeltest.TruncatedStream:
		return streamReply(msgStart(), textDelta("0", "Hello, "))
	case modeltest.Hang:
		return streamReply(msgStart(), textDelta("0", "Hello"))
	case modeltest.StreamError:
		return streamReply(msgStart(), textDelta("0", "Hello"), exceptionFrame("internalServerException", "The server encountered an internal error while processing the request."))
	}
	t.Errorf("unknown scenario %s", s)
	return modeltest.JSON(500, `{}`)
}

func TestConformance(t *testing.T) {
	t.Parallel()
	modeltest.Run(t, modeltest.Provider{
		New: func(t *testing.T, base string, client *http.Client) model.Model {
			m := newTestModel(t, base, model.Params{})
			if client != nil {
				m.cfg.HTTPClient = client
			}
			return m
		},
		Reply: conformanceReply,
		Usage: testUsage,
	})
}
