package enrich

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	"github.com/permafrost-dev/permafrost/internal/ssrf"
)

// ErrBlockedAddress marks a fetch refused by the address policy (SSRF
// protection): the URI, a redirect, or a name's resolution led to an
// address the operator did not allow.
var ErrBlockedAddress = ssrf.ErrBlocked

// addrPolicy decides which addresses metadata fetches may connect to.
// Token URIs are attacker-chosen: by default only public unicast addresses
// are allowed.
type addrPolicy struct {
	allowLoopback bool
	allowPrivate  bool
}

// check returns nil when ip may be connected to (internal/ssrf's policy).
func (p addrPolicy) check(ip netip.Addr) error {
	return ssrf.Check(ip, p.allowLoopback, p.allowPrivate)
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
