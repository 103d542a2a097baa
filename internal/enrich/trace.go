package enrich

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ava-labs/libevm/common/hexutil"

	"github.com/permafrost-dev/permafrost/internal/source"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// Factory deployers. The indexer knows the creating transaction of a
// contract created at top level (the receipt's contractAddress). A contract
// created inside another contract's execution is only seen when it emits
// a log (creation_kind 'observed'): its block is known, not its creator.
// This step asks the node for debug_traceBlockByNumber(block, {tracer:
// callTracer}) and looks for the CREATE/CREATE2 frame that made it: the
// frame's sender is deployerContractAddress, its transaction the txHash and
// that transaction's sender the deployerAddress.
//
// Without the method (public RPCs, nodes without the debug API) nothing is
// guessed: such contracts keep no deploymentDetails, and the node is asked
// again after TraceConfig.Recheck. A contract not created in the block it
// was first seen in (it stayed silent after an earlier creation, or exists
// from genesis) is recorded as 'absent' and keeps none either.

type traceCandidate struct {
	addr     string
	block    int64
	state    string
	attempts int
	found    traceFound
}

type traceFound struct{ tx, deployer, factory string }

// callFrame is the callTracer's frame (the fields used).
type callFrame struct {
	Type  string      `json:"type"`
	From  string      `json:"from"`
	To    string      `json:"to"`
	Error string      `json:"error"`
	Calls []callFrame `json:"calls"`
}

type txTrace struct {
	TxHash string     `json:"txHash"`
	Result *callFrame `json:"result"`
	Error  string     `json:"error"`
}

func (s *Service) traceLoop(ctx context.Context) {
	every(ctx, s.cfg.Trace.Interval, func(ctx context.Context) {
		for _, c := range s.cfg.Chains {
			if err := s.traceChain(ctx, c); err != nil && ctx.Err() == nil {
				s.log.Warn("deployer tracing failed", "chain", c.Key, "err", err)
			}
		}
	})
}

// tracerOff reports whether the chain's node is known not to trace.
func (s *Service) tracerOff(chainKey string) bool {
	s.traceMu.Lock()
	defer s.traceMu.Unlock()
	return s.now().Before(s.traceOff[chainKey])
}

