package enrich

import "net/netip"

// CheckAddress applies the NFT fetcher's address policy (SSRF protection) to
// ip, for other outbound requests to user-chosen URLs (webhook deliveries):
// nil when ip may be connected to, else an ErrBlockedAddress naming why.
func CheckAddress(ip netip.Addr, allowLoopback, allowPrivate bool) error {
	return addrPolicy{allowLoopback: allowLoopback, allowPrivate: allowPrivate}.check(ip)
}
