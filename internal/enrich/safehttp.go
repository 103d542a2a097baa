package enrich

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// ErrBlockedAddress marks a fetch refused by the address policy (SSRF
// protection): the URI, a redirect, or a name's resolution led to an
// address the operator did not allow.
var ErrBlockedAddress = errors.New("address not allowed")

// addrPolicy decides which addresses metadata fetches may connect to.
// Token URIs are attacker-chosen: by default only public unicast addresses
// are allowed.
type addrPolicy struct {
	allowLoopback bool
	allowPrivate  bool
}

var (
	// Always refused: not a destination a metadata host can have.
	neverPrefixes = mustPrefixes(
		"0.0.0.0/8",       // "this network"
		"240.0.0.0/4",     // reserved, and 255.255.255.255 broadcast
		"192.0.2.0/24",    // documentation (TEST-NET-1)
		"198.51.100.0/24", // TEST-NET-2
		"203.0.113.0/24",  // TEST-NET-3
		"2001:db8::/32",   // documentation
		"100::/64",        // discard-only
		// Transition and deprecated IPv6 ranges that can carry or reach an
		// internal IPv4 destination the checks below cannot see through
		// (issue #19): refused outright, whatever the policy.
		"64:ff9b:1::/48",  // local-use NAT64 (RFC 8215): a site's own translator
		"::ffff:0:0:0/96", // SIIT IPv4-translated (RFC 2765)
		"2001::/32",       // Teredo: the embedded server/client IPv4 are attacker-chosen
		"fec0::/10",       // site-local (deprecated; still routed as private on some networks)
	)
	// IPv4-compatible IPv6 (deprecated, RFC 4291): refused outright except
	// :: and ::1, which the unspecified and loopback checks judge.
	ipv4Compatible = netip.MustParsePrefix("::/96")
	// Private, shared and special-purpose ranges beyond netip's IsPrivate:
	// refused unless AllowPrivate.
	privatePrefixes = mustPrefixes(
		"100.64.0.0/10", // carrier-grade NAT; holds 100.100.100.200 (Alibaba Cloud metadata)
		"192.0.0.0/24",  // IETF protocol assignments
		"198.18.0.0/15", // benchmarking
	)
	// Cloud metadata services (all also private or link-local): named so
	// the error says what was refused.
	metadataAddrs = map[netip.Addr]bool{
		netip.MustParseAddr("169.254.169.254"): true, // AWS, GCP, Azure, OpenStack, DigitalOcean
		netip.MustParseAddr("169.254.170.2"):   true, // AWS ECS task metadata
		netip.MustParseAddr("100.100.100.200"): true, // Alibaba Cloud
		netip.MustParseAddr("fd00:ec2::254"):   true, // AWS IPv6
	}
	nat64  = netip.MustParsePrefix("64:ff9b::/96")
	sixTo4 = netip.MustParsePrefix("2002::/16")
)

func mustPrefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// check returns nil when ip may be connected to.
func (p addrPolicy) check(ip netip.Addr) error {
	ip = ip.Unmap()
	if !ip.IsValid() {
		return fmt.Errorf("%w: invalid address", ErrBlockedAddress)
	}
	// IPv6 forms that embed an IPv4 destination are judged by it.
	if ip.Is6() {
		b := ip.As16()
		switch {
		case nat64.Contains(ip):
			if err := p.check(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})); err != nil {
				return err
			}
		case sixTo4.Contains(ip):
			if err := p.check(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})); err != nil {
				return err
			}
		}
	}
	switch {
	case ip.IsUnspecified() || ip.IsMulticast() || ip.IsInterfaceLocalMulticast():
		return fmt.Errorf("%w: %s is not a unicast destination", ErrBlockedAddress, ip)
	case inAny(ip, neverPrefixes) || (ipv4Compatible.Contains(ip) && !ip.IsLoopback()):
		return fmt.Errorf("%w: %s is a reserved address", ErrBlockedAddress, ip)
	case ip.IsLoopback():
		if !p.allowLoopback {
			return fmt.Errorf("%w: %s is a loopback address", ErrBlockedAddress, ip)
		}
	case metadataAddrs[ip]:
		if !p.allowPrivate {
			return fmt.Errorf("%w: %s is a cloud metadata-service address", ErrBlockedAddress, ip)
		}
	case ip.IsLinkLocalUnicast():
		if !p.allowPrivate {
			return fmt.Errorf("%w: %s is a link-local address", ErrBlockedAddress, ip)
		}
	case ip.IsPrivate() || inAny(ip, privatePrefixes):
		if !p.allowPrivate {
			return fmt.Errorf("%w: %s is a private address", ErrBlockedAddress, ip)
		}
	}
	return nil
}

func inAny(ip netip.Addr, ps []netip.Prefix) bool {
	for _, p := range ps {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// checkHostLiteral refuses a URL host that is an IP literal the policy
// forbids (names are checked after resolution, when dialed).
func (p addrPolicy) checkHostLiteral(host string) error {
	if ip, err := netip.ParseAddr(host); err == nil {
		return p.check(ip)
	}
	return nil
}

// newSafeClient returns the HTTP client of metadata fetches: every
// connection's resolved address is checked against the policy just before
// connecting (so DNS answers, rebinding and redirects cannot reach a
// refused address), environment proxies are ignored (a proxy would hide
// the destination), and redirects are bounded and re-checked.
func newSafeClient(p addrPolicy, cfg NFTConfig) *http.Client {
	dialer := &net.Dialer{
		Timeout:   cfg.Timeout,
		KeepAlive: 30 * time.Second,
		Control: func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: %q", ErrBlockedAddress, address)
			}
			return p.check(ap.Addr())
		},
	}
	connectTo := cfg.ConnectTo
	tr := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if to, ok := connectTo[addr]; ok {
				addr = to
			}
			return dialer.DialContext(ctx, network, addr)
		},
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           64,
		MaxIdleConnsPerHost:    cfg.PerHost,
		MaxConnsPerHost:        cfg.PerHost,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    cfg.Timeout,
		ResponseHeaderTimeout:  cfg.Timeout,
		MaxResponseHeaderBytes: 64 << 10,
	}
	return &http.Client{
		Transport: tr,
		Timeout:   cfg.Timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= cfg.MaxRedirects {
				return fmt.Errorf("stopped after %d redirects", len(via))
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return fmt.Errorf("%w: redirect to a %q URL", ErrBlockedAddress, req.URL.Scheme)
			}
			return p.checkHostLiteral(req.URL.Hostname())
		},
	}
}
