package model

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
)

// closedAddr is a loopback address nothing listens on (connection refused).
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// noSuchHost is what net.Dialer returns for a name the resolver answers
// NXDOMAIN for, without depending on this machine's DNS.
func noSuchHost(_ context.Context, _, addr string) (net.Conn, error) {
	host, _, _ := net.SplitHostPort(addr)
	return nil, &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}}
}

func TestUnreachable_IsNotAServerErrorAndNamesTheHost(t *testing.T) {
	t.Parallel()
	refused := closedAddr(t)
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
			pe := Unreachable("P", tc.url, err)
			if errors.Is(pe, ErrServer) || !errors.Is(pe, ErrUnreachable) {
				t.Errorf("kind = %v, want ErrUnreachable and not ErrServer", pe.Kind)
			}
			for _, w := range tc.want {
				if !strings.Contains(pe.Error(), w) {
					t.Errorf("%q does not mention %q", pe.Error(), w)
				}
			}
			if Retryable(pe) != tc.retryable {
				t.Errorf("Retryable = %v, want %v", Retryable(pe), tc.retryable)
			}
		})
	}
}
