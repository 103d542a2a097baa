package primary

import (
	"context"
	"fmt"
	"math/big"
	"net/http"
	"sort"
	"strings"

	"github.com/permafrost-dev/permafrost/internal/api"
)

// AggregatedAssetAmount is the OpenAPI AggregatedAssetAmount: an asset's
// total over utxoCount UTXOs.
type AggregatedAssetAmount struct {
	AssetAmount
	UtxoCount int64 `json:"utxoCount"`
}

// SharedAssetBalance is XChainSharedAssetBalance / CChainSharedAssetBalance
// (and PChainSharedAsset with Status): UTXOs exported to this chain from
// sharedWithChainId and not yet imported (atomic memory).
type SharedAssetBalance struct {
	AggregatedAssetAmount
	SharedWithChainID string `json:"sharedWithChainId"`
	Status            string `json:"status,omitempty"`
}

// PChainBalance is the OpenAPI PChainBalance.
type PChainBalance struct {
	UnlockedUnstaked     []AggregatedAssetAmount `json:"unlockedUnstaked"`
	UnlockedStaked       []AggregatedAssetAmount `json:"unlockedStaked"`
	LockedPlatform       []AggregatedAssetAmount `json:"lockedPlatform"`
	LockedStakeable      []AggregatedAssetAmount `json:"lockedStakeable"`
	LockedStaked         []AggregatedAssetAmount `json:"lockedStaked"`
	PendingStaked        []AggregatedAssetAmount `json:"pendingStaked"`
	AtomicMemoryUnlocked []SharedAssetBalance    `json:"atomicMemoryUnlocked"`
	AtomicMemoryLocked   []SharedAssetBalance    `json:"atomicMemoryLocked"`
}

// XChainBalances is the OpenAPI XChainBalances.
type XChainBalances struct {
	Locked               []AggregatedAssetAmount `json:"locked"`
	Unlocked             []AggregatedAssetAmount `json:"unlocked"`
	AtomicMemoryUnlocked []SharedAssetBalance    `json:"atomicMemoryUnlocked"`
	AtomicMemoryLocked   []SharedAssetBalance    `json:"atomicMemoryLocked"`
}

// CChainAtomicBalances is the OpenAPI CChainAtomicBalances.
type CChainAtomicBalances struct {
	AtomicMemoryUnlocked []SharedAssetBalance `json:"atomicMemoryUnlocked"`
	AtomicMemoryLocked   []SharedAssetBalance `json:"atomicMemoryLocked"`
}

// BalancesResponse is ListPChainBalancesResponse, ListXChainBalancesResponse
// or ListCChainAtomicBalancesResponse (Balances is the chain's type).
type BalancesResponse struct {
	Balances  any       `json:"balances"`
	ChainInfo ChainInfo `json:"chainInfo"`
}

// balanceUTXO is an unspent UTXO of the queried addresses at the time asked.
type balanceUTXO struct {
	asset, amount, createdChain, fxType string
	locktime, stakeableLocktime         int64
	stakeLocked, pending                bool
	owners                              []string
	threshold                           int
	count                               int64 // UTXOs summed in amount (plain ones come summed)
}

// plainBalances reads the plain-UTXO balances of the addresses on chain
// (args: the chain key, then the addresses, numbered ph), one row per
// address and asset kept by the indexers (0110_utxo_plain_balances.sql).
func (h *handlers) plainBalances(ctx context.Context, chain, ph string, args []any) ([]balanceUTXO, error) {
	return h.summedBalances(ctx, "utxo_plain_balances", balanceUTXO{createdChain: chain,
		fxType: "secp256k1fx.TransferOutput", threshold: 1}, ph, args)
}

