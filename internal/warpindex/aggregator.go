package warpindex

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/ava-labs/avalanchego/staking"

	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/warp"
)

// AggregatorConfig is what serving signature aggregation over the index
// needs.
type AggregatorConfig struct {
	DB *store.DB
	// NetworkID is the network served (the chains table's network_id).
	NetworkID uint32
	// Node is the configured avalanchego node, optional: it is the first
	// peer (bootstrapper) and its info.peers are asked for validator IPs.
	// Without it the aggregator learns IPs only from the peers in
	// Warp.Bootstrappers.
	Node NodeAPI
	// TLSKeyFile and TLSCertFile are a staking key pair (PEM, as
	// avalanchego's staker.key / staker.crt) that give the aggregator a
	// stable node id; both empty: a new node id at every start.
	TLSKeyFile, TLSCertFile string
	// Warp tunes the aggregator (timeouts, cache size, extra bootstrappers,
	// loggers, metrics registerer). NetworkID, ValidatorSets, L1Txs, Peers
	// and TLSCert are filled from the fields above.
	Warp warp.Config
	Log  *slog.Logger
}

// selfTimeout bounds asking the node for its own id and address at start: a
// node that answers does so in milliseconds, and one that does not must not
// hold serving back.
const selfTimeout = 2 * time.Second

// NewAggregator starts a warp.Aggregator over the index of c.DB. The caller
// closes it (Aggregator.Close) at shutdown. An unreachable node is not fatal:
// it is logged, and the aggregator asks it for peers again at every refresh.
func NewAggregator(ctx context.Context, c AggregatorConfig) (*warp.Aggregator, error) {
	if c.DB == nil {
		return nil, errors.New("warpindex: a database is required")
	}
	if c.NetworkID == 0 {
		return nil, errors.New("warpindex: the network id is required")
	}
	log := c.Log
	if log == nil {
		log = slog.Default()
	}
	cfg := c.Warp
	idx := New(c.DB)
	cfg.NetworkID, cfg.ValidatorSets, cfg.L1Txs = c.NetworkID, idx, idx
	if cfg.Logger == nil {
		cfg.Logger = log
	}
	switch {
	case c.TLSKeyFile != "" && c.TLSCertFile != "":
		cert, err := staking.LoadTLSCertFromFiles(c.TLSKeyFile, c.TLSCertFile)
		if err != nil {
			return nil, fmt.Errorf("warpindex: staking key pair %s, %s: %w", c.TLSKeyFile, c.TLSCertFile, err)
		}
		cfg.TLSCert = cert
	case c.TLSKeyFile != "" || c.TLSCertFile != "":
		return nil, errors.New("warpindex: give both the staking key and the staking certificate, or neither")
	}
	if c.Node != nil {
		peers := &NodePeers{Node: c.Node, Log: log}
		cfg.Peers = peers
		sctx, cancel := context.WithTimeout(ctx, selfTimeout)
		self, err := peers.Self(sctx)
		cancel()
		if err != nil {
			log.Warn("warpindex: the configured node is not a bootstrap peer", "error", err)
		} else {
			cfg.Bootstrappers = append(slices.Clip(cfg.Bootstrappers), self)
		}
	}
	a, err := warp.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("warpindex: %w", err)
	}
	return a, nil
}
