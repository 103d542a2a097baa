package livenet

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ava-labs/libevm/common/hexutil"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/formatting"
	"github.com/ava-labs/avalanchego/vms/platformvm/block"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"
)

// txLocation is where a tx was accepted.
type txLocation struct {
	height  uint64
	blockID string
}

// ResolveHeights fills in the heights of P, X and atomic C txs (EVM txs get
// theirs from receipts), adds a record for every RewardValidatorTx the
// P-chain issued (linking it to the workload's stakers and whether the
// option block after it committed or aborted) and records the chains' tips.
func ResolveHeights(ctx context.Context, n *Network, res *WorkloadResult) error {
	uri := n.URI()
	pLoc, rewards, err := scanP(ctx, uri)
	if err != nil {
		return fmt.Errorf("scanning P: %w", err)
	}
	xLoc, err := scanX(ctx, uri)
	if err != nil {
		return fmt.Errorf("scanning X: %w", err)
	}
	// Atomic C txs: the node says where they went.
	atomicLoc := map[string]txLocation{}
	for _, r := range n.Log.Records() {
		if r.Chain != ChainC || !r.Atomic || r.TxID == "" {
			continue
		}
		var st struct {
			Status      string `json:"status"`
			BlockHeight string `json:"blockHeight"`
		}
		if err := rpcCall(ctx, uri+"/ext/bc/C/avax", "avax.getAtomicTxStatus", map[string]any{"txID": r.TxID}, &st); err != nil {
			return err
		}
		h, _ := strconv.ParseUint(st.BlockHeight, 10, 64)
		var blk struct {
			Hash string `json:"hash"`
		}
		if err := rpcCall(ctx, uri+"/ext/bc/C/rpc", "eth_getBlockByNumber", []any{hexutil.EncodeUint64(h), false}, &blk); err != nil {
			return err
		}
		atomicLoc[r.TxID] = txLocation{height: h, blockID: blk.Hash}
	}
	n.Log.update(func(recs []*TxRecord) {
		for _, r := range recs {
			var loc txLocation
			var ok bool
			switch {
			case r.Chain == ChainP:
				loc, ok = pLoc[r.TxID]
			case r.Chain == ChainX:
				loc, ok = xLoc[r.TxID]
			case r.Chain == ChainC && r.Atomic:
				loc, ok = atomicLoc[r.TxID]
			}
			if ok {
				r.Height, r.BlockID = loc.height, loc.blockID
			}
		}
	})
	stakers := map[ids.ID]*Staker{}
	if res != nil {
		for _, s := range res.Stakers {
			stakers[s.TxID] = s
		}
	}
	known := map[string]bool{}
	for _, r := range n.Log.Records() {
		known[r.TxID] = true
	}
	for _, rw := range rewards {
		if known[rw.txID.String()] {
			continue
		}
		extra := map[string]any{"stakerTxID": rw.stakerTxID.String(), "optionBlock": rw.option, "rewarded": rw.option == "BanffCommitBlock"}
		if s, ok := stakers[rw.stakerTxID]; ok {
			s.RewardTx, s.RewardsAt = rw.txID, rw.height
			extra["staker"] = s.Name
		}
		n.Log.Add(&TxRecord{Step: "reward", Chain: ChainP, BlockchainID: n.PChainID.String(), Type: "RewardValidatorTx", TxID: rw.txID.String(),
			Purpose: "issued by the P-chain when a staker's period ended", Height: rw.height, BlockID: rw.blockID, Accepted: true, IssuedByChain: true, Extra: extra,
			Issued: rw.time, Time: rw.time})
	}
	if res != nil {
		tips, err := n.Tips(ctx)
		if err != nil {
			return err
		}
		res.Tips = tips
	}
	return nil
}

