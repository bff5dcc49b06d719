package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"

	"code.dny.dev/ssrf"
)

// ErrBlocked marks a destination the guard refused. The error text names the
// address and the setting that would allow it.
var ErrBlocked = errors.New("netguard: destination refused")

// Config says what may be reached beyond the public internet. The zero value
// allows only public unicast addresses on ports 80 and 443.
type Config struct {
	// AllowNetworks are CIDR prefixes or single addresses reachable on any port
	// although they are not public, e.g. "10.1.2.0/24" for an internal search
	// server. "127.0.0.1/32" opens loopback (tests, a local proxy).
	//
	// One prefix translates rather than opens: on an IPv6-only network
	// (DNS64 and NAT64) IPv4-only sites resolve to the NAT64 prefix
	// 64:ff9b::/96, and allowing it (or a prefix holding it) lets an address
	// there through as the IPv4 address it embeds (RFC 6052) would be: a
	// public one on the allowed ports, a private one only when its network
	// is allowed too. A narrower entry inside 64:ff9b::/96 opens its
	// addresses as written.
	AllowNetworks []string
	// AllowHosts are host names dialed without the address check, whatever they
	// resolve to: each entry is trusted entirely, so list only hosts you run.
	AllowHosts []string
	// Ports are the ports allowed on public addresses; empty means 80 and 443.
	Ports []uint16
}

// Guard refuses connections to loopback, private, link-local, unspecified,
// multicast, shared (CGNAT), documentation and other special-purpose
// addresses, IPv4-mapped and NAT64 IPv6 forms of them, unless the Config
// allows them. It is safe for concurrent use.
type Guard struct {
	allowNets  []netip.Prefix
	allowHosts []string
	check      *ssrf.Guardian
	dialer     *net.Dialer // checks every resolved address
	trusted    *net.Dialer // for AllowHosts
}

// nat64 is the well-known NAT64 prefix (RFC 6052): 64:ff9b::<IPv4>.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// New validates cfg and returns its guard.
func New(cfg Config) (*Guard, error) {
	g := &Guard{}
	for _, s := range cfg.AllowNetworks {
		p, err := parsePrefix(s)
		if err != nil {
			return nil, err
		}
		g.allowNets = append(g.allowNets, p)
	}
	for _, h := range cfg.AllowHosts {
		h = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(h), "."))
		if h == "" || strings.ContainsAny(h, "/:@ ") {
			return nil, fmt.Errorf("netguard: allow_hosts entry %q is not a host name (write example.internal, without scheme or port)", h)
		}
		g.allowHosts = append(g.allowHosts, h)
	}
	opts := []ssrf.Option{}
	if len(cfg.Ports) > 0 {
		opts = append(opts, ssrf.WithPorts(cfg.Ports...))
	}
	g.check = ssrf.New(opts...)
	g.dialer = &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Control: g.Control}
	g.trusted = &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	return g, nil
}

// MustNew is New for fixed configurations; it panics on error.
func MustNew(cfg Config) *Guard {
	g, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return g
}

func parsePrefix(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), nil
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	return netip.Prefix{}, fmt.Errorf("netguard: allow_networks entry %q is neither a CIDR prefix (10.0.0.0/8) nor an address", s)
}

// Control is a net.Dialer Control function: it runs after DNS resolution,
// on the address actually dialed.
func (g *Guard) Control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot parse %q", ErrBlocked, address)
	}
	return g.CheckAddrPort(network, ap)
}

