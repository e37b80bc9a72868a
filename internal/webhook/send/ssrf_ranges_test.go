package send

import (
	"context"
	"net/netip"
	"testing"
)

// One row per special-purpose range (IANA IPv4 and IPv6 Special-Purpose Address Registries,
// and the other ranges no webhook may reach): an address inside is refused, and the nearest
// address just outside (where that one is public) is allowed.
func TestForbiddenIPSpecialPurposeRanges(t *testing.T) {
	for _, c := range []struct {
		rng, inside, outside string // outside "": the neighbours are special-purpose too
	}{
		// IPv4
		{"0.0.0.0/8 this network", "0.1.2.3", "1.0.0.0"},
		{"10.0.0.0/8 private", "10.255.255.255", "11.0.0.0"},
		{"100.64.0.0/10 shared (CGNAT)", "100.100.100.200", "100.128.0.0"},
		{"100.64.0.0/10 shared (CGNAT), low end", "100.64.0.0", "100.63.255.255"},
		{"127.0.0.0/8 loopback", "127.255.255.254", "128.0.0.0"},
		{"169.254.0.0/16 link-local", "169.254.169.254", "169.255.0.0"},
		{"172.16.0.0/12 private", "172.31.255.255", "172.32.0.0"},
		{"192.0.0.0/24 IETF protocol assignments", "192.0.0.8", "192.0.1.0"},
		{"192.0.2.0/24 TEST-NET-1", "192.0.2.1", "192.0.3.0"},
		{"192.31.196.0/24 AS112-v4", "192.31.196.1", "192.31.197.0"},
		{"192.52.193.0/24 AMT", "192.52.193.1", "192.52.194.0"},
		{"192.88.99.0/24 6to4 relay anycast", "192.88.99.1", "192.88.100.0"},
		{"192.168.0.0/16 private", "192.168.1.1", "192.169.0.0"},
		{"192.175.48.0/24 AS112 direct delegation", "192.175.48.1", "192.175.49.0"},
		{"198.18.0.0/15 benchmarking", "198.19.255.255", "198.20.0.0"},
		{"198.18.0.0/15 benchmarking, low end", "198.18.0.0", "198.17.255.255"},
		{"198.51.100.0/24 TEST-NET-2", "198.51.100.7", "198.51.101.0"},
		{"203.0.113.0/24 TEST-NET-3", "203.0.113.9", "203.0.114.0"},
		{"224.0.0.0/4 multicast", "224.0.0.1", "223.255.255.255"},
		{"240.0.0.0/4 reserved", "240.0.0.1", ""},
		{"255.255.255.255/32 broadcast", "255.255.255.255", ""},
		// IPv4 inside IPv6: mapped addresses are checked as their IPv4 address.
		{"::ffff:0:0/96 mapped, private", "::ffff:10.1.2.3", "::ffff:8.8.8.8"},
		// IPv6 outside global unicast 2000::/3: refused whole, so no neighbour is public.
		{"::/128 unspecified", "::", ""},
		{"::1/128 loopback", "::1", ""},
		{"::/96 IPv4-compatible", "::127.0.0.1", ""},
		{"::/96 IPv4-compatible, public v4", "::8.8.8.8", ""},
		{"64:ff9b::/96 NAT64, private v4", "64:ff9b::10.0.0.1", ""},
		{"64:ff9b::/96 NAT64, metadata v4", "64:ff9b::169.254.169.254", ""},
		{"64:ff9b:1::/48 local NAT64", "64:ff9b:1::c0a8:101", ""},
		{"100::/64 discard", "100::1", ""},
		{"100:0:0:1::/64 dummy prefix", "100:0:0:1::1", ""},
		{"5f00::/16 SRv6 SIDs", "5f00::1", ""},
		{"fc00::/7 unique-local (AWS metadata)", "fd00:ec2::254", ""},
		{"fe80::/10 link-local", "fe80::1", ""},
		{"fec0::/10 site-local (deprecated)", "fec0::1", ""},
		{"ff00::/8 multicast", "ff02::1", ""},
		{"1fff::/16 below global unicast", "1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "2000::1"},
		// IPv6 inside global unicast
		{"2001::/32 Teredo", "2001:0:4136:e378:8000:63bf:3fff:fdd2", "2001:200::1"},
		{"2001:10::/28 ORCHID", "2001:10::1", "2001:200::1"},
		{"2001:20::/28 ORCHIDv2", "2001:20::1", "2001:200::1"},
		{"2001:2::/48 benchmarking", "2001:2::1", "2001:200::1"},
		{"2001::/23 IETF protocol assignments, high end", "2001:1ff:ffff::1", "2001:200::"},
		{"2001:db8::/32 documentation", "2001:db8::1", "2001:db9::"},
		{"2002::/16 6to4, private v4", "2002:a00:1::1", "2003::"},
		{"2002::/16 6to4, loopback v4", "2002:7f00:1::1", "2001:ffff:ffff::"},
		{"2620:4f:8000::/48 AS112 direct delegation", "2620:4f:8000::1", "2620:4f:8001::"},
		{"3fff::/20 documentation", "3fff::1", "3fff:1000::"},
	} {
		if !ForbiddenIP(netip.MustParseAddr(c.inside)) {
			t.Errorf("%s: %s allowed, want refused", c.rng, c.inside)
		}
		if c.outside != "" && ForbiddenIP(netip.MustParseAddr(c.outside)) {
			t.Errorf("%s: %s (just outside) refused, want allowed", c.rng, c.outside)
		}
	}
}

// An endpoint URL naming such an address literally is refused when saved.
func TestValidateURLRefusesSpecialPurposeLiterals(t *testing.T) {
	for _, u := range []string{"https://[::127.0.0.1]/", "https://[::a00:1]/hook", "https://[64:ff9b::a9fe:a9fe]/",
		"https://[2002:7f00:1::1]/", "https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", "https://198.18.0.1/", "https://192.0.0.170/"} {
		if err := ValidateURL(context.Background(), u, URLPolicy{Resolver: &fakeResolver{}}); err == nil {
			t.Errorf("ValidateURL(%s) accepted, want refused", u)
		}
	}
}
