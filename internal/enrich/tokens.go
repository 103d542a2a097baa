package enrich

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/ava-labs/libevm/common/hexutil"

	"github.com/permafrost-dev/permafrost/internal/source"
)

// Token metadata: every contract of evm_contracts still at metadata_status
// 'unknown' gets eight eth_calls in one batch with the other contracts of
// its round, at the chain's indexed tip:
//
//	supportsInterface(0x01ffc9a7), supportsInterface(0xffffffff)  ERC-165 itself
//	supportsInterface(0x80ac58cd), supportsInterface(0xd9b67a26)  ERC-721, ERC-1155
//	name(), symbol(), decimals(), totalSupply()
//
// ercType: ERC-721 / ERC-1155 when the contract implements ERC-165 (true
// for 0x01ffc9a7, false for 0xffffffff) and says so; else ERC-20 when
// decimals() is a uint8 and totalSupply() a uint256; else unknown. The type
// the indexer guessed from transfer logs is kept when it has one (the
// transfers and balances were written by it); detection fills the rest.
// name/symbol are an ABI string or a bytes32; anything else, a revert or
// an error answer is recorded as absent (NULL), never an ingestion error.
// metadata_status becomes 'resolved' (something answered) or 'failed'
// (nothing did); node failures (transport, missing state) are retried with
// backoff, then 'failed'. Results are cached in enrich_token_meta.

const tokenCalls = 8

// tokenCallData are the eight calls' data, in the order above.
var tokenCallData = [tokenCalls]string{
	callData(selSupportsInterface, interfaceWord(ifaceERC165)),
	callData(selSupportsInterface, interfaceWord(ifaceInvalid)),
	callData(selSupportsInterface, interfaceWord(ifaceERC721)),
	callData(selSupportsInterface, interfaceWord(ifaceERC1155)),
	callData(selName),
	callData(selSymbol),
	callData(selDecimals),
	callData(selTotalSupply),
}

// callResult is one eth_call's answer.
type callResult struct {
	data      []byte
	ok        bool  // returned data (possibly empty)
	transient bool  // the node failed; ask again later
	err       error // revert, error answer or failure
}

// tokenMeta is what the calls told.
type tokenMeta struct {
	ercType  string
	name     *string
	symbol   *string
	decimals *int
	answered bool // at least one call returned usable data
}

// detectToken interprets the eight answers of one contract.
func detectToken(r [tokenCalls]callResult) tokenMeta {
	var m tokenMeta
	boolOf := func(i int) (bool, bool) {
		if !r[i].ok {
			return false, false
		}
		v, err := decodeBool(r[i].data)
		return v, err == nil
	}
	is165, ok165 := boolOf(0)
	invalid, okInvalid := boolOf(1)
	erc165 := ok165 && is165 && !(okInvalid && invalid)
	if ok165 {
		m.answered = true
	}
	if erc165 {
		if v, ok := boolOf(2); ok && v {
			m.ercType = ercTypeERC721
		} else if v, ok := boolOf(3); ok && v {
			m.ercType = ercTypeERC1155
		}
	}
	for i, dst := range []**string{&m.name, &m.symbol} {
		if c := r[4+i]; c.ok {
			if s, ok := decodeText(c.data); ok && s != "" {
				*dst = &s
				m.answered = true
			}
		}
	}
	if c := r[6]; c.ok {
		if v, err := decodeSmallUint(c.data, 255); err == nil {
			d := int(v)
			m.decimals = &d
			m.answered = true
		}
	}
	supply := r[7].ok && len(r[7].data) >= 32
	if m.ercType == "" && m.decimals != nil && supply {
		m.ercType = ercTypeERC20
	}
	return m
}

