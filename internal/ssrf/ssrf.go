// Package ssrf is the address policy of outbound requests to user-chosen
// URLs (NFT metadata fetches in internal/enrich, webhook deliveries in
// internal/webhooks): which resolved addresses may be connected to.
package ssrf

import (
	"errors"
	"fmt"
	"net/netip"
)

// ErrBlocked marks an address the policy refuses.
var ErrBlocked = errors.New("address not allowed")

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

// Check returns nil when ip may be connected to: public unicast addresses,
// loopback with allowLoopback, private, shared, link-local and cloud
// metadata-service addresses with allowPrivate.
func Check(ip netip.Addr, allowLoopback, allowPrivate bool) error {
	ip = ip.Unmap()
	if !ip.IsValid() {
		return fmt.Errorf("%w: invalid address", ErrBlocked)
	}
	// IPv6 forms that embed an IPv4 destination are judged by it.
	if ip.Is6() {
		b := ip.As16()
		switch {
		case nat64.Contains(ip):
			if err := Check(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), allowLoopback, allowPrivate); err != nil {
				return err
			}
		case sixTo4.Contains(ip):
			if err := Check(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), allowLoopback, allowPrivate); err != nil {
				return err
			}
		}
	}
	switch {
	case ip.IsUnspecified() || ip.IsMulticast() || ip.IsInterfaceLocalMulticast():
		return fmt.Errorf("%w: %s is not a unicast destination", ErrBlocked, ip)
	case inAny(ip, neverPrefixes) || (ipv4Compatible.Contains(ip) && !ip.IsLoopback()):
		return fmt.Errorf("%w: %s is a reserved address", ErrBlocked, ip)
	case ip.IsLoopback():
		if !allowLoopback {
			return fmt.Errorf("%w: %s is a loopback address", ErrBlocked, ip)
		}
	case metadataAddrs[ip]:
		if !allowPrivate {
			return fmt.Errorf("%w: %s is a cloud metadata-service address", ErrBlocked, ip)
		}
	case ip.IsLinkLocalUnicast():
		if !allowPrivate {
			return fmt.Errorf("%w: %s is a link-local address", ErrBlocked, ip)
		}
	case ip.IsPrivate() || inAny(ip, privatePrefixes):
		if !allowPrivate {
			return fmt.Errorf("%w: %s is a private address", ErrBlocked, ip)
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
