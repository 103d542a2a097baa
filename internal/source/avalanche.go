package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/ava-labs/avalanchego/api"
	"github.com/ava-labs/avalanchego/api/info"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/indexer"
	"github.com/ava-labs/avalanchego/utils/formatting"
	"github.com/ava-labs/avalanchego/utils/hashing"
	avajson "github.com/ava-labs/avalanchego/utils/json"
	"github.com/ava-labs/avalanchego/utils/rpc"
	"github.com/ava-labs/avalanchego/vms/avm"
	avmblock "github.com/ava-labs/avalanchego/vms/avm/block"
	"github.com/ava-labs/avalanchego/vms/avm/fxs"
	"github.com/ava-labs/avalanchego/vms/nftfx"
	"github.com/ava-labs/avalanchego/vms/platformvm"
	pblock "github.com/ava-labs/avalanchego/vms/platformvm/block"
	"github.com/ava-labs/avalanchego/vms/propertyfx"
	proposerblock "github.com/ava-labs/avalanchego/vms/proposervm/block"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"
	"github.com/gorilla/rpc/v2/json2"
)

// Endpoint paths of an avalanchego node.
const (
	PathInfo = "/ext/info"
	PathP    = "/ext/bc/P"
	PathX    = "/ext/bc/X"
	PathCRPC = "/ext/bc/C/rpc"
	PathAvax = "/ext/bc/C/avax"
)

// Avalanche reads an avalanchego node's info, platform, avm and avax APIs.
//
// It uses avalanchego's own clients (api/info, vms/platformvm, vms/avm) where
// they return what we need, and avalanchego's utils/rpc requester for the
// rest: the clients' block getters ask for "hexnc" (no checksum) and coreth's
// avax client cannot be built in this module, while the ingester wants the
// checksummed "hex" encoding verified.
//
// All calls are retried with the client's Retry policy. Note that utils/rpc
// sends with http.DefaultClient; per-attempt timeouts come from
// Retry.AttemptTimeout.
type Avalanche struct {
	base  string
	retry Retry

	info *info.Client
	p    *platformvm.Client
	x    *avm.Client
	xp   avmblock.Parser
}

// NewAvalanche returns a client for the node at baseURL, e.g.
// "http://127.0.0.1:9650".
func NewAvalanche(baseURL string, retry Retry) (*Avalanche, error) {
	base, err := checkBaseURL(baseURL)
	if err != nil {
		return nil, err
	}
	// The X-chain parser is only used to read block heights.
	xp, err := avmblock.NewParser([]fxs.Fx{&secp256k1fx.Fx{}, &nftfx.Fx{}, &propertyfx.Fx{}})
	if err != nil {
		return nil, fmt.Errorf("source: X-chain block parser: %w", err)
	}
	return &Avalanche{
		base:  base,
		retry: retry,
		info:  info.NewClient(base),
		p:     platformvm.NewClient(base),
		x:     avm.NewClient(base, "X"),
		xp:    xp,
	}, nil
}

func checkBaseURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("source: node URL %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("source: node URL %q: scheme must be http or https", raw)
	}
	if u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("source: node URL %q: want scheme://host[:port][/path] only", raw)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// BaseURL is the node's base URL, without trailing slash.
func (a *Avalanche) BaseURL() string { return a.base }

// NetworkID returns info.getNetworkID.
func (a *Avalanche) NetworkID(ctx context.Context) (uint32, error) {
	return RetryValue(ctx, a.retry, "info.getNetworkID", func(ctx context.Context) (uint32, error) {
		id, err := a.info.GetNetworkID(ctx)
		return id, fromAvalanchego(err)
	})
}

// BlockchainID resolves a chain alias ("P", "X", "C") with
// info.getBlockchainID.
func (a *Avalanche) BlockchainID(ctx context.Context, alias string) (ids.ID, error) {
	return RetryValue(ctx, a.retry, "info.getBlockchainID("+alias+")", func(ctx context.Context) (ids.ID, error) {
		id, err := a.info.GetBlockchainID(ctx, alias)
		return id, fromAvalanchego(err)
	})
}