// stakeBalances reads the locked-stake balances of the addresses on the
// P-chain (args as plainBalances'), kept by the P indexer
// (0185_utxo_stake_balances.sql): stake outputs of one owner, no locktime,
// whose staker is in the set and started by its block, so not pending at
// the tip: the unlockedStaked bucket.
func (h *handlers) stakeBalances(ctx context.Context, ph string, args []any) ([]balanceUTXO, error) {
	return h.summedBalances(ctx, "utxo_stake_balances", balanceUTXO{createdChain: "P",
		fxType: "secp256k1fx.TransferOutput", threshold: 1, stakeLocked: true}, ph, args)
}

// summedBalances reads one row per address and asset of table, a balance
// table of 0110's columns, as UTXOs like proto whose amount is the sum.
func (h *handlers) summedBalances(ctx context.Context, table string, proto balanceUTXO, ph string, args []any) ([]balanceUTXO, error) {
	rows, err := h.d.DB.QueryContext(ctx, `SELECT address, asset_id, amount_hi, amount_lo, utxo_count FROM `+table+`
		WHERE chain_key = $1 AND address IN (`+ph+`) AND utxo_count > 0`, args...)
	if err != nil {
		return nil, fmt.Errorf("balances: %w", err)
	}
	defer rows.Close()
	var out []balanceUTXO
	for rows.Next() {
		u := proto
		u.owners = make([]string, 1)
		var hi, lo int64
		if err := rows.Scan(&u.owners[0], &u.asset, &hi, &lo, &u.count); err != nil {
			return nil, fmt.Errorf("balances: %w", err)
		}
		u.amount = splitSum(hi, lo).String()
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("balances: %w", err)
	}
	return out, nil
}

// spendableBy reports whether addrs alone can spend u (threshold of its
// owners among them).
func (u *balanceUTXO) spendableBy(addrs map[string]bool) bool {
	n := 0
	for _, a := range u.owners {
		if addrs[a] {
			n++
		}
	}
	return n >= u.threshold
}

// bucket totals UTXOs per asset (and per source chain for atomic memory).
type bucket struct {
	keys []string
	sum  map[string]*big.Int
	n    map[string]int64
}

func newBucket() *bucket { return &bucket{sum: map[string]*big.Int{}, n: map[string]int64{}} }

func (b *bucket) add(key string, u balanceUTXO) {
	if b.sum[key] == nil {
		b.keys = append(b.keys, key)
		b.sum[key] = new(big.Int)
	}
	b.sum[key].Add(b.sum[key], decimal(u.amount))
	b.n[key] += max(u.count, 1)
}

// amounts renders a bucket keyed by asset id.
func (b *bucket) amounts(as *assets) []AggregatedAssetAmount {
	out := []AggregatedAssetAmount{}
	sort.Strings(b.keys)
	for _, k := range b.keys {
		out = append(out, AggregatedAssetAmount{AssetAmount: as.amount(k, b.sum[k].String()), UtxoCount: b.n[k]})
	}
	return out
}

// shared renders a bucket keyed by "asset|source chain key".
func (b *bucket) shared(h *handlers, as *assets, status string) []SharedAssetBalance {
	out := []SharedAssetBalance{}
	sort.Strings(b.keys)
	for _, k := range b.keys {
		asset, chain, _ := strings.Cut(k, "|")
		out = append(out, SharedAssetBalance{AggregatedAssetAmount: AggregatedAssetAmount{
			AssetAmount: as.amount(asset, b.sum[k].String()), UtxoCount: b.n[k]},
			SharedWithChainID: h.blockchainID(chain), Status: status})
	}
	return out
}

