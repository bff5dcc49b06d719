package model

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"syscall"
)

// ErrUnreachable: the request got no answer at all. The host name did not
// resolve, the connection was refused, reset or timed out, or TLS failed. It
// is not a provider server error: no provider was reached. It is retried,
// except for a host name that does not exist.
var ErrUnreachable = errors.New("model: provider unreachable")

// ErrNoAPIKey is returned when a provider that needs an API key got none (in
// its config or its environment variable).
var ErrNoAPIKey = errors.New("model: no API key")

// Unreachable classifies err, a failure of an HTTP request to endpoint that
// got no response, as an ErrUnreachable ProviderError whose message names the
// host and what failed. The cause stays reachable with errors.As (for example
// *net.DNSError).
func Unreachable(provider, endpoint string, err error) *ProviderError {
	host := endpoint
	if u, perr := url.Parse(endpoint); perr == nil && u.Host != "" {
		host = u.Host
	}
	var (
		dns     *net.DNSError
		netErr  net.Error
		certErr *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		header  tls.RecordHeaderError
	)
	var msg string
	switch {
	case errors.As(err, &dns) && dns.IsNotFound:
		msg = fmt.Sprintf("cannot resolve host %s (no such host): check the host name in the base URL and your network", dns.Name)
	case errors.As(err, &dns):
		msg = fmt.Sprintf("DNS lookup of %s failed (%s): check your network", dns.Name, dns.Err)
	case errors.Is(err, syscall.ECONNREFUSED):
		msg = fmt.Sprintf("connection to %s refused: is the server running at that address?", host)
	case errors.As(err, &certErr), errors.As(err, &unknown), errors.As(err, &header):
		msg = fmt.Sprintf("TLS with %s failed: %v", host, err)
	case errors.As(err, &netErr) && netErr.Timeout():
		msg = fmt.Sprintf("no answer from %s in time: check your network or proxy", host)
	default:
		msg = fmt.Sprintf("request to %s failed: %v", host, err)
	}
	return &ProviderError{Provider: provider, Kind: ErrUnreachable, Message: msg, Err: err}
}

// hostNotFound reports a host name that does not resolve: retrying cannot help.
func hostNotFound(err error) bool {
	var dns *net.DNSError
	return errors.As(err, &dns) && dns.IsNotFound
}
