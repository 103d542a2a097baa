package evm

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"math/big"

	"github.com/ava-labs/libevm/common"

	"github.com/permafrost-dev/permafrost/internal/jsonscan"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// Call traces: a block fetched with debug_traceBlockByNumber's callTracer
// answer ("traces" of the raw block, one {txHash, result} per tx) has every
// nested call frame of its txs. They give what the block and receipts do
// not: value moved inside contract execution (a WAVAX withdraw paying the
// caller, selfdestruct), applied to native balances, and contracts created
// inside other contracts (factories), with their creator.

// frameKind is a call frame's type.
type frameKind uint8

const (
	frameUnknown frameKind = iota
	frameCall
	frameCallCode
	frameDelegateCall
	frameStaticCall
	frameCreate
	frameCreate2
	frameCreate3
	frameSelfDestruct
)

var frameKinds = map[string]frameKind{
	"CALL": frameCall, "CALLCODE": frameCallCode, "DELEGATECALL": frameDelegateCall, "STATICCALL": frameStaticCall,
	"CREATE": frameCreate, "CREATE2": frameCreate2, "CREATE3": frameCreate3, "SELFDESTRUCT": frameSelfDestruct,
}

// String is the stored call_type: the published InternalTransactionOpCall
// values, and SELFDESTRUCT (shown as UNKNOWN, which the document's enum has
// for it).
func (k frameKind) String() string {
	return [...]string{"UNKNOWN", "CALL", "CALLCODE", "DELEGATECALL", "STATICCALL", "CREATE", "CREATE2", "CREATE3", "SELFDESTRUCT"}[k]
}

func (k frameKind) creates() bool { return k == frameCreate || k == frameCreate2 || k == frameCreate3 }

// movesValue: the frames whose value leaves from for to. A DELEGATECALL or
// STATICCALL moves nothing (the tracer may still show the caller's value);
// a CALLCODE runs the callee's code on the caller's own account.
func (k frameKind) movesValue() bool {
	return k == frameCall || k == frameSelfDestruct || k.creates()
}

// frame is one nested call frame (depth >= 1) of a tx.
type frame struct {
	kind     frameKind
	from     common.Address
	to       common.Address
	value    big.Int
	gas      uint64
	gasUsed  uint64
	depth    int
	index    int  // position in the tx's frames, depth first; 0 is the tx itself
	reverted bool // this frame or one of its callers failed
	seen     struct{ from, to bool }
}

// maxFrameDepth bounds the nesting read (the EVM's call depth limit is 1024).
const maxFrameDepth = 1100

// parseTraces reads the callTracer answer into each tx's frames.
func (b *block) parseTraces(raw []byte) error {
	s := jsonscan.New(raw)
	n := 0
	err := s.Array(func(i int) error {
		n++
		if i >= len(b.txs) {
			return fmt.Errorf("trace %d without a transaction (block has %d)", i, len(b.txs))
		}
		t := &b.txs[i]
		t.frames = t.frames[:0]
		var th common.Hash
		hasResult := false
		err := s.Object(func(key []byte) error {
			switch string(key) {
			case "txHash":
				if s.Null() {
					return nil
				}
				v, err := s.Str()
				if err != nil {
					return err
				}
				th, err = jsonscan.Hash("txHash", v)
				return err
			case "result":
				if s.Null() {
					return nil
				}
				hasResult = true
				var top frame
				return t.parseFrame(s, &top, 0)
			}
			return s.Skip()
		})
		if err != nil {
			return fmt.Errorf("trace %d: %w", i, err)
		}
		if !hasResult {
			return fmt.Errorf("trace %d has no result", i)
		}
		if th != (common.Hash{}) && th != t.hash {
			return fmt.Errorf("trace %d is of tx %s, want %s", i, th.Hex(), t.hash.Hex())
		}
		return nil
	})
	if err != nil {
		return err
	}
	if n != len(b.txs) {
		return fmt.Errorf("%d traces for %d transactions", n, len(b.txs))
	}
	return nil
}