func (h *handlers) getBalances(r *http.Request) (any, error) {
	q, err := h.begin(r, true)
	if err != nil {
		return nil, err
	}
	p := q.p
	addrs := h.requiredAddresses(p, "P-, X- or C-")
	at, atGiven := p.OptInt("blockTimestamp", 0)
	if err := p.Err(); err != nil {
		return nil, err
	}
	ctx := r.Context()
	if err := h.checkChain(ctx, q.chain.Key); err != nil {
		return nil, err
	}
	// Locks are judged at the indexed tip's time, or at blockTimestamp.
	now := at
	if !atGiven {
		_, tipTime, ok, err := tip(ctx, h.d.DB, "P")
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, api.Unavailable("the P-chain has not been indexed yet; try again later")
		}
		now = tipTime
	}
	us, err := h.balanceUTXOs(ctx, q.chain.Key, addrs, now, atGiven)
	if err != nil {
		return nil, err
	}
	as := newAssets(h.d.DB)
	var ids []string
	for _, u := range us {
		ids = append(ids, u.asset)
	}
	if err := as.load(ctx, ids...); err != nil {
		return nil, err
	}
	info := ChainInfo{ChainName: chainName(q.chain.Key), Network: q.network}
	atomicU, atomicL := newBucket(), newBucket()
	switch q.chain.Key {
	case "P":
		uu, us2, lp, ls, lst, ps := newBucket(), newBucket(), newBucket(), newBucket(), newBucket(), newBucket()
		for _, u := range us {
			stakeLocked := u.stakeableLocktime > now
			switch {
			case u.createdChain != "P":
				if u.locktime > now {
					atomicL.add(u.asset+"|"+u.createdChain, u)
				} else {
					atomicU.add(u.asset+"|"+u.createdChain, u)
				}
			case u.pending:
				ps.add(u.asset, u)
			case u.stakeLocked && stakeLocked:
				lst.add(u.asset, u)
			case u.stakeLocked:
				us2.add(u.asset, u)
			case u.locktime > now:
				lp.add(u.asset, u)
			case stakeLocked:
				ls.add(u.asset, u)
			default:
				uu.add(u.asset, u)
			}
		}
		return BalancesResponse{ChainInfo: info, Balances: PChainBalance{
			UnlockedUnstaked: uu.amounts(as), UnlockedStaked: us2.amounts(as), LockedPlatform: lp.amounts(as),
			LockedStakeable: ls.amounts(as), LockedStaked: lst.amounts(as), PendingStaked: ps.amounts(as),
			AtomicMemoryUnlocked: atomicU.shared(h, as, "pendingImport"),
			AtomicMemoryLocked:   atomicL.shared(h, as, "pendingImport"),
		}}, nil
	case "X":
		unlocked, locked := newBucket(), newBucket()
		mine := map[string]bool{}
		for _, a := range addrs {
			mine[a] = true
		}
		for _, u := range us {
			switch {
			case u.createdChain == "X" && !u.spendableBy(mine):
				// As avm.getAllBalances: a multisig UTXO the addresses
				// cannot spend alone is no balance of theirs.
			case u.createdChain != "X" && u.locktime > now:
				atomicL.add(u.asset+"|"+u.createdChain, u)
			case u.createdChain != "X":
				atomicU.add(u.asset+"|"+u.createdChain, u)
			case u.locktime > now:
				locked.add(u.asset, u)
			default:
				unlocked.add(u.asset, u)
			}
		}
		return BalancesResponse{ChainInfo: info, Balances: XChainBalances{Locked: locked.amounts(as), Unlocked: unlocked.amounts(as),
			AtomicMemoryUnlocked: atomicU.shared(h, as, ""), AtomicMemoryLocked: atomicL.shared(h, as, "")}}, nil
	}
	for _, u := range us {
		if u.locktime > now {
			atomicL.add(u.asset+"|"+u.createdChain, u)
		} else {
			atomicU.add(u.asset+"|"+u.createdChain, u)
		}
	}
	return BalancesResponse{ChainInfo: info, Balances: CChainAtomicBalances{
		AtomicMemoryUnlocked: atomicU.shared(h, as, ""), AtomicMemoryLocked: atomicL.shared(h, as, "")}}, nil
}