// PHeight returns platform.getHeight (the last accepted P-chain height).
func (a *Avalanche) PHeight(ctx context.Context) (uint64, error) {
	return RetryValue(ctx, a.retry, "platform.getHeight", func(ctx context.Context) (uint64, error) {
		h, err := a.p.GetHeight(ctx)
		return h, fromAvalanchego(err)
	})
}

// XHeight returns avm.getHeight (the last accepted X-chain height).
func (a *Avalanche) XHeight(ctx context.Context) (uint64, error) {
	return RetryValue(ctx, a.retry, "avm.getHeight", func(ctx context.Context) (uint64, error) {
		h, err := a.x.GetHeight(ctx)
		return h, fromAvalanchego(err)
	})
}

// PBlockByHeight returns the codec bytes (checksum verified and removed) of
// the P-chain block at height h. Above the tip it fails with an *RPCError
// for which IsNotFound is true.
func (a *Avalanche) PBlockByHeight(ctx context.Context, h uint64) ([]byte, error) {
	return a.blockByHeight(ctx, PathP, "platform.getBlockByHeight", h, func(b []byte) (uint64, error) {
		blk, err := pblock.Parse(pblock.GenesisCodec, b)
		if err != nil {
			return 0, err
		}
		return blk.Height(), nil
	})
}

// XBlockByHeight is PBlockByHeight for the X-chain (avm.getBlockByHeight).
func (a *Avalanche) XBlockByHeight(ctx context.Context, h uint64) ([]byte, error) {
	return a.blockByHeight(ctx, PathX, "avm.getBlockByHeight", h, func(b []byte) (uint64, error) {
		blk, err := a.xp.ParseGenesisBlock(b) // the genesis codec only allows larger blocks
		if err != nil {
			return 0, err
		}
		return blk.Height(), nil
	})
}

func (a *Avalanche) blockByHeight(ctx context.Context, path, method string, h uint64, height func([]byte) (uint64, error)) ([]byte, error) {
	args := &api.GetBlockByHeightArgs{Height: avajson.Uint64(h), Encoding: formatting.Hex}
	return RetryValue(ctx, a.retry, fmt.Sprintf("%s(%d)", method, h), func(ctx context.Context) ([]byte, error) {
		var res api.FormattedBlock
		if err := a.send(ctx, path, method, args, &res); err != nil {
			return nil, err
		}
		b, err := decodeHex(res.Encoding, res.Block)
		if err != nil {
			return nil, err
		}
		got, err := height(b)
		if err != nil {
			// The checksum held, so these are the node's bytes: retrying
			// would get the same. The decoder will have to deal with them.
			return nil, Permanent(fmt.Errorf("parse block %d: %w", h, err))
		}
		if got != h {
			return nil, fmt.Errorf("%w: asked height %d, got a block of height %d", ErrInconsistent, h, got)
		}
		return b, nil
	})
}

// PTx returns the signed bytes of a P-chain tx (platform.getTx, hex),
// verifying they hash to txID. It also answers the genesis stakers' txs,
// which are in no block.
func (a *Avalanche) PTx(ctx context.Context, txID ids.ID) ([]byte, error) {
	args := &api.GetTxArgs{TxID: txID, Encoding: formatting.Hex}
	return RetryValue(ctx, a.retry, "platform.getTx("+txID.String()+")", func(ctx context.Context) ([]byte, error) {
		var res api.FormattedTx
		if err := a.send(ctx, PathP, "platform.getTx", args, &res); err != nil {
			return nil, err
		}
		return checkedTx(txID, res.Encoding, res.Tx)
	})
}

