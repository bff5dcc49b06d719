package responses

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/modeltest"
)

func drainStream(t *testing.T, body string) (*model.Response, error) {
	t.Helper()
	rec := newRecorder(t, "text/event-stream", body)
	m, err := New(Config{APIKey: "sk", BaseURL: rec.URL, Model: "o4-mini"})
	if err != nil {
		t.Fatal(err)
	}
	var acc model.Accumulator
	for c, err := range m.Stream(context.Background(), &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "x")}}) {
		if err != nil {
			return acc.Response(), err
		}
		acc.Add(c)
	}
	return acc.Response(), nil
}

// A function call whose arguments arrive only with its output_item.done
// (no argument deltas, as some Responses-compatible servers stream it) keeps
// them; a call that streamed deltas is not given them twice.
func TestStream_FunctionCallArgumentsOnlyInItemDone(t *testing.T) {
	t.Parallel()
	added := func(index, id string) string {
		return itemAdded(index, `{"id":"fc_`+index+`","type":"function_call","status":"in_progress","arguments":"","call_id":"`+id+`","name":"get_weather"}`)
	}
	body := sseBody(created,
		added("0", "call_a"), itemDone("0", parisCall),
		added("1", "call_b"), argsDelta("1", `{"city":`), argsDelta("1", `"Lyon"}`), itemDone("1", lyonCall),
		completed(parisCall, lyonCall))
	r, err := drainStream(t, body)
	if err != nil {
		t.Fatal(err)
	}
	calls := r.Message.ToolCalls
	if len(calls) != 2 || calls[0].Arguments != `{"city":"Paris"}` || calls[1].Arguments != `{"city":"Lyon"}` {
		t.Fatalf("tool calls %+v, want Paris then Lyon, each once", calls)
	}
}

// OpenAI quotes a key it refuses ("Incorrect API key provided: …", in full
// when it is not a well-formed key) and a gateway page may echo the
// Authorization header: the key stays out of the error, which ends up in
// logs and in the stored run.
func TestHTTPErrors_NeverCarryTheAPIKey(t *testing.T) {
	t.Parallel()
	const key = "my-gateway-secret-key"
	bodies := []string{
		`{"error":{"message":"Incorrect API key provided: ` + key + `. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
		"<html><pre>Authorization: Bearer " + key + "</pre></html>",
	}
	for _, body := range bodies {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.ReadAll(r.Body)
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, body)
		}))
		t.Cleanup(srv.Close)
		m, err := New(Config{APIKey: key, BaseURL: srv.URL, Model: "o4-mini"})
		if err != nil {
			t.Fatal(err)
		}
		modeltest.FailsBothWays(t, m, model.ErrAuth)
	}
}

// A gateway's own credential given as an extra header (extra_headers) stays
// out of the error too, as it does on the openai provider.
func TestHTTPErrors_NeverCarryExtraHeaderCredentials(t *testing.T) {
	t.Parallel()
	const gateway = "Bearer gw-header-secret-456"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":{"message":"gateway refused cf-aig-authorization: `+gateway+`","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`)
	}))
	t.Cleanup(srv.Close)
	m, err := New(Config{APIKey: "sk", BaseURL: srv.URL, Model: "o4-mini",
		Params: model.Params{ExtraHeaders: map[string]string{"cf-aig-authorization": gateway}}})
	if err != nil {
		t.Fatal(err)
	}
	modeltest.FailsBothWays(t, m, model.ErrAuth)
}

// A function call announced only by its output_item.done (no
// output_item.added before it, as a Responses-compatible server may stream
// it) is kept whole, and the answer ends in tool_calls.
func TestStream_FunctionCallOnlyInItemDone(t *testing.T) {
	t.Parallel()
	body := sseBody(created, itemDone("0", parisCall), completed(parisCall))
	r, err := drainStream(t, body)
	if err != nil {
		t.Fatal(err)
	}
	calls := r.Message.ToolCalls
	if len(calls) != 1 || calls[0].ID != "call_a" || calls[0].Name != "get_weather" || calls[0].Arguments != `{"city":"Paris"}` || r.StopReason != "tool_calls" {
		t.Fatalf("tool calls %+v, stop %q: want call_a get_weather Paris, tool_calls", calls, r.StopReason)
	}
}

// Argument deltas of a call announced only by its output_item.done (no
// output_item.added) are kept with it, as the done-only call itself is;
// deltas of an output that never turns out to be a call are malformed.
func TestStream_ArgumentDeltasBeforeADoneOnlyCall(t *testing.T) {
	t.Parallel()
	noArgs := strings.Replace(parisCall, `"arguments":"{\"city\":\"Paris\"}"`, `"arguments":""`, 1)
	for _, done := range []string{parisCall, noArgs} {
		body := sseBody(created, argsDelta("0", `{"city":`), argsDelta("0", `"Paris"}`), itemDone("0", done), completed(parisCall))
		r, err := drainStream(t, body)
		if err != nil {
			t.Fatal(err)
		}
		calls := r.Message.ToolCalls
		if len(calls) != 1 || calls[0].ID != "call_a" || calls[0].Name != "get_weather" || calls[0].Arguments != `{"city":"Paris"}` || r.StopReason != "tool_calls" {
			t.Fatalf("done %s: tool calls %+v, stop %q: want call_a get_weather Paris once, tool_calls", done, calls, r.StopReason)
		}
	}
	_, err := drainStream(t, sseBody(created, argsDelta("0", `{}`), completed(message("hi"))))
	if !errors.Is(err, model.ErrMalformedResponse) {
		t.Errorf("deltas of no call: err = %v, want ErrMalformedResponse", err)
	}
}
