package send

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"sync"
	"testing"
)

func TestForbiddenIP(t *testing.T) {
	cases := map[string]bool{
		"127.0.0.1": true, "127.8.9.10": true, "::1": true, // loopback
		"10.0.0.1": true, "172.16.5.4": true, "192.168.1.1": true, "fd00::1": true, // private
		"169.254.169.254": true, "fe80::1": true, "fd00:ec2::254": true, // link-local, metadata
		"224.0.0.1": true, "ff02::1": true, "239.1.2.3": true, // multicast
		"0.0.0.0": true, "::": true, // unspecified
		"100.64.0.1": true, "100.100.100.200": true, // CGNAT (Alibaba metadata)
		"::ffff:127.0.0.1": true, "::ffff:10.1.2.3": true, "64:ff9b::a00:1": true, // mapped, NAT64
		"255.255.255.255": true, "198.18.0.1": true,
		"8.8.8.8": false, "93.184.216.34": false, "2606:4700::1111": false, "100.128.0.1": false,
	}
	for s, want := range cases {
		if got := ForbiddenIP(netip.MustParseAddr(s)); got != want {
			t.Errorf("ForbiddenIP(%s) = %v, want %v", s, got, want)
		}
	}
}

// fakeResolver answers from a table that a test can change.
type fakeResolver struct {
	mu    sync.Mutex
	hosts map[string][]netip.Addr
	calls int
}

func (f *fakeResolver) set(host string, ips ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.hosts == nil {
		f.hosts = map[string][]netip.Addr{}
	}
	f.hosts[host] = nil
	for _, ip := range ips {
		f.hosts[host] = append(f.hosts[host], netip.MustParseAddr(ip))
	}
}

func (f *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	ips, ok := f.hosts[host]
	if !ok {
		return nil, errors.New("no such host")
	}
	return ips, nil
}

func TestValidateURL(t *testing.T) {
	res := &fakeResolver{}
	res.set("hooks.example.com", "93.184.216.34")
	res.set("sneaky.example.com", "93.184.216.34", "10.0.0.7")
	res.set("metadata.example.com", "169.254.169.254")
	cases := []struct {
		url  string
		want string // "" = accepted
	}{
		{"https://hooks.example.com/switchboard", ""},
		{"https://hooks.example.com:8443/x?y=1", ""},
		{"https://93.184.216.34/hook", ""},
		{"https://unknown.example.net/hook", ""}, // unresolvable now: checked at connect time
		{"http://hooks.example.com/", "https://"},
		{"ftp://hooks.example.com/", "https://"},
		{"hooks.example.com/x", "absolute"},
		{"https:///nohost", "absolute"},
		{"https://user:pw@hooks.example.com/", "password"},
		{"https://127.0.0.1/", "public internet"},
		{"https://[::1]:8443/", "public internet"},
		{"https://10.1.2.3/", "public internet"},
		{"https://169.254.169.254/latest/meta-data", "public internet"},
		{"https://100.64.1.1/", "public internet"},
		{"https://localhost:8443/", "local or internal"},
		{"https://metadata.google.internal/", "local or internal"},
		{"https://printer.local/", "local or internal"},
		{"https://intranet/", "local or internal"},
		{"https://sneaky.example.com/", "resolves to 10.0.0.7"},
		{"https://metadata.example.com/", "resolves to 169.254.169.254"},
		{"https://hooks.example.com/" + strings.Repeat("a", 2100), "at most"},
		{"HTTPS://hooks.example.com/x", ""}, // schemes are case-insensitive
		{"https://hooks.example.com:99999/x", "port"},
		{"https://hooks.example.com:0/x", "port"},
	}
	for _, c := range cases {
		err := ValidateURL(context.Background(), c.url, URLPolicy{Resolver: res})
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.url, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: got %v, want an error containing %q", c.url, err, c.want)
		}
	}
	// The explicit switch for local receivers lets private addresses through, nothing else.
	if err := ValidateURL(context.Background(), "https://127.0.0.1:9443/", URLPolicy{AllowPrivateTargets: true}); err != nil {
		t.Errorf("with AllowPrivateTargets: %v", err)
	}
	if err := ValidateURL(context.Background(), "http://127.0.0.1:9443/", URLPolicy{AllowPrivateTargets: true}); err == nil {
		t.Error("http:// accepted with AllowPrivateTargets")
	}
}