// AtomicTx returns the signed bytes of a C-chain atomic tx (avax.getAtomicTx,
// hex), verifying they hash to txID.
func (a *Avalanche) AtomicTx(ctx context.Context, txID ids.ID) ([]byte, error) {
	args := &api.GetTxArgs{TxID: txID, Encoding: formatting.Hex}
	return RetryValue(ctx, a.retry, "avax.getAtomicTx("+txID.String()+")", func(ctx context.Context) ([]byte, error) {
		var res api.FormattedTx
		if err := a.send(ctx, PathAvax, "avax.getAtomicTx", args, &res); err != nil {
			return nil, err
		}
		return checkedTx(txID, res.Encoding, res.Tx)
	})
}

func checkedTx(txID ids.ID, enc formatting.Encoding, s string) ([]byte, error) {
	b, err := decodeHex(enc, s)
	if err != nil {
		return nil, err
	}
	if got := ids.ID(hashing.ComputeHash256Array(b)); got != txID {
		return nil, fmt.Errorf("%w: asked tx %s, got tx %s", ErrInconsistent, txID, got)
	}
	return b, nil
}

// AssetDescription is avm.getAssetDescription's answer.
type AssetDescription struct {
	AssetID      ids.ID
	Name         string
	Symbol       string
	Denomination uint8
}

// AssetDescription describes an X-chain asset, by ID or alias ("AVAX").
func (a *Avalanche) AssetDescription(ctx context.Context, assetID string) (AssetDescription, error) {
	return RetryValue(ctx, a.retry, "avm.getAssetDescription("+assetID+")", func(ctx context.Context) (AssetDescription, error) {
		r, err := a.x.GetAssetDescription(ctx, assetID)
		if err != nil {
			return AssetDescription{}, fromAvalanchego(err)
		}
		if r.AssetID == ids.Empty {
			return AssetDescription{}, fmt.Errorf("%w: no assetID", ErrMalformed)
		}
		return AssetDescription{AssetID: r.AssetID, Name: r.Name, Symbol: r.Symbol, Denomination: uint8(r.Denomination)}, nil
	})
}

// Peer is one entry of info.peers.
type Peer struct {
	NodeID ids.NodeID
	// IP is the address the node sees the peer at; PublicIP the one the
	// peer claims (may be invalid when unknown).
	IP       netip.AddrPort
	PublicIP netip.AddrPort
	Version  string
}

// Peers returns the node's peers (info.peers).
func (a *Avalanche) Peers(ctx context.Context) ([]Peer, error) {
	return RetryValue(ctx, a.retry, "info.peers", func(ctx context.Context) ([]Peer, error) {
		ps, err := a.info.Peers(ctx, nil)
		if err != nil {
			return nil, fromAvalanchego(err)
		}
		out := make([]Peer, 0, len(ps))
		for _, p := range ps {
			out = append(out, Peer{NodeID: p.ID, IP: p.IP, PublicIP: p.PublicIP, Version: p.Version})
		}
		return out, nil
	})
}

// Call sends one JSON-RPC call to endpointPath (e.g. PathP) and decodes the
// result into result (which may be nil, or a *json.RawMessage for the raw
// bytes).
func (a *Avalanche) Call(ctx context.Context, endpointPath, method string, params, result any) error {
	if !strings.HasPrefix(endpointPath, "/") || strings.ContainsAny(endpointPath, "?#") {
		return fmt.Errorf("source: endpoint path %q: want /ext/...", endpointPath)
	}
	if params == nil {
		params = struct{}{} // avalanche APIs want an object
	}
	return a.retry.Do(ctx, method, func(ctx context.Context) error {
		var raw json.RawMessage
		if err := a.send(ctx, endpointPath, method, params, &raw); err != nil {
			return err
		}
		if result == nil {
			return nil
		}
		if err := json.Unmarshal(raw, result); err != nil {
			return Permanent(fmt.Errorf("decode result into %T: %w", result, err))
		}
		return nil
	})
}

