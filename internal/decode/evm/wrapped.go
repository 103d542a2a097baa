package evm

import (
	"github.com/ava-labs/libevm/common"
)

// Wrapped native tokens (WETH9 and its ports, such as WAVAX) mint on
// deposit and burn on withdrawal without a Transfer event: they emit
// Deposit(address indexed dst, uint256 wad) and Withdrawal(address indexed
// src, uint256 wad) instead. Their balanceOf moves with those events, so the
// indexer applies them to ERC-20 balances.
//
// Any contract may emit events of the same signatures with another meaning
// (a vault's Deposit, a bridge's Withdrawal), so an event counts only when
// the native value that backs a wrapped token moved in the same successful
// tx:
//   - Deposit(dst, wad) by X: wad of native value entered X — the tx itself
//     (to X, value wad) or a CALL frame that took effect;
//   - Withdrawal(src, wad) by X: X paid wad of native value out in a CALL
//     frame that took effect (to src, or to another recipient for the
//     withdrawTo variants).
//
// Each value movement backs one event. Without call traces a deposit the tx
// itself made is still seen; any other event of these signatures cannot be
// checked, and the token's balances are untrusted from that block on
// (evm_untrusted_tokens): the API reads them from the node.
//
// The events are not ERC-20 transfers: the hosted Glacier lists ERC-20
// transfers from Transfer events only (as explorers built on it show a wrap
// as a plain native payment), so they add no evm_transfers row.
var (
	// Deposit(address,uint256)
	topicDeposit = common.HexToHash("0xe1fffcc4923d04b559f4d29a8bfc6cda04eb5b0d3c460751c2402c5c5cc9109c")
	// Withdrawal(address,uint256)
	topicWithdrawal = common.HexToHash("0x7fcf532c15f0a6db0bd6d0e038bea71d30d808c7d98cb3bf7268a95bf5081b65")
)

// wrappedEvent is a Deposit or Withdrawal log of the standard shape.
type wrappedEvent struct {
	deposit bool
	holder  common.Address
	wad     []byte // 32-byte big-endian word
}

func decodeWrapped(l *logEntry) (wrappedEvent, bool) {
	if l.ntopics != 2 || len(l.data) != 32 || (l.topics[0] != topicDeposit && l.topics[0] != topicWithdrawal) {
		return wrappedEvent{}, false
	}
	a, ok := topicAddress(&l.topics[1])
	if !ok {
		return wrappedEvent{}, false
	}
	return wrappedEvent{deposit: l.topics[0] == topicDeposit, holder: a, wad: l.data}, true
}

// collectWrapped applies the tx's backed Deposit/Withdrawal events to
// ERC-20 balances and notes the tokens whose events cannot be checked.
func (w *blockRows) collectWrapped(t *txn) {
	if t.status != 1 {
		return
	}
	topUsed := false
	w.frameUsed = w.frameUsed[:0]
	for range t.frames {
		w.frameUsed = append(w.frameUsed, false)
	}
	wad := &w.wad
	for j := range t.logs {
		l := &t.logs[j]
		ev, ok := decodeWrapped(l)
		if !ok {
			continue
		}
		wad.SetBytes(ev.wad)
		x := l.address
		backed := false
		if ev.deposit && !topUsed && t.hasTo && t.to == x && t.value.Cmp(wad) == 0 {
			topUsed, backed = true, true
		}
		for k := range t.frames {
			if backed {
				break
			}
			f := &t.frames[k]
			// A CALL only: value a selfdestruct or a creation moves runs
			// no deposit or withdrawal code of X.
			if w.frameUsed[k] || f.reverted || f.kind != frameCall || f.from == f.to || f.value.Cmp(wad) != 0 {
				continue
			}
			if (ev.deposit && f.to == x) || (!ev.deposit && f.from == x) {
				w.frameUsed[k], backed = true, true
			}
		}
		switch {
		case backed && ev.deposit:
			w.moveFungible(tokenKey{token: x, typ: erc20}, zeroAddr, ev.holder, ev.wad)
		case backed:
			w.moveFungible(tokenKey{token: x, typ: erc20}, ev.holder, zeroAddr, ev.wad)
		case !w.b.hasTraces && wad.Sign() != 0:
			// Cannot be checked: applied as the event says (so the holder
			// has a row to list), but the token's figures are not vouched
			// for from this block on.
			if ev.deposit {
				w.moveFungible(tokenKey{token: x, typ: erc20}, zeroAddr, ev.holder, ev.wad)
			} else {
				w.moveFungible(tokenKey{token: x, typ: erc20}, ev.holder, zeroAddr, ev.wad)
			}
			if _, seen := w.untrustedTok[x]; !seen {
				w.untrustedTok[x] = struct{}{}
				w.untrustedTokens.args = append(w.untrustedTokens.args, w.raw(x))
			}
		}
	}
}