// traceChain handles up to 100 untraced contracts of chain c.
func (s *Service) traceChain(ctx context.Context, c Chain) error {
	now := s.now()
	rows, err := s.db.QueryContext(ctx, `SELECT ec.address, ec.block_number, COALESCE(t.state, ''), COALESCE(t.attempts, 0),
			COALESCE(t.tx_hash, ''), COALESCE(t.deployer_address, ''), COALESCE(t.deployer_contract_address, '')
		FROM evm_contracts ec LEFT JOIN enrich_contract_trace t ON t.chain_key = ec.chain_key AND t.address = ec.address
		WHERE ec.chain_key = $1 AND ec.creation_kind = 'observed' AND ec.deployer_contract_address = ''
			AND (t.state IS NULL OR t.state = 'found' OR (t.state = 'retry' AND t.next_attempt <= $2))
		ORDER BY ec.block_number, ec.address LIMIT 100`, c.Key, now.UnixMilli())
	if err != nil {
		return fmt.Errorf("untraced contracts: %w", err)
	}
	var list []*traceCandidate
	for rows.Next() {
		t := &traceCandidate{}
		if err := rows.Scan(&t.addr, &t.block, &t.state, &t.attempts, &t.found.tx, &t.found.deployer, &t.found.factory); err != nil {
			rows.Close()
			return fmt.Errorf("untraced contracts: %w", err)
		}
		list = append(list, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("untraced contracts: %w", err)
	}
	byBlock := map[int64][]*traceCandidate{}
	var blocks []int64
	for _, t := range list {
		if t.state == "found" { // traced before a reindex cleared evm_contracts
			if err := s.applyDeployer(ctx, c, t.addr, t.found); err != nil {
				return err
			}
			continue
		}
		if _, ok := byBlock[t.block]; !ok {
			blocks = append(blocks, t.block)
		}
		byBlock[t.block] = append(byBlock[t.block], t)
	}
	for _, b := range blocks {
		if ctx.Err() != nil || s.tracerOff(c.Key) {
			return nil
		}
		if err := s.traceBlock(ctx, c, b, byBlock[b]); err != nil {
			return err
		}
	}
	return nil
}

// isMethodMissing recognises a node's "no such method" answer.
func isMethodMissing(err error) bool {
	var re *source.RPCError
	if !errors.As(err, &re) {
		return false
	}
	m := strings.ToLower(re.Message)
	return re.Code == -32601 || strings.Contains(m, "does not exist") || strings.Contains(m, "method not found") ||
		strings.Contains(m, "not available") || strings.Contains(m, "not supported")
}

func (s *Service) traceBlock(ctx context.Context, c Chain, block int64, want []*traceCandidate) error {
	var raw json.RawMessage
	elems := []source.BatchElem{{Method: "debug_traceBlockByNumber",
		Params: []any{hexutil.EncodeUint64(uint64(block)), map[string]any{"tracer": "callTracer"}}, Result: &raw}}
	err := c.RPC.BatchCall(ctx, elems)
	if err == nil {
		err = elems[0].Error
	}
	if isMethodMissing(err) {
		s.traceMu.Lock()
		s.traceOff[c.Key] = s.now().Add(s.cfg.Trace.Recheck)
		s.traceMu.Unlock()
		s.log.Info("the node does not offer debug_traceBlockByNumber: contracts created inside other contracts keep no deploymentDetails",
			"chain", c.Key, "recheck", s.cfg.Trace.Recheck, "err", err)
		return nil
	}
	var traces []txTrace
	if err == nil {
		if uerr := json.Unmarshal(raw, &traces); uerr != nil {
			err = fmt.Errorf("%w: debug_traceBlockByNumber(%d): %w", source.ErrMalformed, block, uerr)
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		for _, t := range want {
			if err := s.traceRetry(ctx, c, t, err); err != nil {
				return err
			}
		}
		return nil
	}
	wanted := map[string]*traceCandidate{}
	for _, t := range want {
		wanted[t.addr] = t
	}
	found := map[string]traceFound{}
	for i, tt := range traces {
		if tt.Result == nil {
			continue
		}
		txHash := strings.ToLower(tt.TxHash)
		if txHash == "" || txHash == "0x0000000000000000000000000000000000000000000000000000000000000000" {
			// Older nodes leave txHash out: the i-th trace is the i-th tx.
			if err := s.db.QueryRowContext(ctx, `SELECT hash FROM evm_txs WHERE chain_key = $1 AND block_number = $2 AND tx_index = $3`,
				c.Key, block, i).Scan(store.ScanHex(&txHash)); err != nil && !errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("tx %d of block %d: %w", i, block, err)
			}
		}
		sender := strings.ToLower(tt.Result.From)
		walkCreates(tt.Result, 0, func(f *callFrame) {
			to := strings.ToLower(f.To)
			if _, ok := wanted[to]; ok {
				if _, done := found[to]; !done {
					found[to] = traceFound{tx: txHash, deployer: sender, factory: strings.ToLower(f.From)}
				}
			}
		})
	}
	for _, t := range want {
		f, ok := found[t.addr]
		state := "absent"
		if ok && f.tx != "" {
			state = "found"
		}
		if _, err := s.db.ExecContext(ctx, `INSERT INTO enrich_contract_trace (chain_key, address, state, tx_hash, deployer_address,
				deployer_contract_address, attempts, next_attempt, last_error, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, 0, '', $8)
			ON CONFLICT (chain_key, address) DO UPDATE SET state = excluded.state, tx_hash = excluded.tx_hash,
				deployer_address = excluded.deployer_address, deployer_contract_address = excluded.deployer_contract_address,
				attempts = excluded.attempts, next_attempt = 0, last_error = '', updated_at = excluded.updated_at`,
			c.Key, t.addr, state, f.tx, f.deployer, f.factory, t.attempts+1, s.now().Unix()); err != nil {
			return fmt.Errorf("trace of %s: %w", t.addr, err)
		}
		if state == "found" {
			if err := s.applyDeployer(ctx, c, t.addr, f); err != nil {
				return err
			}
		}
	}
	return nil
}

// walkCreates calls fn for every successful CREATE/CREATE2 frame below f
// (depth-bounded: traces come from a node, not from us).
func walkCreates(f *callFrame, depth int, fn func(*callFrame)) {
	if depth > 1100 {
		return
	}
	for i := range f.Calls {
		c := &f.Calls[i]
		if t := strings.ToUpper(c.Type); (t == "CREATE" || t == "CREATE2") && c.Error == "" {
			fn(c)
		}
		walkCreates(c, depth+1, fn)
	}
}

func (s *Service) traceRetry(ctx context.Context, c Chain, t *traceCandidate, cause error) error {
	n := t.attempts + 1
	cfg := s.cfg.Trace
	state, next := "retry", s.now().Add(backoff(cfg.RetryBase, cfg.RetryCap, n, 0)).UnixMilli()
	if n >= cfg.MaxAttempts {
		state, next = "failed", 0
		s.log.Warn("deployer trace given up", "chain", c.Key, "contract", t.addr, "block", t.block, "err", cause)
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO enrich_contract_trace (chain_key, address, state, attempts, next_attempt, last_error, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (chain_key, address) DO UPDATE SET state = excluded.state, attempts = excluded.attempts,
			next_attempt = excluded.next_attempt, last_error = excluded.last_error, updated_at = excluded.updated_at`,
		c.Key, t.addr, state, n, next, clipN(cause.Error(), 500), s.now().Unix())
	if err != nil {
		return fmt.Errorf("trace of %s: %w", t.addr, err)
	}
	return nil
}

// applyDeployer writes a traced creation into evm_contracts.
func (s *Service) applyDeployer(ctx context.Context, c Chain, addr string, f traceFound) error {
	_, err := s.db.ExecContext(ctx, `UPDATE evm_contracts SET tx_hash = $1, deployer_address = $2, deployer_contract_address = $3
		WHERE chain_key = $4 AND address = $5 AND creation_kind = 'observed'`, f.tx, f.deployer, f.factory, c.Key, addr)
	if err != nil {
		return fmt.Errorf("deployer of %s: %w", addr, err)
	}
	return nil
}