func (a *Avalanche) send(ctx context.Context, path, method string, params, reply any) error {
	return fromAvalanchego(rpc.NewEndpointRequester(a.base+path).SendRequest(ctx, method, params, reply))
}

func decodeHex(enc formatting.Encoding, s string) ([]byte, error) {
	if enc != formatting.Hex {
		return nil, fmt.Errorf("%w: asked encoding hex, got %s", ErrMalformed, enc)
	}
	if s == "" {
		return nil, fmt.Errorf("%w: empty hex", ErrMalformed) // formatting.Decode would return nil, nil
	}
	b, err := formatting.Decode(formatting.Hex, s)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return b, nil
}

// statusRE matches how utils/rpc reports a non-2xx HTTP status: as text only.
var statusRE = regexp.MustCompile(`received status code: (\d{3})\b`)

// fromAvalanchego maps errors of avalanchego's utils/rpc to ours: a
// *json2.Error is the node's JSON-RPC error, a "received status code" error
// an HTTP status, a JSON decoding failure a malformed answer.
func fromAvalanchego(err error) error {
	if err == nil {
		return nil
	}
	var je *json2.Error
	if errors.As(err, &je) {
		re := &RPCError{Code: int(je.Code), Message: je.Message}
		if je.Data != nil {
			if b, mErr := json.Marshal(je.Data); mErr == nil {
				re.Data = b
			}
		}
		return re
	}
	if m := statusRE.FindStringSubmatch(err.Error()); m != nil {
		code, _ := strconv.Atoi(m[1])
		return &HTTPError{StatusCode: code}
	}
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
	)
	if errors.Is(err, json2.ErrNullResult) || errors.As(err, &syn) || errors.As(err, &typ) ||
		strings.Contains(err.Error(), "failed to decode client response") {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return err
}

// IndexedContainer is one accepted block as the node's index API serves it
// (avalanchego --index-enabled): for P and X, the proposervm wrapper around
// the chain's block (or, before the proposervm fork, the block itself).
type IndexedContainer struct {
	Index uint64
	ID    ids.ID
	Bytes []byte
	// Timestamp is when the node accepted the container (unix s).
	Timestamp int64
}

// The index API's X-chain DAG indexes, named as chains of IndexLastAccepted
// and IndexContainers: vertices and txs accepted before the linearization.
const (
	XVertices = "X-vtx"
	XDAGTxs   = "X-tx"
)

// blockIndex is the index API of chain's blocks (P or X, or XVertices and
// XDAGTxs) and the ID
// avalanchego gives a block of that chain from before the proposervm fork.
// The C-chain's index is not read: its pre-fork blocks would need coreth's
// parser, and its proposer details are not served.
func (a *Avalanche) blockIndex(chain string) (string, func([]byte) (ids.ID, error), error) {
	switch chain {
	case "P":
		return "/ext/index/P/block", func(b []byte) (ids.ID, error) {
			blk, err := pblock.Parse(pblock.GenesisCodec, b)
			if err != nil {
				return ids.Empty, err
			}
			return blk.ID(), nil
		}, nil
	case "X":
		return "/ext/index/X/block", func(b []byte) (ids.ID, error) {
			blk, err := a.xp.ParseGenesisBlock(b)
			if err != nil {
				return ids.Empty, err
			}
			return blk.ID(), nil
		}, nil
	case XVertices, XDAGTxs:
		// The X-chain's DAG before its linearization: a vertex's and a
		// signed tx's ID are the sha256 of their bytes.
		return "/ext/index/X/" + strings.TrimPrefix(chain, "X-"), func(b []byte) (ids.ID, error) {
			return hashing.ComputeHash256Array(b), nil
		}, nil
	}
	return "", nil, fmt.Errorf("source: no block index for chain %q", chain)
}

