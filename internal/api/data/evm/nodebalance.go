package evm

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/big"
	"sync"

	"github.com/ava-labs/libevm/common"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// Native balances the index cannot vouch for. Once a block indexed without
// call traces ran contract code while contracts may hold value, value may
// have moved inside that code to anyone (internal/decode/evm/trace.go
// records the block: evm_untrusted_balances, address x''). At and after it
// the balance is the node's eth_getBalance at the block asked (an archive
// node answers any height), cached per chain, block and address; without a
// node, or when the node cannot answer, the response is a 503 saying the
// figure is unavailable. Never the computed figure, which may be wrong.

// BalanceNode reads a native balance from a chain's node (eth_getBalance),
// and an ERC-20 balance (balanceOf by eth_call); *source.EVM is one.
type BalanceNode interface {
	Balance(ctx context.Context, addr common.Address, block uint64) (*big.Int, error)
	TokenBalance(ctx context.Context, token, holder common.Address, block uint64) (*big.Int, error)
}

// BalanceNodes finds a chain's node (nil: none).
type BalanceNodes interface {
	BalanceNode(chain api.ChainRef) BalanceNode
}

// BalanceNodeMap is BalanceNodes by chain key.
type BalanceNodeMap map[string]BalanceNode

// BalanceNode returns the node of chain's key.
func (m BalanceNodeMap) BalanceNode(chain api.ChainRef) BalanceNode { return m[chain.Key] }

// maxNodeBalances bounds the cache of node balances (emptied when full).
const maxNodeBalances = 1 << 16

type nodeBalanceKey struct {
	chain string
	block int64
	addr  common.Address
	token common.Address // zero: the native balance
}

// nodeBalances caches the node's answers: a balance at a past block never
// changes.
type nodeBalances struct {
	mu sync.Mutex
	m  map[nodeBalanceKey]string
}

func (c *nodeBalances) get(k nodeBalanceKey) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok
}

func (c *nodeBalances) put(k nodeBalanceKey, v string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxNodeBalances {
		c.m = make(map[nodeBalanceKey]string)
	}
	c.m[k] = v
}

// untrustedSince is the block from which the chain's computed balances may
// be wrong (ok false: they can be trusted at every block).
func (h *handlers) untrustedSince(ctx context.Context, q *chainReq) (int64, bool, error) {
	var since int64
	err := h.d.DB.QueryRowContext(ctx, `SELECT since_block FROM evm_untrusted_balances WHERE chain_key = $1 AND address = $2`,
		q.chain.Key, []byte{}).Scan(&since)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("balance trust of chain %s: %w", q.chain.Key, err)
	}
	return since, true, nil
}

// nodeBalance is address's balance after block n as the node says.
func (h *handlers) nodeBalance(ctx context.Context, q *chainReq, n int64) (string, error) {
	k := nodeBalanceKey{chain: q.chain.Key, block: n, addr: common.HexToAddress(q.addr)}
	if v, ok := h.nodeBals.get(k); ok {
		return v, nil
	}
	why := fmt.Sprintf("the native balance of %s at block %d is unavailable: chain %s was indexed without call traces "+
		"while contracts held value, so the index's figure may miss value moved inside contract calls", q.addr, n, q.chain.EVMChainID)
	var node BalanceNode
	if h.d.BalanceNodes != nil {
		node = h.d.BalanceNodes.BalanceNode(q.chain)
	}
	if node == nil {
		return "", api.Unavailable(why + "; no node is configured to ask")
	}
	v, err := node.Balance(ctx, k.addr, uint64(n))
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		h.d.Log.Warn("eth_getBalance failed", "chain", q.chain.Key, "address", q.addr, "block", n, "err", err)
		return "", api.Unavailable(why + "; the node could not answer eth_getBalance at that block (an archive node can); try again later")
	}
	if v == nil || v.Sign() < 0 {
		return "", api.Unavailable(why + "; the node gave no balance")
	}
	s := v.String()
	h.nodeBals.put(k, s)
	return s, nil
}

// untrustedTokensAt lists the chain's ERC-20 tokens whose computed balances
// may be wrong at block n (internal/decode/evm/wrapped.go): 0x-lowercase.
func (h *handlers) untrustedTokensAt(ctx context.Context, q *chainReq, n int64) (map[string]bool, error) {
	rows, err := h.d.DB.QueryContext(ctx, `SELECT token FROM evm_untrusted_tokens WHERE chain_key = $1 AND since_block <= $2`,
		q.chain.Key, n)
	if err != nil {
		return nil, fmt.Errorf("token balance trust of chain %s: %w", q.chain.Key, err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var a string
		if err := rows.Scan(store.ScanHex(&a)); err != nil {
			return nil, fmt.Errorf("token balance trust of chain %s: %w", q.chain.Key, err)
		}
		out[a] = true
	}
	return out, rows.Err()
}

// nodeTokenBalance is address's balance of token after block n as the
// token's balanceOf at the node says.
func (h *handlers) nodeTokenBalance(ctx context.Context, q *chainReq, token string, n int64) (string, error) {
	k := nodeBalanceKey{chain: q.chain.Key, block: n, addr: common.HexToAddress(q.addr), token: common.HexToAddress(token)}
	if v, ok := h.nodeBals.get(k); ok {
		return v, nil
	}
	why := fmt.Sprintf("the balance of %s in token %s at block %d is unavailable: chain %s was indexed without call traces "+
		"and the token mints or burns on Deposit/Withdrawal events whose native value only traces show", q.addr, token, n, q.chain.EVMChainID)
	var node BalanceNode
	if h.d.BalanceNodes != nil {
		node = h.d.BalanceNodes.BalanceNode(q.chain)
	}
	if node == nil {
		return "", api.Unavailable(why + "; no node is configured to ask")
	}
	v, err := node.TokenBalance(ctx, k.token, k.addr, uint64(n))
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		h.d.Log.Warn("balanceOf failed", "chain", q.chain.Key, "token", token, "holder", q.addr, "block", n, "err", err)
		return "", api.Unavailable(why + "; the node could not answer balanceOf at that block (an archive node can); try again later")
	}
	s := v.String()
	h.nodeBals.put(k, s)
	return s, nil
}