// classifyCallError tells node failures worth retrying from definitive
// answers (reverts, missing methods, errors of the call itself).
func classifyCallError(err error) (transient bool) {
	var re *source.RPCError
	if !errors.As(err, &re) {
		// Undecodable result: garbage, definitive.
		return false
	}
	if re.Code == 3 {
		return false
	}
	m := strings.ToLower(re.Message)
	if strings.Contains(m, "revert") {
		return false
	}
	for _, s := range []string{"missing trie node", "header not found", "historical state", "state not available",
		"state unavailable", "unfinalized", "timeout", "timed out", "busy", "rate limit", "limit exceeded",
		"too many requests", "try again", "unavailable"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return source.IsNotFound(err)
}

// tokenLoop enriches contracts until ctx ends.
func (s *Service) tokenLoop(ctx context.Context) {
	every(ctx, s.cfg.Tokens.Interval, func(ctx context.Context) {
		for _, c := range s.cfg.Chains {
			for ctx.Err() == nil {
				n, err := s.resolveTokens(ctx, c)
				if err != nil {
					if ctx.Err() == nil {
						s.log.Warn("token metadata round failed", "chain", c.Key, "err", err)
					}
					break
				}
				if n < s.cfg.Tokens.Batch {
					break
				}
			}
		}
	})
}

type tokenRow struct {
	addr, indexedType string
	cached            bool
	cachedState       string
	meta              tokenMeta
	attempts          int
}

// resolveTokens enriches up to Batch contracts of chain c and returns how
// many it looked at.
func (s *Service) resolveTokens(ctx context.Context, c Chain) (int, error) {
	now := s.now()
	rows, err := s.db.QueryContext(ctx, `SELECT ec.address, ec.erc_type, m.state, m.erc_type, m.name, m.symbol, m.decimals, m.attempts
		FROM evm_contracts ec LEFT JOIN enrich_token_meta m ON m.chain_key = ec.chain_key AND m.address = ec.address
		WHERE ec.chain_key = $1 AND ec.metadata_status = 'unknown' AND (m.next_attempt IS NULL OR m.next_attempt <= $2)
		ORDER BY ec.address LIMIT $3`, c.Key, now.UnixMilli(), s.cfg.Tokens.Batch)
	if err != nil {
		return 0, fmt.Errorf("contracts without metadata: %w", err)
	}
	var list []*tokenRow
	for rows.Next() {
		t := &tokenRow{}
		var state, mType, name, symbol sql.NullString
		var dec, attempts sql.NullInt64
		if err := rows.Scan(&t.addr, &t.indexedType, &state, &mType, &name, &symbol, &dec, &attempts); err != nil {
			rows.Close()
			return 0, fmt.Errorf("contracts without metadata: %w", err)
		}
		t.attempts = int(attempts.Int64)
		if state.String == "resolved" || state.String == "failed" {
			t.cached, t.cachedState = true, state.String
			t.meta = tokenMeta{ercType: mType.String, answered: state.String == "resolved"}
			if name.Valid {
				t.meta.name = &name.String
			}
			if symbol.Valid {
				t.meta.symbol = &symbol.String
			}
			if dec.Valid {
				d := int(dec.Int64)
				t.meta.decimals = &d
			}
		}
		list = append(list, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("contracts without metadata: %w", err)
	}
	if len(list) == 0 {
		return 0, nil
	}
	var ask []*tokenRow
	for _, t := range list {
		if !t.cached {
			ask = append(ask, t)
		}
	}
	results := map[*tokenRow][tokenCalls]callResult{}
	var batchErr error
	block := ""
	if len(ask) > 0 {
		block, err = s.callBlock(ctx, c.Key)
		if err != nil {
			return 0, err
		}
		results, batchErr = tokenBatch(ctx, c, ask, block)
		if batchErr == nil && block != "latest" {
			// State the node no longer has at the indexed tip (a pruned
			// node while ingestion catches up): ask at the latest block.
			var again []*tokenRow
			for _, t := range ask {
				for _, x := range results[t] {
					if x.err != nil && isStateMissing(x.err) {
						again = append(again, t)
						break
					}
				}
			}
			if len(again) > 0 {
				more, err := tokenBatch(ctx, c, again, "latest")
				if err == nil {
					for t, r := range more {
						results[t] = r
					}
				}
			}
		}
	}
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	curated := s.curatedSymbols(ctx, c.Key)
	for _, t := range list {
		state := t.cachedState
		meta := t.meta
		if !t.cached {
			var failure error
			if batchErr != nil {
				failure = batchErr
			} else {
				r := results[t]
				for _, x := range r {
					if x.transient {
						failure = x.err
						break
					}
				}
				meta = detectToken(r)
			}
			if failure != nil {
				if err := s.tokenRetry(ctx, c, t, failure); err != nil {
					return 0, err
				}
				continue
			}
			state = "failed"
			if meta.answered {
				state = "resolved"
			}
			if err := s.cacheToken(ctx, c, t.addr, state, meta, block, 0, ""); err != nil {
				return 0, err
			}
		}
		if err := s.applyToken(ctx, c, t, state, meta, curated); err != nil {
			return 0, err
		}
	}
	return len(list), nil
}

// tokenBatch sends the eight calls of each contract in one batch at tag.
func tokenBatch(ctx context.Context, c Chain, ask []*tokenRow, tag string) (map[*tokenRow][tokenCalls]callResult, error) {
	elems := make([]source.BatchElem, 0, len(ask)*tokenCalls)
	outs := make([]hexutil.Bytes, len(ask)*tokenCalls)
	for i, t := range ask {
		for j := 0; j < tokenCalls; j++ {
			elems = append(elems, source.BatchElem{Method: "eth_call",
				Params: []any{map[string]string{"to": t.addr, "data": tokenCallData[j]}, tag},
				Result: &outs[i*tokenCalls+j]})
		}
	}
	if err := c.RPC.BatchCall(ctx, elems); err != nil {
		return nil, err
	}
	results := make(map[*tokenRow][tokenCalls]callResult, len(ask))
	for i, t := range ask {
		var r [tokenCalls]callResult
		for j := 0; j < tokenCalls; j++ {
			e := elems[i*tokenCalls+j]
			if e.Error != nil {
				r[j] = callResult{err: e.Error, transient: classifyCallError(e.Error)}
				continue
			}
			r[j] = callResult{data: outs[i*tokenCalls+j], ok: true}
		}
		results[t] = r
	}
	return results, nil
}

// isStateMissing recognises a node that lacks the state of the block asked.
func isStateMissing(err error) bool {
	var re *source.RPCError
	if !errors.As(err, &re) {
		return false
	}
	m := strings.ToLower(re.Message)
	return strings.Contains(m, "missing trie node") || strings.Contains(m, "historical state") ||
		strings.Contains(m, "state not available") || strings.Contains(m, "state unavailable") ||
		strings.Contains(m, "header not found")
}

// tokenRetry records a failed attempt: retried with backoff, given up
// (state failed, fields absent) after MaxAttempts.
func (s *Service) tokenRetry(ctx context.Context, c Chain, t *tokenRow, cause error) error {
	n := t.attempts + 1
	cfg := s.cfg.Tokens
	if n >= cfg.MaxAttempts {
		s.log.Warn("token metadata given up", "chain", c.Key, "contract", t.addr, "attempts", n, "err", cause)
		if err := s.cacheToken(ctx, c, t.addr, "failed", tokenMeta{}, "", n, cause.Error()); err != nil {
			return err
		}
		return s.applyToken(ctx, c, t, "failed", tokenMeta{}, nil)
	}
	next := s.now().Add(backoff(cfg.RetryBase, cfg.RetryCap, n, 0)).UnixMilli()
	_, err := s.db.ExecContext(ctx, `INSERT INTO enrich_token_meta (chain_key, address, state, attempts, next_attempt, last_error, updated_at)
		VALUES ($1, $2, 'retry', $3, $4, $5, $6)
		ON CONFLICT (chain_key, address) DO UPDATE SET state = 'retry', attempts = excluded.attempts,
			next_attempt = excluded.next_attempt, last_error = excluded.last_error, updated_at = excluded.updated_at`,
		c.Key, t.addr, n, next, clipN(cause.Error(), 500), s.now().Unix())
	if err != nil {
		return fmt.Errorf("token metadata of %s: %w", t.addr, err)
	}
	return nil
}

func (s *Service) cacheToken(ctx context.Context, c Chain, addr, state string, m tokenMeta, block string, attempts int, lastErr string) error {
	var bn int64
	if b, err := hexutil.DecodeUint64(block); err == nil {
		bn = int64(b)
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO enrich_token_meta (chain_key, address, state, erc_type, name, symbol, decimals,
			block_number, attempts, next_attempt, last_error, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 0, $10, $11)
		ON CONFLICT (chain_key, address) DO UPDATE SET state = excluded.state, erc_type = excluded.erc_type,
			name = excluded.name, symbol = excluded.symbol, decimals = excluded.decimals, block_number = excluded.block_number,
			attempts = excluded.attempts, next_attempt = 0, last_error = excluded.last_error, updated_at = excluded.updated_at`,
		c.Key, addr, state, m.ercType, nullString(m.name), nullString(m.symbol), nullInt(m.decimals), bn, attempts, clipN(lastErr, 500), s.now().Unix())
	if err != nil {
		return fmt.Errorf("token metadata of %s: %w", addr, err)
	}
	return nil
}

// applyToken writes metadata into evm_contracts and judges the token's
// reputation.
func (s *Service) applyToken(ctx context.Context, c Chain, t *tokenRow, state string, m tokenMeta, curated map[string]string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE evm_contracts SET name = $1, symbol = $2, decimals = $3, metadata_status = $4,
			metadata_updated_at = $5, erc_type = CASE WHEN erc_type = '' THEN $6 ELSE erc_type END
		WHERE chain_key = $7 AND address = $8`,
		nullString(m.name), nullString(m.symbol), nullInt(m.decimals), state, s.now().Unix(), m.ercType, c.Key, t.addr)
	if err != nil {
		return fmt.Errorf("token metadata of %s: %w", t.addr, err)
	}
	typ := t.indexedType
	if typ == "" {
		typ = m.ercType
	}
	if typ != ercTypeERC20 {
		return nil
	}
	if err := s.judge(ctx, c.Key, t.addr, deref(m.name), deref(m.symbol), curated); err != nil {
		return fmt.Errorf("reputation of %s: %w", t.addr, err)
	}
	return nil
}

func nullString(p *string) any {
	if p == nil {
		return nil
	}
	return *p
}

func nullInt(p *int) any {
	if p == nil {
		return nil
	}
	return int64(*p)
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
