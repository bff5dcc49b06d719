package anthropic

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/model"
)

// An error body that echoes the request's API key (a gateway's debug page, a
// proxy quoting the header it refused) does not carry the key into the
// error, which ends up in logs and in the stored run.
func TestHTTPErrors_NeverCarryTheAPIKey(t *testing.T) {
	t.Parallel()
	const key = "sk-ant-test" // the key fakeAPI.model sends
	tests := []struct {
		name  string
		reply reply
		kind  error
	}{
		{"gateway page echoing headers", reply{status: 400, body: "<html><pre>POST /v1/messages\nx-api-key: " + key + "\nanthropic-version: 2023-06-01</pre></html>"}, model.ErrBadRequest},
		{"envelope quoting the key", jsonReply(401, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key `+key+`"}}`), model.ErrAuth},
		{"key cut by the excerpt", reply{status: 502, body: strings.Repeat("x", 502) + key}, model.ErrServer},
	}
	for _, tc := range tests {
		for _, mode := range []string{"invoke", "stream"} {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				t.Parallel()
				m := newFakeAPI(t, tc.reply).model(t)
				var err error
				if mode == "invoke" {
					_, err = m.Invoke(context.Background(), userReq("hi"))
				} else {
					_, _, err = drain(t, m, userReq("hi"))
				}
				if !errors.Is(err, tc.kind) {
					t.Fatalf("err = %v, want %v", err, tc.kind)
				}
				if s := err.Error(); strings.Contains(s, key[:8]) {
					t.Errorf("error carries the API key: %s", s)
				}
			})
		}
	}
}

// A gateway's own credential given as an extra header (extra_headers, e.g.
// Cloudflare AI Gateway's cf-aig-authorization) stays out of the error too,
// as it does on the openai provider.
func TestHTTPErrors_NeverCarryExtraHeaderCredentials(t *testing.T) {
	t.Parallel()
	const gateway = "Bearer gw-header-secret-456"
	f := newFakeAPI(t, jsonReply(401, `{"type":"error","error":{"type":"authentication_error","message":"gateway refused cf-aig-authorization: `+gateway+`"}}`))
	m, err := New(Config{APIKey: "sk-ant-test", BaseURL: f.srv.URL, Model: "claude-sonnet-4-5",
		Params: model.Params{ExtraHeaders: map[string]string{"cf-aig-authorization": gateway}}})
	if err != nil {
		t.Fatal(err)
	}
	_, invokeErr := m.Invoke(context.Background(), userReq("hi"))
	_, _, streamErr := drain(t, m, userReq("hi"))
	for _, err := range []error{invokeErr, streamErr} {
		if !errors.Is(err, model.ErrAuth) {
			t.Fatalf("err = %v, want ErrAuth", err)
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("error carries the gateway credential: %v", err)
		}
	}
}