// Tips asks the first validator for the last accepted height of P, X and C,
// and the L1 node for the L1's.
func (n *Network) Tips(ctx context.Context) (map[string]uint64, error) {
	uri := n.URI()
	tips := map[string]uint64{}
	for chain, c := range map[string]struct{ url, method string }{
		ChainP: {uri + "/ext/bc/P", "platform.getHeight"},
		ChainX: {uri + "/ext/bc/X", "avm.getHeight"},
	} {
		var h struct {
			Height string `json:"height"`
		}
		if err := rpcCall(ctx, c.url, c.method, map[string]any{}, &h); err != nil {
			return nil, err
		}
		v, err := strconv.ParseUint(h.Height, 10, 64)
		if err != nil {
			return nil, err
		}
		tips[chain] = v
	}
	for chain, url := range map[string]string{ChainC: n.CRPCURL(), ChainL1: n.L1RPCURL()} {
		var h hexutil.Uint64
		if err := rpcCall(ctx, url, "eth_blockNumber", []any{}, &h); err != nil {
			return nil, err
		}
		tips[chain] = uint64(h)
	}
	return tips, nil
}

type rewardTx struct {
	txID, stakerTxID ids.ID
	height           uint64
	blockID          string
	time             time.Time // the proposal block's timestamp
	option           string    // Go type of the block after the proposal block
}

// scanP reads every P-chain block (hex, parsed with the platformvm codec).
func scanP(ctx context.Context, uri string) (map[string]txLocation, []rewardTx, error) {
	var tip struct {
		Height string `json:"height"`
	}
	if err := rpcCall(ctx, uri+"/ext/bc/P", "platform.getHeight", map[string]any{}, &tip); err != nil {
		return nil, nil, err
	}
	top, err := strconv.ParseUint(tip.Height, 10, 64)
	if err != nil {
		return nil, nil, err
	}
	locs := map[string]txLocation{}
	var rewards []rewardTx
	types := map[uint64]string{}
	for h := uint64(1); h <= top; h++ {
		var resp struct {
			Block string `json:"block"`
		}
		if err := rpcCall(ctx, uri+"/ext/bc/P", "platform.getBlockByHeight", map[string]any{"height": strconv.FormatUint(h, 10), "encoding": "hex"}, &resp); err != nil {
			return nil, nil, err
		}
		raw, err := formatting.Decode(formatting.Hex, resp.Block)
		if err != nil {
			return nil, nil, err
		}
		blk, err := block.Parse(block.Codec, raw)
		if err != nil {
			return nil, nil, fmt.Errorf("P block %d: %w", h, err)
		}
		types[h] = strings.TrimPrefix(fmt.Sprintf("%T", blk), "*block.")
		for _, tx := range blk.Txs() {
			locs[tx.ID().String()] = txLocation{height: h, blockID: blk.ID().String()}
			if rv, ok := tx.Unsigned.(*txs.RewardValidatorTx); ok {
				rw := rewardTx{txID: tx.ID(), stakerTxID: rv.TxID, height: h, blockID: blk.ID().String()}
				if b, ok := blk.(interface{ Timestamp() time.Time }); ok {
					rw.time = b.Timestamp().UTC()
				}
				rewards = append(rewards, rw)
			}
		}
	}
	for i := range rewards {
		rewards[i].option = types[rewards[i].height+1]
	}
	return locs, rewards, nil
}

// scanX reads every X-chain block (JSON).
func scanX(ctx context.Context, uri string) (map[string]txLocation, error) {
	var tip struct {
		Height string `json:"height"`
	}
	if err := rpcCall(ctx, uri+"/ext/bc/X", "avm.getHeight", map[string]any{}, &tip); err != nil {
		return nil, err
	}
	top, err := strconv.ParseUint(tip.Height, 10, 64)
	if err != nil {
		return nil, err
	}
	locs := map[string]txLocation{}
	for h := uint64(1); h <= top; h++ {
		var resp struct {
			Block struct {
				ID  string `json:"id"`
				Txs []struct {
					ID string `json:"id"`
				} `json:"txs"`
			} `json:"block"`
		}
		if err := rpcCall(ctx, uri+"/ext/bc/X", "avm.getBlockByHeight", map[string]any{"height": strconv.FormatUint(h, 10), "encoding": "json"}, &resp); err != nil {
			return nil, err
		}
		for _, tx := range resp.Block.Txs {
			locs[tx.ID] = txLocation{height: h, blockID: resp.Block.ID}
		}
	}
	return locs, nil
}
