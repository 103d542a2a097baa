package primary

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"time"

	"github.com/ava-labs/libevm/common"

	"github.com/permafrost-dev/permafrost/internal/api"
)

// AvaxSupplyResponse is the OpenAPI AvaxSupplyResponse: amounts in AVAX as
// exact decimal strings (up to 18 decimals: the C-chain burns wei).
type AvaxSupplyResponse struct {
	CirculatingSupply string `json:"circulatingSupply"`
	TotalSupply       string `json:"totalSupply"`
	TotalPBurned      string `json:"totalPBurned"`
	TotalCBurned      string `json:"totalCBurned"`
	TotalXBurned      string `json:"totalXBurned"`
	TotalStaked       string `json:"totalStaked"`
	TotalLocked       string `json:"totalLocked"`
	TotalRewards      string `json:"totalRewards"`
	LastUpdated       string `json:"lastUpdated"`
	GenesisUnlock     string `json:"genesisUnlock"`
	L1ValidatorFees   string `json:"l1ValidatorFees"`
}

// blackhole is the C-chain's coinbase (coreth's BlackholeAddr): the whole
// fee of every EVM tx goes to it and nothing can leave it, so its balance
// is the AVAX the C-chain's EVM txs burned.
var blackhole = common.HexToAddress("0x0100000000000000000000000000000000000000")

// supplyTotals is one chain's row of avax_supply (nAVAX).
type supplyTotals struct {
	genesis, burned, rewards, staked, l1Deposits, l1Refunds int64
}

// getAvaxSupply answers GET /v1/avax/supply from the running totals the
// indexers keep (0111_avax_supply.sql), at the indexed tips. The document's
// example is one real answer, whose figures add up as
// totalSupply = genesisUnlock + totalRewards - (totalPBurned + totalCBurned
// + totalXBurned), with circulatingSupply equal to totalSupply and the L1
// validator fees part of totalPBurned: the same arithmetic here
// (docs/operations.md, "Primary-network data API").
func (h *handlers) getAvaxSupply(r *http.Request) (any, error) {
	ctx := r.Context()
	for _, c := range []string{"P", "X", "C"} {
		if err := h.checkChain(ctx, c); err != nil {
			return nil, err
		}
	}
	pHeight, pTime, ok, err := tip(ctx, h.d.DB, "P")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, api.Unavailable("the P-chain has not been indexed yet; try again later")
	}
	totals, err := h.supplyTotals(ctx)
	if err != nil {
		return nil, err
	}
	if _, stale := totals[""]; stale {
		return nil, api.Unavailable("the AVAX totals were added after this database was indexed: run `permafrost reindex` once to count its history")
	}
	l1Left, err := h.l1BalancesLeft(ctx, pHeight)
	if err != nil {
		return nil, err
	}
	evmBurned, err := h.evmBurned(ctx)
	if err != nil {
		return nil, err
	}
	locked, err := h.lockedAVAX(ctx, pTime)
	if err != nil {
		return nil, err
	}
	updated, err := h.lastUpdated(ctx)
	if err != nil {
		return nil, err
	}

	p, x, c := totals["P"], totals["X"], totals["C"]
	// L1 validator fees burned: what went into L1 validator balances and
	// neither came back nor is left at the tip.
	l1Fees := new(big.Int).SetInt64(p.l1Deposits - p.l1Refunds)
	l1Fees.Sub(l1Fees, l1Left)
	pBurned := new(big.Int).Add(big.NewInt(p.burned), l1Fees)
	cBurned := nanoToWei(big.NewInt(c.burned))
	cBurned.Add(cBurned, evmBurned)
	supply := nanoToWei(big.NewInt(p.genesis + p.rewards))
	for _, b := range []*big.Int{nanoToWei(pBurned), cBurned, nanoToWei(big.NewInt(x.burned))} {
		supply.Sub(supply, b)
	}
	return AvaxSupplyResponse{
		CirculatingSupply: avaxString(supply),
		TotalSupply:       avaxString(supply),
		TotalPBurned:      avaxString(nanoToWei(pBurned)),
		TotalCBurned:      avaxString(cBurned),
		TotalXBurned:      avaxString(nanoToWei(big.NewInt(x.burned))),
		TotalStaked:       avaxString(nanoToWei(big.NewInt(p.staked))),
		TotalLocked:       avaxString(nanoToWei(locked)),
		TotalRewards:      avaxString(nanoToWei(big.NewInt(p.rewards))),
		LastUpdated:       time.Unix(updated, 0).UTC().Format("2006-01-02T15:04:05.000Z"),
		GenesisUnlock:     avaxString(nanoToWei(big.NewInt(p.genesis))),
		L1ValidatorFees:   avaxString(nanoToWei(l1Fees)),
	}, nil
}

