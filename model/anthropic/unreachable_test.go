package anthropic_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/anthropic"
)

func TestInvoke_UnansweredRequestIsUnreachableNotServerError(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := l.Addr().String()
	l.Close()
	dns := &http.Client{Transport: &http.Transport{DialContext: func(_ context.Context, _, addr string) (net.Conn, error) {
		host, _, _ := net.SplitHostPort(addr)
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}}
	}}}
	tests := []struct {
		name string
		cfg  anthropic.Config
		want string
	}{
		{"dns", anthropic.Config{Model: "m", APIKey: "k", BaseURL: "https://llm.example.test", HTTPClient: dns}, "cannot resolve host llm.example.test"},
		{"refused", anthropic.Config{Model: "m", BaseURL: "http://" + refused, APIKey: "k"}, "connection to " + refused + " refused"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, err := anthropic.New(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, err = m.Invoke(context.Background(), &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}})
			if !errors.Is(err, model.ErrUnreachable) || errors.Is(err, model.ErrServer) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v; want ErrUnreachable (not ErrServer) mentioning %q", err, tc.want)
			}
			for _, err := range m.Stream(context.Background(), &model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}) {
				if !errors.Is(err, model.ErrUnreachable) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("stream err = %v; want ErrUnreachable mentioning %q", err, tc.want)
				}
			}
		})
	}
}
