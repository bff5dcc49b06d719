package netguard

import (
	"errors"
	"net/netip"
	"testing"
)

// On an IPv6-only network (DNS64 and NAT64, e.g. an IPv6-only Kubernetes
// cluster or EC2 subnet) every IPv4-only site resolves to 64:ff9b::<v4>,
// which the default guard refuses; the operator adds 64:ff9b::/96 to
// allow_networks. That opened the whole IPv4 space behind the NAT64
// gateway on every port: 64:ff9b::a00:5 is 10.0.0.5, which an AWS NAT
// gateway routes to the VPC. An address in the prefix is now checked as
// the IPv4 address it embeds (RFC 6052), under the same policy.
func TestCheckAddrPort_AllowedNAT64PrefixChecksTheIPv4ItEmbeds(t *testing.T) {
	t.Parallel()
	g := MustNew(Config{AllowNetworks: []string{"64:ff9b::/96"}})
	for _, s := range []string{
		"[64:ff9b::7f00:1]:80",    // 127.0.0.1
		"[64:ff9b::a9fe:a9fe]:80", // 169.254.169.254, the metadata service
		"[64:ff9b::a00:5]:80",     // 10.0.0.5
		"[64:ff9b::6440:1]:443",   // 100.64.0.1 (CGNAT)
		"[64:ff9b::c0a8:101]:443", // 192.168.1.1
		"[64:ff9b::5db8:d822]:22", // 93.184.216.34, a port not allowed
	} {
		if err := g.CheckAddrPort("tcp6", netip.MustParseAddrPort(s)); !errors.Is(err, ErrBlocked) {
			t.Errorf("%s: err = %v, want ErrBlocked", s, err)
		}
	}
	if err := g.CheckAddrPort("tcp6", netip.MustParseAddrPort("[64:ff9b::5db8:d822]:443")); err != nil {
		t.Errorf("a public IPv4 address through NAT64 refused: %v", err)
	}
	// A private IPv4 network allowed as well is reachable through NAT64
	// too, on any port, as it is directly.
	g = MustNew(Config{AllowNetworks: []string{"64:ff9b::/96", "10.0.0.0/8"}})
	if err := g.CheckAddrPort("tcp6", netip.MustParseAddrPort("[64:ff9b::a00:5]:5432")); err != nil {
		t.Errorf("10.0.0.5 allowed, through NAT64: %v", err)
	}
	if err := g.CheckAddrPort("tcp6", netip.MustParseAddrPort("[64:ff9b::7f00:1]:80")); !errors.Is(err, ErrBlocked) {
		t.Errorf("127.0.0.1 through NAT64 with 10.0.0.0/8 allowed: %v", err)
	}
	// Without the prefix allowed, NAT64 addresses stay refused.
	if err := MustNew(Config{}).CheckAddrPort("tcp6", netip.MustParseAddrPort("[64:ff9b::5db8:d822]:443")); !errors.Is(err, ErrBlocked) {
		t.Errorf("NAT64 address with the default config: %v", err)
	}
}
