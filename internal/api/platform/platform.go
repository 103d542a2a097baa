// Package platform serves avalanchego's platform-chain JSON-RPC API
// (POST /ext/bc/P) from Permafrost's own index, so a deployment answers
// platform.* questions while its node is down, byte-compatible with
// avalanchego v1.14.2.
//
// The service is built the way the node builds it: a struct whose methods
// have gorilla/rpc's signature, registered as "platform" on a gorilla
// rpc.Server with avalanchego's JSON codec (utils/json.NewCodec), answering
// with avalanchego's own argument and reply types. Envelope, error codes and
// messages (-32000 for method errors, unknown methods and undecodable
// arguments, -32700 for parse errors, -32600 for a wrong "jsonrpc"), field
// names, string-encoded numbers and omitempty rules are therefore the node's
// by construction. The methods served are those of section 4.6 of the spec:
// getBalance, getBlock, getBlockByHeight, getBlockchains,
// getBlockchainStatus, getCurrentSupply and getCurrentValidators; every
// other method answers the node's own "rpc: can't find method" error, or,
// with Deps.ProxyUnknown, is forwarded to the upstream node.
//
// Around gorilla, the handler adds what the node lacks: JSON-RPC batches
// (each element is dispatched like a single call, so a batch of one answers
// like the call itself), a request-size limit and a batch-size limit with
// JSON-RPC error answers, and recovery from panics. Notifications (no "id",
// or "id": null) get an empty HTTP 200, as from the node.
//
// Chain state (balances, validator sets, supply, blockchains) is answered
// for the index's P-chain tip. Every read is a function of a P height, using
// the history the indexer keeps (UTXO creation/spend heights, staker
// lifetimes, L1 validator history, per-height supply), so the same code
// answers as of any indexed height and a request sees one consistent height
// even while ingestion moves on. When the tip is a proposal block its state
// is its parent's, as on the node (a proposal's changes land with its option
// block).
//
// Node-local facts (rule 2 of the issue) come from the configured upstream
// node, when one is configured and answers within Deps.UpstreamTimeout:
//
//   - uptime and connected of primary-network validators in
//     getCurrentValidators are copied from the upstream node's own
//     platform.getCurrentValidators answer (polled at most every few
//     seconds); without an upstream, or when it does not answer, or for a
//     validator it does not list, both fields are omitted.
//   - getBlockchainStatus answers from the upstream node's point of view:
//     its node ID (info.getNodeID) decides Validating versus Syncing for the
//     chains it runs (P, X and C always; a subnet chain when its
//     info.isBootstrapped answers), by the validator set in the index. With no
//     upstream, Permafrost answers as a node that validates nothing: Syncing
//     for X and C (P is always Syncing, as on the node). Created and Unknown
//     come from the index alone. Preferred (a creation tx in a processing
//     block) cannot occur at the indexed tip, since the index holds accepted
//     blocks only; as of an earlier height h, a chain created at h+1 is
//     Preferred (that block was the node's preference when h was its last
//     accepted block).
//   - getBalance compares lock times with the wall clock (Deps.Now), like
//     the node.
//
// Orderings follow the node's where they are deterministic: validators in
// the current staker order (end time, priority, tx ID), L1 validators by
// node ID, getBalance's utxoIDs per address newest commit first (the node's
// linked-list index), getBlockchains newest subnet and chain first (as a
// node lists them after loading its state). Where the node's order is Go
// map order (UTXOs written by one commit, validators of a nodeIDs filter),
// Permafrost picks a fixed order (UTXO ID bytes; the unfiltered order).
//
// Mounting: New returns one http.Handler; register it, for all HTTP
// methods, on every path of Paths (Mount does that for an api.Mux):
//
//	h, err := platform.New(platform.Deps{DB: db, Genesis: g, Upstream: nodeURL, Log: log})
//	platform.Mount(mux, h) // /ext/bc/P, /ext/P, /ext/bc/platform, /ext/platform, /ext/bc/<P-chain ID>
package platform

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ava-labs/avalanchego/utils/constants"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/genesis"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// Defaults of the optional Deps fields.
const (
	DefaultMaxBodyBytes    = 1 << 20
	DefaultMaxBatch        = 100
	DefaultUpstreamTimeout = 2 * time.Second
	DefaultCallTimeout     = 30 * time.Second
	// maxBatchResponseBytes bounds what one batch answer may hold; later
	// elements are answered with an error.
	maxBatchResponseBytes = 16 << 20
)