// IndexLastAccepted returns the last block the node's index holds for chain
// (P or X). A node without the index API answers HTTP 404; an empty index
// answers a JSON-RPC error.
func (a *Avalanche) IndexLastAccepted(ctx context.Context, chain string) (IndexedContainer, error) {
	path, preFork, err := a.blockIndex(chain)
	if err != nil {
		return IndexedContainer{}, err
	}
	args := &indexer.GetLastAcceptedArgs{Encoding: formatting.Hex}
	return RetryValue(ctx, a.retry, "index.getLastAccepted("+chain+")", func(ctx context.Context) (IndexedContainer, error) {
		var res indexer.FormattedContainer
		if err := a.send(ctx, path, "index.getLastAccepted", args, &res); err != nil {
			return IndexedContainer{}, err
		}
		return indexedContainer(res, preFork)
	})
}

// IndexContainers returns up to n (at most indexer.MaxFetchedByRange) blocks
// of chain's index from position start on, fewer at the end of the index.
func (a *Avalanche) IndexContainers(ctx context.Context, chain string, start uint64, n int) ([]IndexedContainer, error) {
	path, preFork, err := a.blockIndex(chain)
	if err != nil {
		return nil, err
	}
	if n < 1 || n > indexer.MaxFetchedByRange {
		return nil, fmt.Errorf("source: %d containers: want 1..%d", n, indexer.MaxFetchedByRange)
	}
	args := &indexer.GetContainerRangeArgs{StartIndex: avajson.Uint64(start), NumToFetch: avajson.Uint64(n), Encoding: formatting.Hex}
	name := fmt.Sprintf("index.getContainerRange(%s, %d, %d)", chain, start, n)
	return RetryValue(ctx, a.retry, name, func(ctx context.Context) ([]IndexedContainer, error) {
		var res indexer.GetContainerRangeResponse
		if err := a.send(ctx, path, "index.getContainerRange", args, &res); err != nil {
			return nil, err
		}
		if len(res.Containers) > n {
			return nil, fmt.Errorf("%w: %d containers, asked %d", ErrMalformed, len(res.Containers), n)
		}
		out := make([]IndexedContainer, len(res.Containers))
		for i, fc := range res.Containers {
			c, err := indexedContainer(fc, preFork)
			if err != nil {
				return nil, err
			}
			if c.Index != start+uint64(i) {
				return nil, fmt.Errorf("%w: container %d of the range has index %d, want %d", ErrInconsistent, i, c.Index, start+uint64(i))
			}
			out[i] = c
		}
		return out, nil
	})
}

// indexedContainer decodes fc and checks that its bytes are the block the
// node names, identified as avalanchego identifies it: parsed by the
// proposervm's block parser (whose ID leaves out a signed block's signature),
// or, for a block from before the proposervm fork, by the chain's own parser.
func indexedContainer(fc indexer.FormattedContainer, preFork func([]byte) (ids.ID, error)) (IndexedContainer, error) {
	b, err := decodeHex(fc.Encoding, fc.Bytes)
	if err != nil {
		return IndexedContainer{}, err
	}
	c := IndexedContainer{Index: uint64(fc.Index), ID: fc.ID, Bytes: b, Timestamp: fc.Timestamp.Unix()}
	var parsed []string
	if blk, err := proposerblock.ParseWithoutVerification(b); err == nil {
		if blk.ID() == fc.ID {
			return c, nil
		}
		parsed = append(parsed, "a proposervm block "+blk.ID().String())
	}
	if id, err := preFork(b); err == nil {
		if id == fc.ID {
			return c, nil
		}
		parsed = append(parsed, "a chain block "+id.String())
	}
	if len(parsed) == 0 {
		return IndexedContainer{}, fmt.Errorf("%w: container %d (%s): bytes are neither a proposervm block nor a chain block", ErrInconsistent, fc.Index, fc.ID)
	}
	return IndexedContainer{}, fmt.Errorf("%w: container %d: node says %s, bytes are %s", ErrInconsistent, fc.Index, fc.ID, strings.Join(parsed, " or "))
}
