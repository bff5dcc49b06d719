package netguard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

func TestCheckAddrPort_DefaultRefusesNonPublicAddresses(t *testing.T) {
	t.Parallel()
	g := MustNew(Config{})
	refused := []string{
		"127.0.0.1:80", "127.8.9.10:443", "[::1]:80", // loopback
		"10.1.2.3:80", "172.16.0.1:80", "192.168.1.1:443", "[fc00::1]:80", // private
		"169.254.169.254:80", "[fe80::1]:80", // link-local (cloud metadata)
		"0.0.0.0:80", "[::]:80", // unspecified
		"224.0.0.1:80", "[ff02::1]:80", // multicast
		"100.64.0.1:80",                 // shared address space (CGNAT)
		"255.255.255.255:80",            // broadcast
		"[::ffff:127.0.0.1]:80",         // IPv4-mapped loopback
		"[::ffff:169.254.169.254]:80",   // IPv4-mapped metadata
		"[64:ff9b::7f00:1]:80",          // NAT64 form of 127.0.0.1
		"[2002:7f00:1::]:80",            // 6to4 form of 127.0.0.1
		"192.0.2.1:80", "198.18.0.1:80", // documentation, benchmarking
		"93.184.216.34:22", "[2606:4700::1]:25", // public address, port not allowed
	}
	for _, s := range refused {
		ap := netip.MustParseAddrPort(s)
		network := "tcp4"
		if ap.Addr().Is6() {
			network = "tcp6"
		}
		if err := g.CheckAddrPort(network, ap); !errors.Is(err, ErrBlocked) {
			t.Errorf("%s: err = %v, want ErrBlocked", s, err)
		}
	}
	for _, s := range []string{"93.184.216.34:443", "1.1.1.1:80", "[2606:4700::1111]:443"} {
		ap := netip.MustParseAddrPort(s)
		network := "tcp4"
		if ap.Addr().Is6() {
			network = "tcp6"
		}
		if err := g.CheckAddrPort(network, ap); err != nil {
			t.Errorf("%s: public destination refused: %v", s, err)
		}
	}
}

func TestCheckAddrPort_AllowNetworksOpensAnyPort(t *testing.T) {
	t.Parallel()
	g := MustNew(Config{AllowNetworks: []string{"10.1.0.0/16", "127.0.0.1"}})
	for _, s := range []string{"10.1.2.3:8888", "127.0.0.1:5432", "[::ffff:10.1.2.3]:80"} {
		ap := netip.MustParseAddrPort(s)
		if err := g.CheckAddrPort("tcp", ap); err != nil {
			t.Errorf("%s refused: %v", s, err)
		}
	}
	if err := g.CheckAddrPort("tcp4", netip.MustParseAddrPort("10.2.0.1:80")); !errors.Is(err, ErrBlocked) {
		t.Errorf("10.2.0.1 outside the allowed prefix: err = %v", err)
	}
	// Link-local addresses are dialed with a zone; allowing their network
	// (or the address, zone or not) must open them.
	for _, allow := range []string{"fe80::/10", "fe80::1", "fe80::1%eth0"} {
		g := MustNew(Config{AllowNetworks: []string{allow}})
		if err := g.CheckAddrPort("tcp6", netip.MustParseAddrPort("[fe80::1%eth0]:8080")); err != nil {
			t.Errorf("allow_networks %s: fe80::1%%eth0 refused: %v", allow, err)
		}
	}
}

func TestNew_RefusesBadEntries(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{
		{AllowNetworks: []string{"10.0.0.0/33"}},
		{AllowNetworks: []string{"intranet"}},
		{AllowHosts: []string{"http://x.internal"}},
		{AllowHosts: []string{"x.internal:8080"}},
		{AllowHosts: []string{""}},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted a bad entry", cfg)
		}
	}
}

func TestCheckURL_RefusesSchemesUserInfoAndLiteralAddresses(t *testing.T) {
	t.Parallel()
	g := MustNew(Config{})
	for _, raw := range []string{
		"file:///etc/passwd", "gopher://x/", "ftp://example.com/", "http://user:pw@example.com/",
		"http:///nohost", "http://127.0.0.1/", "http://[::1]:80/", "http://169.254.169.254/latest/meta-data",
		"http://[::ffff:7f00:1]/", "http://0.0.0.0:8080/",
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.CheckURL(u); !errors.Is(err, ErrBlocked) {
			t.Errorf("%s: err = %v, want ErrBlocked", raw, err)
		}
	}
	u, _ := url.Parse("https://example.com/page")
	if err := g.CheckURL(u); err != nil {
		t.Errorf("public URL refused: %v", err)
	}
}