// CheckAddrPort applies the policy to one resolved destination.
func (g *Guard) CheckAddrPort(network string, ap netip.AddrPort) error {
	// A link-local destination is dialed with its zone (fe80::1%eth0), and
	// a prefix contains no zoned address.
	addr := ap.Addr().WithZone("")
	for _, p := range g.allowNets {
		// An allowed IPv4 prefix also covers its IPv4-mapped IPv6 form.
		if !p.Contains(addr) && !p.Contains(addr.Unmap()) {
			continue
		}
		if p.Bits() <= nat64.Bits() && nat64.Contains(addr) {
			// Allowing the NAT64 prefix is how an IPv6-only network
			// reaches the IPv4 internet; it must not open the private
			// IPv4 networks (or the metadata service) the gateway also
			// routes to.
			v4 := netip.AddrFrom4([4]byte(addr.AsSlice()[12:]))
			if err := g.CheckAddrPort("tcp4", netip.AddrPortFrom(v4, ap.Port())); err != nil {
				return fmt.Errorf("%s through NAT64: %w", ap, err)
			}
		}
		return nil
	}
	if err := g.check.Safe(network, ap.String(), nil); err != nil {
		// The port is checked first: name ports only when the address
		// itself is public, or adding the port would not help.
		hint := "add its network to allow_networks to reach it"
		if errors.Is(err, ssrf.ErrProhibitedPort) && g.check.SafeAddr(addr) == nil {
			hint = "add the port to ports to reach it"
		}
		return fmt.Errorf("%w: %s is not a public destination (%v); %s", ErrBlocked, ap, err, hint)
	}
	return nil
}

// DialContext dials addr ("host:port"), refusing addresses the policy does not
// allow. Hosts in AllowHosts are dialed without the check.
func (g *Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if host, _, err := net.SplitHostPort(addr); err == nil && g.hostAllowed(host) {
		return g.trusted.DialContext(ctx, network, addr)
	}
	return g.dialer.DialContext(ctx, network, addr)
}

func (g *Guard) hostAllowed(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	return slices.Contains(g.allowHosts, host)
}

// CheckURL refuses what no dial could make safe: schemes other than http and
// https, user info, a missing host, and literal addresses outside the policy
// (refused here with a clearer message than the dial would give).
func (g *Guard) CheckURL(u *url.URL) error {
	if u == nil {
		return fmt.Errorf("%w: no URL", ErrBlocked)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%w: scheme %q: only http and https URLs can be fetched", ErrBlocked, u.Scheme)
	}
	if u.User != nil {
		return fmt.Errorf("%w: URLs with user:password@ are not accepted; pass credentials in headers", ErrBlocked)
	}
	host := u.Hostname()
	if host == "" {
		return fmt.Errorf("%w: URL %q has no host", ErrBlocked, u.Redacted())
	}
	if g.hostAllowed(host) {
		return nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		port := u.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
		}
		ap, err := netip.ParseAddrPort(net.JoinHostPort(a.String(), port))
		if err != nil {
			return fmt.Errorf("%w: bad port in %q", ErrBlocked, u.Redacted())
		}
		network := "tcp4"
		if a.Is6() {
			network = "tcp6"
		}
		return g.CheckAddrPort(network, ap)
	}
	return nil
}

// Transport returns an HTTP transport that dials through the guard and never
// uses a proxy from the environment (a proxy would be dialed instead of the
// destination, bypassing the check). It has http.DefaultTransport's
// settings but is made anew, not cloned: a program may have wrapped the
// default in a RoundTripper of its own, or given it dial functions (DialTLS)
// that would bypass the guard.
func (g *Guard) Transport() *http.Transport {
	return &http.Transport{
		DialContext:            g.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           100,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  1 * time.Second,
		MaxResponseHeaderBytes: 1 << 20,
	}
}

// MaxRedirects is how many redirects Client follows.
const MaxRedirects = 5

// Client returns an HTTP client on Transport with an overall timeout (zero:
// none) that follows at most MaxRedirects redirects, each checked by CheckURL
// before its address is checked again at dial time.
func (g *Guard) Client(timeout time.Duration) *http.Client {
	return &http.Client{
		Transport: g.Transport(),
		Timeout:   timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > MaxRedirects {
				return fmt.Errorf("stopped after %d redirects", MaxRedirects)
			}
			return g.CheckURL(req.URL)
		},
	}
}