// balanceUTXOs reads the fungible UTXOs of addrs spendable on chain: the
// unspent ones at the tip, or (historical) those created by time at and not
// consumed by then, with their staking state at that time. Amounts count
// as avalanchego's getBalance counts them: transfer and stakeable-lock
// outputs (not mint or NFT outputs).
func (h *handlers) balanceUTXOs(ctx context.Context, chain string, addrs []string, at int64, historical bool) ([]balanceUTXO, error) {
	args := []any{chain}
	ph := placeholders(2, len(addrs))
	for _, a := range addrs {
		args = append(args, a)
	}
	var out []balanceUTXO
	if !historical {
		// Plain UTXOs (one owner, no lock, not staked; 0042) come summed
		// per address and asset: a busy address holds 100,000s of them.
		// So do most locked stakes (0185), also flagged plain.
		plain, err := h.plainBalances(ctx, chain, ph, args)
		if err != nil {
			return nil, err
		}
		out = append(out, plain...)
		if chain == "P" {
			// Locked stakes of stakers in the set, summed likewise: a
			// busy staker's address holds thousands.
			staked, err := h.stakeBalances(ctx, ph, args)
			if err != nil {
				return nil, err
			}
			out = append(out, staked...)
		}
	}
	if historical {
		args = append(args, at)
	}
	rows, err := h.d.DB.QueryContext(ctx, balanceUTXOsSQL(len(addrs), historical), args...)
	if err != nil {
		return nil, fmt.Errorf("balances: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var u balanceUTXO
		var start, removedHeight, removedTime int64
		var owners, typ string
		if err := rows.Scan(&u.asset, &u.amount, &u.createdChain, &u.fxType, &u.locktime, &u.stakeableLocktime,
			&u.stakeLocked, &typ, &owners, &u.threshold, &start, &removedHeight, &removedTime); err != nil {
			return nil, fmt.Errorf("balances: %w", err)
		}
		if historical {
			// A stake output is locked from its staker's acceptance
			// until the staker leaves the validator set.
			u.stakeLocked = typ == "STAKE" && start > 0 && (removedHeight < 0 || removedTime > at)
		}
		if err := jsonStrings(owners, &u.owners); err != nil {
			return nil, fmt.Errorf("balances: owners: %w", err)
		}
		u.amount = unpad(u.amount)
		u.pending = u.stakeLocked && start > at
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("balances: %w", err)
	}
	return out, nil
}

// balanceUTXOsSQL selects balanceUTXOs' rows of n addresses ($2..$n+1) on
// chain $1, at time $n+2 when historical. A multisig UTXO of two of the
// addresses is one UTXO.
func balanceUTXOsSQL(n int, historical bool) string {
	where := `u.utxo_id IN (SELECT ua.utxo_id FROM utxo_addresses ua WHERE ua.chain_key = $1 AND ua.address IN (` +
		placeholders(2, n) + `)`
	// A stake output's staker: its start (utxos.stake_start, written with
	// the staker) says pending; when it left matters only in the past, so
	// only a historical balance reads the staker's row.
	staker := `u.stake_start, -1, 0 FROM utxos u`
	if historical {
		where += fmt.Sprintf(`) AND u.created_time <= $%d AND (u.consumed_height < 0 OR u.consumed_time > $%d)`, n+2, n+2)
		staker = `COALESCE(s.start_time, 0), COALESCE(s.removed_height, -1), COALESCE(s.removed_time, 0)
			FROM utxos u LEFT JOIN p_stakers s ON s.tx_id = u.tx_id AND u.utxo_type = 'STAKE' AND u.created_chain = 'P'`
	} else {
		// Literals: the index of these rows is partial (0175), which the
		// planners use only when the query itself implies its WHERE.
		where += ` AND ua.spent = FALSE AND ua.plain = FALSE) AND u.consumed_height < 0`
	}
	return `SELECT u.asset_id, u.amount, u.created_chain, u.fx_type, u.locktime,
		u.stakeable_locktime, u.stake_locked, u.utxo_type, u.addresses, u.threshold, ` + staker + `
		WHERE u.chain_key = $1 AND ` + where + ` AND u.fx_type IN ('secp256k1fx.TransferOutput', 'stakeable.LockOut')`
}