// The dial-time check is what makes the guard safe: a name resolving to
// loopback (the DNS-rebinding case) passes CheckURL but is refused at dial.
func TestClient_DefaultRefusesLoopbackAfterResolution(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "secret") }))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	g := MustNew(Config{Ports: []uint16{80, 443, mustPort(t, port)}})
	for _, raw := range []string{srv.URL, "http://localhost:" + port + "/"} {
		resp, err := g.Client(0).Get(raw)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("GET %s through the default guard succeeded", raw)
		}
		if !errors.Is(err, ErrBlocked) {
			t.Errorf("GET %s: err = %v, want ErrBlocked", raw, err)
		}
	}
}

func TestClient_RefusesRedirectToLoopback(t *testing.T) {
	t.Parallel()
	inner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "secret") }))
	t.Cleanup(inner.Close)
	// The outer server listens on 127.0.0.2 (still loopback on Linux), which
	// the test allows; it redirects to 127.0.0.1, which stays refused.
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatalf("listen on 127.0.0.2: %v", err)
	}
	outer := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, inner.URL+"/", http.StatusFound)
	}))
	outer.Listener = ln
	outer.Start()
	t.Cleanup(outer.Close)

	g := MustNew(Config{AllowNetworks: []string{"127.0.0.2/32"}})
	resp, err := g.Client(0).Get(outer.URL + "/start")
	if err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("redirect to loopback followed; body %q", body)
	}
	if !errors.Is(err, ErrBlocked) || !strings.Contains(err.Error(), "127.0.0.1") {
		t.Errorf("err = %v, want ErrBlocked naming 127.0.0.1", err)
	}

	// Opened for the test, the same redirect is followed.
	g = MustNew(Config{AllowNetworks: []string{"127.0.0.0/8"}})
	resp, err = g.Client(0).Get(outer.URL + "/start")
	if err != nil {
		t.Fatalf("allowed redirect: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "secret" {
		t.Errorf("body = %q", body)
	}
}

func TestDialContext_AllowHostsSkipsTheCheck(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	g := MustNew(Config{AllowHosts: []string{"LocalHost."}})
	resp, err := g.Client(0).Get("http://localhost:" + port + "/")
	if err != nil {
		t.Fatalf("allowed host refused: %v", err)
	}
	resp.Body.Close()
	if _, err := g.DialContext(context.Background(), "tcp", "127.0.0.1:"+port); !errors.Is(err, ErrBlocked) {
		t.Errorf("the address itself is still refused: err = %v", err)
	}
}

func mustPort(t *testing.T, s string) uint16 {
	t.Helper()
	var p uint16
	if _, err := fmt.Sscan(s, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// Programs often wrap http.DefaultTransport (tracing, metrics) in a
// RoundTripper of their own; Transport cloned it through a type assertion
// and panicked there. And a clone kept the default's DialTLS, which dials
// https URLs itself, around the guard. Not parallel: it replaces a global
// for its duration.
func TestTransport_DoesNotDependOnDefaultTransport(t *testing.T) {
	saved := http.DefaultTransport
	t.Cleanup(func() { http.DefaultTransport = saved })
	http.DefaultTransport = wrapped{saved}
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("Transport panicked: %v", r)
			}
		}()
		tr := MustNew(Config{}).Transport()
		if tr.Proxy != nil || tr.DialContext == nil || tr.MaxResponseHeaderBytes != 1<<20 || tr.IdleConnTimeout == 0 || !tr.ForceAttemptHTTP2 {
			t.Errorf("transport settings: %+v", tr)
		}
	}()

	own := saved.(*http.Transport).Clone()
	//lint:ignore SA1019 DialTLS is what a program may have set
	own.DialTLS = func(network, addr string) (net.Conn, error) { return net.Dial(network, addr) }
	http.DefaultTransport = own
	//lint:ignore SA1019 see above
	if tr := MustNew(Config{}).Transport(); tr.DialTLS != nil || tr.DialTLSContext != nil || tr.Dial != nil {
		t.Error("the guard's transport dials TLS connections around the guard")
	}
}

type wrapped struct{ http.RoundTripper }

// The hint names the setting that would open the destination: a loopback
// address on a port other than 80 or 443 was told to add the port to
// ports, after which it was still refused (as not public).
func TestCheckAddrPort_HintNamesTheSettingThatHelps(t *testing.T) {
	t.Parallel()
	g := MustNew(Config{})
	for _, c := range []struct{ addr, hint string }{
		{"127.0.0.1:8080", "allow_networks"},
		{"10.0.0.1:80", "allow_networks"},
		{"93.184.216.34:8080", "to ports"},
	} {
		err := g.CheckAddrPort("tcp4", netip.MustParseAddrPort(c.addr))
		if err == nil || !strings.Contains(err.Error(), c.hint) {
			t.Errorf("%s: err = %v, want a hint about %s", c.addr, err, c.hint)
		}
	}
}