// parseFrame reads the frame at s into f; its nested frames are appended
// to t.frames (f itself too when depth > 0, at its position).
func (t *txn) parseFrame(s *jsonscan.Scanner, f *frame, depth int) error {
	if depth > maxFrameDepth {
		return fmt.Errorf("call frames nested deeper than %d", maxFrameDepth)
	}
	pos := -1
	if depth > 0 {
		pos = len(t.frames)
		t.frames = append(t.frames, frame{depth: depth, index: pos + 1})
		f = &t.frames[pos]
	}
	failed := false
	err := s.Object(func(key []byte) error {
		switch string(key) {
		case "calls":
			if s.Null() {
				return nil
			}
			return s.Array(func(int) error {
				var child frame
				err := t.parseFrame(s, &child, depth+1)
				if pos >= 0 {
					f = &t.frames[pos] // append may have moved it
				}
				return err
			})
		case "error":
			if s.Null() {
				return nil
			}
			v, err := s.Str()
			failed = len(v) > 0
			return err
		case "type", "from", "to", "value", "gas", "gasUsed":
		default:
			return s.Skip()
		}
		if s.Null() {
			return nil
		}
		v, err := s.Str()
		if err != nil {
			return fmt.Errorf("call frame field %s: %w", key, err)
		}
		switch string(key) {
		case "type":
			f.kind = frameKinds[string(v)]
		case "from":
			f.seen.from = true
			f.from, err = jsonscan.Address("call frame from", v)
		case "to":
			f.seen.to = true
			f.to, err = jsonscan.Address("call frame to", v)
		case "value":
			err = jsonscan.Big("call frame value", v, &f.value)
		case "gas":
			f.gas, err = jsonscan.Uint64("call frame gas", v)
		case "gasUsed":
			f.gasUsed, err = jsonscan.Uint64("call frame gasUsed", v)
		}
		return err
	})
	if err != nil {
		return err
	}
	if pos < 0 {
		return nil
	}
	f = &t.frames[pos]
	if !f.seen.from {
		return fmt.Errorf("call frame %d has no from", pos+1)
	}
	if !f.seen.to && f.kind != frameCreate && f.kind != frameCreate2 && f.kind != frameCreate3 {
		return fmt.Errorf("call frame %d has no to", pos+1)
	}
	if failed {
		// Everything below a failed frame is undone with it.
		for i := pos; i < len(t.frames); i++ {
			t.frames[i].reverted = true
		}
	}
	return nil
}

// collectFrames applies a traced tx's nested frames: the value moved by
// frames that took effect (neither they, a caller, nor the tx failed), the
// contracts they created (with their factory), and a row per internal
// transaction as the published document lists them: CALL and CALLCODE
// frames with value, creations, and selfdestructs paying out value.
func (w *blockRows) collectFrames(txIdx int, txHash []byte, t *txn) {
	for k := range t.frames {
		f := &t.frames[k]
		done := !f.reverted && t.status == 1
		if done && f.kind.creates() {
			if c := w.contract(f.to, "internal", txIdx); c.kind == "internal" && c.tx == txIdx {
				c.factory = w.addr(f.from)
			}
		}
		hasValue := f.value.Sign() != 0
		if done && hasValue && f.kind.movesValue() && f.from != f.to {
			s := w.native(f.from)
			s.Sub(s, &f.value)
			r := w.native(f.to)
			r.Add(r, &f.value)
		}
		listed := f.kind.creates() || (hasValue && (f.kind == frameCall || f.kind == frameCallCode || f.kind == frameSelfDestruct))
		if !listed {
			continue
		}
		to := []byte{}
		if f.seen.to {
			to = w.raw(f.to)
		}
		reverted := int64(0)
		if !done {
			reverted = 1
		}
		w.internals.args = append(w.internals.args, int64(txIdx), int64(f.index), txHash, f.kind.String(),
			w.raw(f.from), to, decimal(&f.value), clampInt64(f.gas), clampInt64(f.gasUsed), reverted, int64(f.depth))
		w.addrInternals.args = append(w.addrInternals.args, w.raw(f.from), int64(txIdx), int64(f.index))
		if f.seen.to && f.to != f.from {
			w.addrInternals.args = append(w.addrInternals.args, to, int64(txIdx), int64(f.index))
		}
	}
}

