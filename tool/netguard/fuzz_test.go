package netguard

import (
	"net/netip"
	"net/url"
	"testing"
)

// nonPublic lists, independently of the ssrf package's tables, the
// destinations the default guard must never let through (RFC 6890 and the
// IANA special-purpose registries), the IPv6 forms that embed an IPv4
// address among them.
var nonPublic = func() []netip.Prefix {
	var ps []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
		"192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15",
		"198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
		"::/8",           // unspecified, loopback, IPv4-compatible, IPv4-mapped
		"64:ff9b::/96",   // NAT64
		"64:ff9b:1::/48", // local-use NAT64
		"100::/64",       // discard
		"2001::/32",      // Teredo
		"2001:db8::/32",  // documentation
		"2002::/16",      // 6to4
		"fc00::/7",       // unique local (fd00:ec2::254, the EC2 metadata service)
		"fe80::/10",      // link-local
		"fec0::/10",      // site-local
		"ff00::/8",       // multicast
	} {
		ps = append(ps, netip.MustParsePrefix(s))
	}
	return ps
}()

func refusedByOracle(ap netip.AddrPort) bool {
	a := ap.Addr().WithZone("")
	for _, p := range nonPublic {
		if p.Contains(a) || p.Contains(a.Unmap()) {
			return true
		}
	}
	return ap.Port() != 80 && ap.Port() != 443
}

func FuzzCheckAddrPort(f *testing.F) {
	for _, s := range []string{"127.0.0.1:80", "[::ffff:127.0.0.1]:80", "[64:ff9b::a9fe:a9fe]:80", "[fd00:ec2::254]:80",
		"[fe80::1%eth0]:443", "93.184.216.34:443", "[2606:4700::1111]:443", "[2002:a9fe:a9fe::]:80", "100.64.0.1:443"} {
		ap := netip.MustParseAddrPort(s)
		b, _ := ap.Addr().MarshalBinary()
		f.Add(b, ap.Port())
	}
	g := MustNew(Config{})
	// With the NAT64 prefix allowed (an IPv6-only network), an address in
	// it passes only as the IPv4 address it embeds would.
	g64 := MustNew(Config{AllowNetworks: []string{"64:ff9b::/96"}})
	nat64 := netip.MustParsePrefix("64:ff9b::/96")
	f.Fuzz(func(t *testing.T, raw []byte, port uint16) {
		var a netip.Addr
		if err := a.UnmarshalBinary(raw); err != nil || !a.IsValid() {
			return
		}
		ap := netip.AddrPortFrom(a, port)
		network := "tcp4"
		if a.Is6() {
			network = "tcp6"
		}
		if g.CheckAddrPort(network, ap) == nil && refusedByOracle(ap) {
			t.Fatalf("the default guard lets %s through", ap)
		}
		if g64.CheckAddrPort(network, ap) != nil {
			return
		}
		if nat64.Contains(a.WithZone("")) {
			ap = netip.AddrPortFrom(netip.AddrFrom4([4]byte(a.AsSlice()[12:])), port)
		}
		if refusedByOracle(ap) {
			t.Fatalf("with 64:ff9b::/96 allowed, the guard lets %s through (%s)", netip.AddrPortFrom(a, port), ap)
		}
	})
}

// FuzzCheckURL: a URL the default guard passes is http or https, has a host
// and no user info, and a literal address in it is a public one.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1/", "http://[::ffff:7f00:1]:80/", "https://example.com/x", "http://0x7f000001/",
		"http://2130706433/", "http://0177.0.0.1/", "http://[fe80::1%25eth0]/", "http://u:p@1.1.1.1/", "file:///etc/passwd",
		"http://1.1.1.1:8080/", "HTTP://1.1.1.1/", "http://[64:ff9b::a9fe:a9fe]/"} {
		f.Add(s)
	}
	g := MustNew(Config{})
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := url.Parse(raw)
		if err != nil || g.CheckURL(u) != nil {
			return
		}
		if u.Scheme != "http" && u.Scheme != "https" || u.User != nil || u.Hostname() == "" {
			t.Fatalf("%q passes CheckURL", raw)
		}
		a, err := netip.ParseAddr(u.Hostname())
		if err != nil {
			return // a name: checked at dial time, after resolution
		}
		port := uint16(443)
		if u.Scheme == "http" {
			port = 80
		}
		if p := u.Port(); p != "" {
			ap, err := netip.ParseAddrPort("1.1.1.1:" + p)
			if err != nil {
				t.Fatalf("%q passes CheckURL with port %q", raw, p)
			}
			port = ap.Port()
		}
		if refusedByOracle(netip.AddrPortFrom(a, port)) {
			t.Fatalf("%q passes CheckURL", raw)
		}
	})
}
