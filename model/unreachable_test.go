package model_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/modeltest"
)

// noSuchHost is what net.Dialer returns for a name the resolver answers
// NXDOMAIN for, without depending on this machine's DNS.
func noSuchHost(_ context.Context, _, addr string) (net.Conn, error) {
	host, _, _ := net.SplitHostPort(addr)
	return nil, &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}}
}

func TestUnreachable_IsNotAServerErrorAndNamesTheHost(t *testing.T) {
	t.Parallel()
	refused := modeltest.RefusedAddr(t)
	dnsClient := &http.Client{Transport: &http.Transport{DialContext: noSuchHost}}
	tests := []struct {
		name      string
		client    *http.Client
		url       string
		want      []string
		retryable bool
	}{
		{"host name does not resolve", dnsClient, "https://api.example.test/v1/chat/completions",
			[]string{"provider unreachable", "cannot resolve host api.example.test", "no such host"}, false},
		{"connection refused", http.DefaultClient, "http://" + refused + "/v1/messages",
			[]string{"provider unreachable", "connection to " + refused + " refused"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := tc.client.Post(tc.url, "application/json", strings.NewReader("{}"))
			if err == nil {
				t.Fatal("request succeeded")
			}
			pe := model.Unreachable("P", tc.url, err)
			if errors.Is(pe, model.ErrServer) || !errors.Is(pe, model.ErrUnreachable) {
				t.Errorf("kind = %v, want model.ErrUnreachable and not model.ErrServer", pe.Kind)
			}
			for _, w := range tc.want {
				if !strings.Contains(pe.Error(), w) {
					t.Errorf("%q does not mention %q", pe.Error(), w)
				}
			}
			if model.Retryable(pe) != tc.retryable {
				t.Errorf("Retryable = %v, want %v", model.Retryable(pe), tc.retryable)
			}
		})
	}
}