// Untrusted balances. Internal calls can only move value a contract holds,
// and a contract only gets value from a tx that runs code with value (a call
// with value to a contract, a creation with value; a call that runs no code
// uses exactly its intrinsic gas: txn.ranCode). Two facts per chain are kept
// in evm_untrusted_balances, each from the first block it holds:
//   - hotAddr: value has entered contracts (written on both paths);
//   - allAddr: a block without traces ran code while contracts may hold
//     value. From there on no computed native balance can be vouched for:
//     value may have moved inside that code to anyone, caller or not (a
//     contract paying a third party shows in no block or receipt). The API
//     reads those balances from the node (internal/api/data/evm).
//
// A chain indexed with traces from its genesis never gets allAddr.
var (
	hotAddr = []byte{0}
	allAddr = []byte{}
)

// Whether the chain has a fact, as far as the writer knows (it reads the
// table once after its caches were dropped).
const (
	factUnknown = iota
	factNo
	factYes
)

// noteUntrusted notes what one tx of the block says for the facts above.
// A successful call to a minting precompile (subnet-evm's native minter)
// creates value no frame shows: from there on no balance is vouched for.
func (w *blockRows) noteUntrusted(t *txn) {
	if len(w.minters) > 0 && t.status == 1 {
		if t.hasTo && w.minters[t.to] {
			w.blockMint = true
		}
		for k := range t.frames {
			if f := &t.frames[k]; !f.reverted && w.minters[f.to] {
				w.blockMint = true
			}
		}
		// Without traces an internal call to an enabled minter is invisible.
		if w.minterEnabled && !w.b.hasTraces && t.ranCode() {
			w.blockMint = true
		}
	}
	if !t.ranCode() {
		return
	}
	if t.status == 1 && t.value.Sign() != 0 {
		w.blockHot = true
	}
	if !w.b.hasTraces {
		w.blockBlind = true
	}
}

// queueUntrusted queues the facts the block establishes.
func (w *writer) queueUntrusted(ctx context.Context, tx *store.Tx) error {
	if w.blockMint {
		all, err := w.fact(ctx, tx, &w.all, allAddr)
		if err != nil {
			return err
		}
		if !all {
			w.all = factYes
			w.untrusted.args = append(w.untrusted.args, allAddr)
		}
	}
	if !w.blockHot && !w.blockBlind {
		return nil
	}
	hot, err := w.fact(ctx, tx, &w.hot, hotAddr)
	if err != nil {
		return err
	}
	if w.blockHot && !hot {
		w.hot = factYes
		w.untrusted.args = append(w.untrusted.args, hotAddr)
	}
	if !w.blockBlind || w.hot != factYes {
		return nil
	}
	all, err := w.fact(ctx, tx, &w.all, allAddr)
	if err != nil {
		return err
	}
	if !all && w.all != factYes {
		w.all = factYes
		w.untrusted.args = append(w.untrusted.args, allAddr)
	}
	return nil
}

// fact reports whether the chain has the fact keyed addr, reading it once.
func (w *writer) fact(ctx context.Context, tx *store.Tx, state *int, addr []byte) (bool, error) {
	if *state == factUnknown {
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM evm_untrusted_balances WHERE chain_key = $1 AND address = $2`, w.chain, addr).Scan(&one)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			*state = factNo
		case err != nil:
			return false, fmt.Errorf("evm: read untrusted balances: %w", err)
		default:
			*state = factYes
		}
	}
	return *state == factYes, nil
}

// clampInt64 stores a node's gas figure (uint64) in a BIGINT column.
func clampInt64(v uint64) int64 {
	if v > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}