// Deps are what the handler needs.
type Deps struct {
	DB        *store.DB
	NetworkID uint32           // 0: the genesis' network ID
	Genesis   *genesis.Genesis // required
	// Upstream is an optional avalanchego base URL (e.g. http://127.0.0.1:9650)
	// for node-local facts (see the package comment).
	Upstream string
	Log      *slog.Logger

	// ProxyUnknown forwards methods this service does not implement to
	// Upstream's /ext/bc/P instead of answering "can't find method".
	ProxyUnknown bool
	// UpstreamTimeout bounds each upstream call (default 2 s).
	UpstreamTimeout time.Duration
	// CallTimeout bounds one method call (default 30 s).
	CallTimeout time.Duration
	// MaxBodyBytes bounds a request body (default 1 MiB).
	MaxBodyBytes int64
	// MaxBatch bounds the number of calls in a batch (default 100).
	MaxBatch int
	// Now is the wall clock getBalance compares lock times with (default time.Now).
	Now func() time.Time
}

// New returns the handler of the platform-chain API. Mount it on every path
// the node serves the P-chain API under (see Paths).
func New(deps Deps) (http.Handler, error) {
	h, _, err := newHandler(deps)
	return h, err
}

func newHandler(deps Deps) (*handler, *Service, error) {
	if deps.DB == nil {
		return nil, nil, errors.New("platform: DB is required")
	}
	if deps.Genesis == nil || deps.Genesis.P == nil {
		return nil, nil, errors.New("platform: genesis is required")
	}
	if deps.NetworkID == 0 {
		deps.NetworkID = deps.Genesis.NetworkID
	}
	if deps.NetworkID != deps.Genesis.NetworkID {
		return nil, nil, fmt.Errorf("platform: network %d but genesis of network %d", deps.NetworkID, deps.Genesis.NetworkID)
	}
	if deps.Log == nil {
		deps.Log = slog.New(slog.DiscardHandler)
	}
	if deps.UpstreamTimeout <= 0 {
		deps.UpstreamTimeout = DefaultUpstreamTimeout
	}
	if deps.CallTimeout <= 0 {
		deps.CallTimeout = DefaultCallTimeout
	}
	if deps.MaxBodyBytes <= 0 {
		deps.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if deps.MaxBatch <= 0 {
		deps.MaxBatch = DefaultMaxBatch
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	var up *upstream
	if deps.Upstream != "" {
		base, err := checkUpstream(deps.Upstream)
		if err != nil {
			return nil, nil, err
		}
		up = newUpstream(base, deps.UpstreamTimeout, deps.Log)
	}
	if deps.ProxyUnknown && up == nil {
		return nil, nil, errors.New("platform: ProxyUnknown needs an Upstream node")
	}
	svc, err := newService(deps, up)
	if err != nil {
		return nil, nil, err
	}
	h, err := newEnvelope(deps, svc, up)
	if err != nil {
		return nil, nil, err
	}
	return h, svc, nil
}

func checkUpstream(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "", fmt.Errorf("platform: upstream URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("platform: upstream URL %q: want http(s)://host[:port]", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("platform: upstream URL %q: no query or fragment allowed", raw)
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}

// Paths are the URL paths avalanchego serves the P-chain API under (its
// API aliases): /ext/bc/P, /ext/P (used by avalanchego's own platformvm
// client), /ext/bc/platform, /ext/platform and /ext/bc/<P-chain ID>.
func Paths() []string {
	return []string{
		"/ext/bc/P",
		"/ext/P",
		"/ext/bc/platform",
		"/ext/platform",
		"/ext/bc/" + constants.PlatformChainID.String(),
	}
}

// Router is where Mount registers the handler (api.Mux fits).
type Router interface {
	HandleHTTP(pattern string, h http.Handler)
}

// CallWeight is what one JSON-RPC call costs, in compute units, out of the
// caller's rate-limit budget (a batch costs it per call): the data
// service's Small class.
const CallWeight = api.Small

// meteredRouter is a router with API keys and rate limits (api.Mux).
type meteredRouter interface {
	HandleMetered(pattern string, opts api.RouteOpts, h http.Handler)
}

// Mount registers h on every path of Paths, for all methods: like the node,
// the handler itself answers a non-POST request with 405 and gorilla's
// message. On an api.Mux the calls are metered (CallWeight per call) with
// the data service's keys, budgets and rate-limit headers.
func Mount(r Router, h http.Handler) {
	mr, metered := r.(meteredRouter)
	for _, p := range Paths() {
		if metered {
			mr.HandleMetered(p, api.RouteOpts{Weight: CallWeight}, h)
			continue
		}
		r.HandleHTTP(p, h)
	}
}
