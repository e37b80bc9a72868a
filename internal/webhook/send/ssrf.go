package send

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"code.dny.dev/ssrf"
)

// Resolver looks host names up; *net.Resolver is one. Tests inject their own to make a name
// resolve to a public address when an endpoint is saved and a private one later.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// ErrForbiddenAddress is wrapped by every refusal of a private, loopback, link-local,
// multicast, unspecified, shared (CGNAT) or cloud-metadata address.
var ErrForbiddenAddress = errors.New("address not on the public internet")

// specialPurpose refuses every range of IANA's IPv4 and IPv6 Special-Purpose Address
// Registries and, on IPv6, anything outside global unicast 2000::/3. code.dny.dev/ssrf
// generates its lists from those registries, so new IANA entries arrive with an upgrade
// rather than by hand. That covers "this network", CGNAT 100.64.0.0/10 (where cloud metadata
// services such as 100.100.100.200 also live), IETF protocol assignments, benchmarking,
// documentation, AS112, AMT, reserved 240.0.0.0/4, broadcast, multicast, IPv4-compatible
// ::/96 ("::127.0.0.1"), NAT64 64:ff9b::/96 and 64:ff9b:1::/48, discard 100::/64, Teredo,
// ORCHID and the rest of 2001::/23, 6to4 2002::/16, unique-local and link-local. Each of
// the embedding ranges (NAT64, 6to4, Teredo) is refused whole: the IPv4 address inside may
// be private. Ports and networks are not its business here (any is allowed).
var specialPurpose = ssrf.New(ssrf.WithAnyPort(), ssrf.WithAnyNetwork())

// ForbiddenIP reports whether a webhook must not connect to ip: loopback, private (RFC 1918,
// unique-local fc00::/7 — which holds AWS's fd00:ec2::254 metadata address), link-local
// (169.254.0.0/16 holds the 169.254.169.254 metadata address), multicast, unspecified, and
// every other special-purpose range (specialPurpose). IPv4-mapped addresses are checked as
// the IPv4 address they carry.
func ForbiddenIP(ip netip.Addr) bool {
	ip = ip.Unmap()
	return !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() || specialPurpose.SafeAddr(ip) != nil
}

// forbiddenHostName refuses names that only ever mean this machine or a private network.
func forbiddenHostName(host string) bool {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if h == "localhost" || !strings.Contains(h, ".") {
		return true
	}
	for _, suffix := range []string{".localhost", ".local", ".internal", ".home.arpa", ".lan", ".intranet"} {
		if strings.HasSuffix(h, suffix) {
			return true
		}
	}
	return false
}

// URLPolicy is what ValidateURL allows.
type URLPolicy struct {
	// AllowPrivateTargets lets URLs name private addresses (tests with local receivers only).
	AllowPrivateTargets bool
	// Resolver looks names up when the URL is saved; nil uses net.DefaultResolver.
	Resolver Resolver
	// LookupTimeout bounds that lookup (default 3 s). A name that cannot be resolved is
	// accepted: the connect-time check refuses it later if it resolves privately.
	LookupTimeout time.Duration
}

// MaxURLLength is the longest endpoint URL accepted.
const MaxURLLength = 2048

// ValidateURL checks an endpoint address: absolute https:// with a host name, no user
// credentials, and (unless AllowPrivateTargets) a host that is not, and does not resolve
// to, an address off the public internet. The message is for people.
func ValidateURL(ctx context.Context, raw string, p URLPolicy) error {
	if len(raw) > MaxURLLength {
		return fmt.Errorf("must be at most %d characters", MaxURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Hostname() == "" {
		return errors.New("must be an absolute address such as https://example.com/hooks")
	}
	if u.Scheme != "https" {
		return errors.New("must start with https://")
	}
	if u.User != nil {
		return errors.New("must not carry a user name or password")
	}
	if u.Fragment != "" {
		return errors.New("must not carry a #fragment")
	}
	// url.Parse takes any digits as a port; one out of range could never be connected to.
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return errors.New("must have a port between 1 and 65535")
		}
	}
	if p.AllowPrivateTargets {
		return nil
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil {
		if ForbiddenIP(ip) {
			return fmt.Errorf("must be on the public internet: %s is a %w", host, errPrivate)
		}
		return nil
	}
	if forbiddenHostName(host) {
		return fmt.Errorf("must be on the public internet: %s is a local or internal name", host)
	}
	res := p.Resolver
	if res == nil {
		res = net.DefaultResolver
	}
	timeout := p.LookupTimeout
	if timeout <= 0 {
		timeout = 3 * time.Second
	}
	lctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ips, err := res.LookupNetIP(lctx, "ip", host)
	if err != nil {
		return nil // unknown now; refused at connect time if it resolves privately then
	}
	for _, ip := range ips {
		if ForbiddenIP(ip) {
			return fmt.Errorf("must be on the public internet: %s resolves to %s, a %w", host, ip.Unmap(), errPrivate)
		}
	}
	return nil
}

var errPrivate = fmt.Errorf("private or reserved address (%w)", ErrForbiddenAddress)

// guardedDialer connects only to permitted addresses: it resolves the name itself, skips
// forbidden addresses, and checks the address actually dialled again in Control, so a name
// that resolved publicly when the endpoint was saved and privately now is still refused.
type guardedDialer struct {
	allowPrivate bool
	resolver     Resolver
	dialer       net.Dialer
}

func newGuardedDialer(allowPrivate bool, res Resolver) *guardedDialer {
	if res == nil {
		res = net.DefaultResolver
	}
	g := &guardedDialer{allowPrivate: allowPrivate, resolver: res}
	g.dialer = net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Control: g.control}
	return g
}

// control runs after the address is chosen and before connect.
func (g *guardedDialer) control(network, address string, _ syscall.RawConn) error {
	if g.allowPrivate {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("refused to connect to %s: %w", address, ErrForbiddenAddress)
	}
	if ForbiddenIP(ap.Addr()) {
		return fmt.Errorf("refused to connect to %s: %w", ap.Addr().Unmap(), errPrivate)
	}
	return nil
}

func (g *guardedDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else {
		ips, err = g.resolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, fmt.Errorf("look up %s: %w", host, err)
		}
	}
	var firstErr error
	for _, ip := range ips {
		if !g.allowPrivate && ForbiddenIP(ip) {
			if firstErr == nil {
				firstErr = fmt.Errorf("refused to connect to %s (%s): %w", host, ip.Unmap(), errPrivate)
			}
			continue
		}
		conn, err := g.dialer.DialContext(ctx, network, net.JoinHostPort(ip.Unmap().String(), port))
		if err == nil {
			return conn, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	if firstErr == nil {
		firstErr = fmt.Errorf("%s has no address", host)
	}
	return nil, firstErr
}
