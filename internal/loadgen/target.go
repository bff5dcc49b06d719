package loadgen

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"
)

// IsLoopbackHost reports whether host (a URL's Hostname, without port or
// brackets) names this machine: "localhost" or a literal address in
// 127.0.0.0/8 or ::1. Other names are not resolved here, because what a name
// resolves to can change; the built-in client also checks each dialled address.
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// newClient is tuned for many short keep-alive requests to one host: every
// worker keeps its connection idle between requests instead of redialling.
func newClient(cfg Config) *http.Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	if !cfg.AllowRemote {
		// "localhost" is resolved by the system; refuse the connection unless
		// it really goes to a loopback address.
		dialer.ControlContext = func(_ context.Context, _, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return err
			}
			if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
				return fmt.Errorf("%w: dial %s", ErrRemoteTarget, address)
			}
			return nil
		}
	}
	tr := &http.Transport{
		Proxy:               nil, // a proxy would put another host in the path
		DialContext:         dialer.DialContext,
		MaxIdleConns:        2 * cfg.Concurrency,
		MaxIdleConnsPerHost: cfg.Concurrency,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true, // measure the server, not gzip
		TLSHandshakeTimeout: 5 * time.Second,
		ForceAttemptHTTP2:   false,
	}
	return &http.Client{
		Transport: tr,
		// A redirect is reported as its status code, never followed: following
		// could leave loopback and would hide a misconfigured URL.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