// supplyTotals reads avax_supply by chain key ("" marks totals that miss
// the history indexed before the table existed).
func (h *handlers) supplyTotals(ctx context.Context) (map[string]supplyTotals, error) {
	rows, err := h.d.DB.QueryContext(ctx, `SELECT chain_key, genesis_supply, burned, rewards, staked, l1_deposits, l1_refunds
		FROM avax_supply`)
	if err != nil {
		return nil, fmt.Errorf("avax supply: %w", err)
	}
	defer rows.Close()
	out := map[string]supplyTotals{}
	for rows.Next() {
		var k string
		var t supplyTotals
		if err := rows.Scan(&k, &t.genesis, &t.burned, &t.rewards, &t.staked, &t.l1Deposits, &t.l1Refunds); err != nil {
			return nil, fmt.Errorf("avax supply: %w", err)
		}
		out[k] = t
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("avax supply: %w", err)
	}
	return out, nil
}

// l1BalancesLeft is the balance the active L1 validators have left after
// P-chain block height: end_accumulated_fee minus the fees accrued by then,
// for each whose end is still ahead.
func (h *handlers) l1BalancesLeft(ctx context.Context, height int64) (*big.Int, error) {
	var accrued string
	err := h.d.DB.QueryRowContext(ctx, `SELECT l1_accrued_fees FROM p_block_state WHERE height = $1`, height).Scan(&accrued)
	if err != nil {
		return nil, fmt.Errorf("avax supply: accrued L1 fees at %d: %w", height, err)
	}
	// Padded amounts compare as numbers.
	ends, n, err := h.sumPadded(ctx, "end_accumulated_fee",
		`p_l1_validators WHERE removed_height < 0 AND end_accumulated_fee > $1`, accrued)
	if err != nil {
		return nil, fmt.Errorf("avax supply: L1 balances: %w", err)
	}
	return ends.Sub(ends, new(big.Int).Mul(big.NewInt(n), decimal(unpad(accrued)))), nil
}

// evmBurned is the C-chain blackhole's balance in wei (0 before any fee).
func (h *handlers) evmBurned(ctx context.Context) (*big.Int, error) {
	var bal string
	err := h.d.DB.QueryRowContext(ctx, `SELECT balance FROM evm_native_balances WHERE chain_key = 'C' AND address = $1`,
		blackhole.Bytes()).Scan(&bal)
	if errors.Is(err, sql.ErrNoRows) {
		return new(big.Int), nil
	}
	if err != nil {
		return nil, fmt.Errorf("avax supply: C-chain burned fees: %w", err)
	}
	return decimal(bal), nil
}

// lockedAVAX is the AVAX of unspent UTXOs (any chain, atomic memory
// included) still locked at time at: a locktime or a stakeable locktime
// after it. Stake outputs are staked, not locked.
func (h *handlers) lockedAVAX(ctx context.Context, at int64) (*big.Int, error) {
	sum, _, err := h.sumPadded(ctx, "amount", `utxos
		WHERE consumed_height < 0 AND (locktime > 0 OR stakeable_locktime > 0) AND asset_id = $1
		AND (locktime > $2 OR stakeable_locktime > $2) AND utxo_type <> 'STAKE'`, h.d.AVAXAssetID, at)
	if err != nil {
		return nil, fmt.Errorf("avax supply: locked: %w", err)
	}
	return sum, nil
}

// lastUpdated is the newest indexed tip's block time among P, X and C:
// the totals count every block up to the chains' tips.
func (h *handlers) lastUpdated(ctx context.Context) (int64, error) {
	var t sql.NullInt64
	err := h.d.DB.QueryRowContext(ctx, `SELECT MAX(block_time) FROM checkpoints WHERE chain_key IN ('P', 'X', 'C')`).Scan(&t)
	if err != nil {
		return 0, fmt.Errorf("avax supply: tips: %w", err)
	}
	if !t.Valid {
		_, pt, _, err := tip(ctx, h.d.DB, "P")
		return pt, err
	}
	return t.Int64, nil
}

// nanoToWei converts nAVAX to wei (1 nAVAX = 10^9 wei), the unit every
// total is added up in.
func nanoToWei(n *big.Int) *big.Int { return new(big.Int).Mul(n, big.NewInt(1e9)) }

// avaxString renders wei as AVAX: an exact decimal without trailing zeros.
func avaxString(wei *big.Int) string {
	neg := wei.Sign() < 0
	s := new(big.Int).Abs(wei).String()
	if len(s) <= 18 {
		s = strings.Repeat("0", 19-len(s)) + s
	}
	whole, frac := s[:len(s)-18], strings.TrimRight(s[len(s)-18:], "0")
	if frac != "" {
		whole += "." + frac
	}
	if neg {
		whole = "-" + whole
	}
	return whole
}
