package bedrock

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/modeltest"
)

// An error body that echoes the request's headers (a gateway's debug page, a
// proxy quoting what it refused) does not carry the session token into the
// error, which ends up in logs and in the stored run.
func TestHTTPErrors_NeverCarryTheSessionToken(t *testing.T) {
	t.Parallel()
	const token = "IQoJb3JpZ2luX2VjEXAMPLE-secret-session-token"
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.Header().Set("X-Amzn-Errortype", "UnrecognizedClientException:http://internal.amazon.com/coral/com.amazon.coral.service/")
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, `{"message":"The security token included in the request is invalid: `+r.Header.Get("X-Amz-Security-Token")+`"}`)
	}))
	t.Cleanup(echo.Close)
	creds := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG", SessionToken: token}, nil
	})
	m, err := New(context.Background(), Config{Model: "amazon.nova-pro-v1:0", Region: "us-east-1", Credentials: creds, BaseURL: echo.URL})
	if err != nil {
		t.Fatal(err)
	}
	req := &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "hi")}}
	for _, streamed := range []bool{false, true} {
		var err error
		if streamed {
			for _, e := range m.Stream(context.Background(), req) {
				err = e
			}
		} else {
			_, err = m.Invoke(context.Background(), req)
		}
		if !errors.Is(err, model.ErrAuth) {
			t.Fatalf("stream %v: err = %v, want ErrAuth", streamed, err)
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("stream %v: error carries the session token: %s", streamed, err)
		}
	}
}

// A gateway's own credential given as an extra header (extra_headers, e.g.
// a proxy's x-api-key in front of a VPC endpoint) stays out of the error
// too, as it does on the anthropic, openai and responses providers.
func TestHTTPErrors_NeverCarryExtraHeaderCredentials(t *testing.T) {
	t.Parallel()
	const gateway = "Bearer gw-header-secret-456"
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, `{"message":"gateway refused x-gateway-auth: `+r.Header.Get("x-gateway-auth")+`"}`)
	}))
	t.Cleanup(echo.Close)
	m := newTestModel(t, echo.URL, model.Params{ExtraHeaders: map[string]string{"x-gateway-auth": gateway}})
	modeltest.FailsBothWays(t, m, model.ErrAuth)
}
