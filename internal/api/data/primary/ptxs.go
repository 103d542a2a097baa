package primary

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"

	"github.com/ava-labs/avalanchego/ids"
)

// PChainTx is the OpenAPI PChainTransaction.
type PChainTx struct {
	TxHash                         string                `json:"txHash"`
	TxType                         string                `json:"txType"`
	BlockTimestamp                 int64                 `json:"blockTimestamp"`
	BlockNumber                    string                `json:"blockNumber"`
	BlockHash                      string                `json:"blockHash"`
	ConsumedUtxos                  []PChainUtxo          `json:"consumedUtxos"`
	EmittedUtxos                   []PChainUtxo          `json:"emittedUtxos"`
	SourceChain                    string                `json:"sourceChain,omitempty"`
	DestinationChain               string                `json:"destinationChain,omitempty"`
	Value                          []AssetAmount         `json:"value"`
	AmountBurned                   []AssetAmount         `json:"amountBurned"`
	AmountStaked                   []AssetAmount         `json:"amountStaked"`
	AmountL1ValidatorBalanceBurned []AssetAmount         `json:"amountL1ValidatorBalanceBurned"`
	StartTimestamp                 *int64                `json:"startTimestamp,omitempty"`
	EndTimestamp                   *int64                `json:"endTimestamp,omitempty"`
	DelegationFeePercent           string                `json:"delegationFeePercent,omitempty"`
	NodeID                         string                `json:"nodeId,omitempty"`
	SubnetID                       string                `json:"subnetId,omitempty"`
	L1ValidatorManagerDetails      *L1ManagerDetails     `json:"l1ValidatorManagerDetails,omitempty"`
	L1ValidatorDetails             []L1ValidatorTxDetail `json:"l1ValidatorDetails,omitempty"`
	EstimatedReward                string                `json:"estimatedReward,omitempty"`
	RewardTxHash                   string                `json:"rewardTxHash,omitempty"`
	RewardAddresses                []string              `json:"rewardAddresses,omitempty"`
	Memo                           string                `json:"memo,omitempty"`
	StakingTxHash                  string                `json:"stakingTxHash,omitempty"`
	SubnetOwnershipInfo            *SubnetOwnership      `json:"subnetOwnershipInfo,omitempty"`
	BlsCredentials                 *BlsCredentials       `json:"blsCredentials,omitempty"`
	BlockchainInfo                 *BlockchainInfo       `json:"blockchainInfo,omitempty"`

	stakeAsset string // for amountStaked
	burned     string // p_txs.burned, unpadded
}

// L1ManagerDetails is L1ValidatorManagerDetails (ConvertSubnetToL1Tx).
type L1ManagerDetails struct {
	BlockchainID    string `json:"blockchainId"`
	ContractAddress string `json:"contractAddress"`
}

// L1ValidatorTxDetail is L1ValidatorDetailsTransaction: an L1 validator as
// the tx left it.
type L1ValidatorTxDetail struct {
	ValidationID     string         `json:"validationId"`
	ValidationIDHex  string         `json:"validationIdHex"`
	NodeID           string         `json:"nodeId"`
	SubnetID         string         `json:"subnetId"`
	Weight           uint64         `json:"weight"`
	RemainingBalance uint64         `json:"remainingBalance"`
	BalanceChange    *int64         `json:"balanceChange,omitempty"`
	BlsCredentials   map[string]any `json:"blsCredentials,omitempty"`
}

// SubnetOwnership is SubnetOwnershipInfo.
type SubnetOwnership struct {
	Locktime  int64    `json:"locktime"`
	Threshold int64    `json:"threshold"`
	Addresses []string `json:"addresses"`
}

// BlockchainInfo is the OpenAPI BlockchainInfo of a CreateChainTx. As the
// document says, an EVM chain's genesis (a JSON object) is given as an
// object (EvmGenesisDto); any other VM's bytes as a 0x-hex string.
type BlockchainInfo struct {
	ChainName   string          `json:"chainName"`
	VMID        string          `json:"vmId"`
	GenesisData json.RawMessage `json:"genesisData,omitempty"`
}

// idArgs turns ids into query arguments and their placeholders from $1.
func idArgs(ids []string) ([]any, string) {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return args, placeholders(1, len(ids))
}

// pTxs loads P-chain txs by id, in the order of ids, with their UTXOs and
// the facts of their kind (staker, subnet, chain, L1 validators).
func (h *handlers) pTxs(ctx context.Context, as *assets, txIDs []string) ([]PChainTx, error) {
	if len(txIDs) == 0 {
		return []PChainTx{}, nil
	}
	args, in := idArgs(txIDs)
	rows, err := h.d.DB.QueryContext(ctx, `SELECT t.tx_id, t.height, t.block_id, t.timestamp, t.tx_type, t.memo,
		t.source_chain, t.destination_chain, t.reward_staker_tx, COALESCE(p.burned, ''), COALESCE(p.subnet_id, ''),
		COALESCE(p.node_id, ''), t.chain_key
		FROM px_txs t LEFT JOIN p_txs p ON p.tx_id = t.tx_id WHERE t.tx_id IN (`+in+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("load P txs: %w", err)
	}
	byID := map[string]*PChainTx{}
	genesis := false
	var rewardOf []string // staker txs of RewardValidatorTxs
	for rows.Next() {
		var t PChainTx
		var height int64
		var chain string
		if err := rows.Scan(&t.TxHash, &height, &t.BlockHash, &t.BlockTimestamp, &t.TxType, &t.Memo, &t.SourceChain,
			&t.DestinationChain, &t.StakingTxHash, &t.burned, &t.SubnetID, &t.NodeID, &chain); err != nil {
			rows.Close()
			return nil, fmt.Errorf("load P txs: %w", err)
		}
		// The chain is checked here, not in SQL: with it there, SQLite
		// walked px_txs_chain_time (every P tx) instead of the ids.
		if chain != "P" {
			continue
		}
		if height < 0 {
			genesis, height = true, 0
		}
		t.BlockNumber = fmt.Sprint(height)
		t.burned = unpad(t.burned)
		if t.StakingTxHash != "" {
			rewardOf = append(rewardOf, t.StakingTxHash)
		}
		byID[t.TxHash] = &t
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load P txs: %w", err)
	}
	if genesis {
		// Genesis txs (the initial stakers) are the state of block 0.
		var gid string
		if err := h.d.DB.QueryRowContext(ctx, `SELECT block_id FROM px_blocks WHERE chain_key = 'P' AND height = 0`).Scan(&gid); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("genesis block: %w", err)
		}
		for _, t := range byID {
			if t.BlockHash == "" || t.BlockNumber == "0" {
				t.BlockHash = gid
			}
		}
	}

	// Emitted: the tx's own outputs (stake outputs included); a
	// RewardValidatorTx's are the reward UTXOs of its staker.
	emitted, err := queryUTXOs(ctx, h.d.DB, `SELECT `+utxoColumns+` FROM utxos WHERE tx_id IN (`+in+`)
		AND created_chain = 'P' AND reward_type = '' ORDER BY tx_id, output_index`, args...)
	if err != nil {
		return nil, err
	}
	var rewards []*utxoRow
	if len(rewardOf) > 0 {
		rargs, rin := idArgs(rewardOf)
		if rewards, err = queryUTXOs(ctx, h.d.DB, `SELECT `+utxoColumns+` FROM utxos WHERE tx_id IN (`+rin+`)
			AND created_chain = 'P' AND reward_type <> '' ORDER BY tx_id, output_index`, rargs...); err != nil {
			return nil, err
		}
	}
	consumed, err := queryUTXOs(ctx, h.d.DB, `SELECT `+utxoColumns+` FROM utxos WHERE consumed_tx IN (`+in+`)
		ORDER BY consumed_tx, consumed_input_index, utxo_id`, args...)
	if err != nil {
		return nil, err
	}
	all := append(append(append([]*utxoRow{}, emitted...), consumed...), rewards...)
	s, err := h.prepare(ctx, as, all)
	if err != nil {
		return nil, err
	}
	for _, u := range emitted {
		if t := byID[u.TxID]; t != nil {
			t.EmittedUtxos = append(t.EmittedUtxos, s.pUTXO(u))
		}
	}
	for _, t := range byID {
		for _, u := range rewards {
			if t.StakingTxHash != "" && u.TxID == t.StakingTxHash {
				t.EmittedUtxos = append(t.EmittedUtxos, s.pUTXO(u))
			}
		}
	}
	for _, u := range consumed {
		if t := byID[u.ConsumedTx]; t != nil {
			t.ConsumedUtxos = append(t.ConsumedUtxos, s.pUTXO(u))
		}
	}
	// The facts of a kind are read only when the page holds a tx of it.
	kinds := map[string]bool{}
	for _, t := range byID {
		kinds[t.TxType] = true
	}
	anyOf := func(types ...string) bool {
		for _, t := range types {
			if kinds[t] {
				return true
			}
		}
		return false
	}
	if anyOf("AddValidatorTx", "AddDelegatorTx", "AddSubnetValidatorTx", "AddPermissionlessValidatorTx", "AddPermissionlessDelegatorTx") {
		if err := h.pStakerFacts(ctx, byID, in, args); err != nil {
			return nil, err
		}
	}
	if anyOf("CreateSubnetTx", "TransferSubnetOwnershipTx", "ConvertSubnetToL1Tx", "CreateChainTx") {
		if err := h.pSubnetFacts(ctx, byID, in, args); err != nil {
			return nil, err
		}
	}
	if anyOf("ConvertSubnetToL1Tx", "RegisterL1ValidatorTx", "SetL1ValidatorWeightTx", "DisableL1ValidatorTx", "IncreaseL1ValidatorBalanceTx") {
		if err := h.pL1Facts(ctx, byID, in, args); err != nil {
			return nil, err
		}
	}
	avax := h.d.AVAXAssetID
	if err := as.load(ctx, avax); err != nil {
		return nil, err
	}
	out := make([]PChainTx, 0, len(txIDs))
	for _, id := range txIDs {
		t := byID[id]
		if t == nil {
			continue
		}
		if t.EmittedUtxos == nil {
			t.EmittedUtxos = []PChainUtxo{}
		}
		if t.ConsumedUtxos == nil {
			t.ConsumedUtxos = []PChainUtxo{}
		}
		t.Value = sumPAmounts(t.EmittedUtxos, as)
		t.AmountBurned, t.AmountStaked, t.AmountL1ValidatorBalanceBurned = []AssetAmount{}, []AssetAmount{}, []AssetAmount{}
		burned := decimal(t.burned)
		if burned.Sign() > 0 {
			t.AmountBurned = append(t.AmountBurned, as.amount(avax, burned.String()))
		}
		if t.stakeAsset != "" {
			var staked *big.Int
			for _, u := range t.EmittedUtxos {
				if u.UtxoType == "STAKE" {
					if staked == nil {
						staked = new(big.Int)
					}
					staked.Add(staked, decimal(u.Amount))
				}
			}
			if staked != nil {
				t.AmountStaked = append(t.AmountStaked, as.amount(t.stakeAsset, staked.String()))
			}
		}
		// What AVAX the tx consumed and neither produced, staked nor
		// burned went to L1 validator balances (p_txs.burned excludes it).
		if t.StakingTxHash == "" {
			l1 := new(big.Int)
			for _, u := range t.ConsumedUtxos {
				if u.AssetID == avax {
					l1.Add(l1, decimal(u.Amount))
				}
			}
			for _, u := range t.EmittedUtxos {
				if u.AssetID == avax {
					l1.Sub(l1, decimal(u.Amount))
				}
			}
			l1.Sub(l1, burned)
			if l1.Sign() > 0 {
				t.AmountL1ValidatorBalanceBurned = append(t.AmountL1ValidatorBalanceBurned, as.amount(avax, l1.String()))
			}
		}
		out = append(out, *t)
	}
	return out, nil
}

// sumPAmounts totals P-chain UTXO amounts per asset, in order of first appearance.
func sumPAmounts(us []PChainUtxo, as *assets) []AssetAmount {
	tmp := make([]Utxo, len(us))
	for i, u := range us {
		tmp[i].Asset = as.amount(u.AssetID, u.Amount)
	}
	return sumAmounts(tmp)
}

// pStakerFacts adds what p_stakers knows of the staker txs among byID.
func (h *handlers) pStakerFacts(ctx context.Context, byID map[string]*PChainTx, in string, args []any) error {
	rows, err := h.d.DB.QueryContext(ctx, `SELECT tx_id, kind, subnet_id, node_id, stake_asset, start_time, end_time,
		delegation_shares, bls_public_key, bls_pop, validation_reward_owner, reward_owner, potential_reward, removal,
		removal_tx_id FROM p_stakers WHERE tx_id IN (`+in+`)`, args...)
	if err != nil {
		return fmt.Errorf("load stakers: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id, kind, subnet, node, asset, key, pop, vOwner, rOwner, potential, removal, removalTx string
			start, end, shares                                                                     int64
		)
		if err := rows.Scan(&id, &kind, &subnet, &node, &asset, &start, &end, &shares, &key, &pop, &vOwner, &rOwner,
			&potential, &removal, &removalTx); err != nil {
			return fmt.Errorf("load stakers: %w", err)
		}
		t := byID[id]
		if t == nil {
			continue
		}
		t.SubnetID, t.NodeID, t.stakeAsset = subnet, node, asset
		t.StartTimestamp, t.EndTimestamp = &start, &end
		if kind == "VALIDATOR" {
			t.DelegationFeePercent = feeText(shares)
		}
		if kind != "SUBNET_VALIDATOR" {
			t.EstimatedReward = unpad(potential)
			owner := vOwner
			if kind == "DELEGATOR" {
				owner = rOwner
			}
			if t.RewardAddresses, err = ownerAddresses(owner); err != nil {
				return err
			}
			if removal == "REWARDED" || removal == "NOT_REWARDED" {
				t.RewardTxHash = removalTx
			}
		}
		if key != "" {
			t.BlsCredentials = &BlsCredentials{PublicKey: key, ProofOfPossession: pop}
		}
	}
	return rows.Err()
}

// pSubnetFacts adds owners (CreateSubnetTx, TransferSubnetOwnershipTx), the
// L1 manager (ConvertSubnetToL1Tx) and created chains (CreateChainTx).
func (h *handlers) pSubnetFacts(ctx context.Context, byID map[string]*PChainTx, in string, args []any) error {
	rows, err := h.d.DB.QueryContext(ctx, `SELECT tx_id, subnet_id, threshold, locktime, addresses FROM p_subnet_owners
		WHERE tx_id IN (`+in+`)`, args...)
	if err != nil {
		return fmt.Errorf("load subnet owners: %w", err)
	}
	for rows.Next() {
		var id, subnet, addrs string
		var o SubnetOwnership
		if err := rows.Scan(&id, &subnet, &o.Threshold, &o.Locktime, &addrs); err != nil {
			rows.Close()
			return fmt.Errorf("load subnet owners: %w", err)
		}
		if err := jsonStrings(addrs, &o.Addresses); err != nil {
			rows.Close()
			return fmt.Errorf("owners of %s: %w", subnet, err)
		}
		if t := byID[id]; t != nil {
			t.SubnetOwnershipInfo, t.SubnetID = &o, subnet
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load subnet owners: %w", err)
	}
	rows, err = h.d.DB.QueryContext(ctx, `SELECT conversion_tx_id, subnet_id, manager_chain_id, manager_address FROM p_subnets
		WHERE conversion_tx_id IN (`+in+`)`, args...)
	if err != nil {
		return fmt.Errorf("load conversions: %w", err)
	}
	for rows.Next() {
		var id, subnet string
		var m L1ManagerDetails
		if err := rows.Scan(&id, &subnet, &m.BlockchainID, &m.ContractAddress); err != nil {
			rows.Close()
			return fmt.Errorf("load conversions: %w", err)
		}
		if t := byID[id]; t != nil {
			t.L1ValidatorManagerDetails, t.SubnetID = &m, subnet
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load conversions: %w", err)
	}
	// A CreateChainTx's id is the new chain's id.
	rows, err = h.d.DB.QueryContext(ctx, `SELECT blockchain_id, name, subnet_id, vm_id, genesis_data FROM p_blockchains
		WHERE blockchain_id IN (`+in+`)`, args...)
	if err != nil {
		return fmt.Errorf("load chains: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, subnet string
		var b BlockchainInfo
		var genesis []byte
		if err := rows.Scan(&id, &b.ChainName, &subnet, &b.VMID, &genesis); err != nil {
			return fmt.Errorf("load chains: %w", err)
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(genesis, &obj) == nil && obj != nil {
			b.GenesisData = genesis
		} else if len(genesis) > 0 {
			b.GenesisData, _ = json.Marshal("0x" + hex.EncodeToString(genesis))
		}
		if t := byID[id]; t != nil && t.TxType == "CreateChainTx" {
			t.BlockchainInfo, t.SubnetID = &b, subnet
		}
	}
	return rows.Err()
}

// pL1Facts adds the L1 validators each tx registered or changed, as the tx
// left them (p_l1_validator_history).
func (h *handlers) pL1Facts(ctx context.Context, byID map[string]*PChainTx, in string, args []any) error {
	rows, err := h.d.DB.QueryContext(ctx, `SELECT x.tx_id, x.validation_id, v.node_id, v.subnet_id, v.public_key, x.weight,
		x.balance, x.end_accumulated_fee, x.height, x.seq,
		COALESCE((SELECT y.end_accumulated_fee FROM p_l1_validator_history y WHERE y.validation_id = x.validation_id
			AND (y.height < x.height OR (y.height = x.height AND y.seq < x.seq)) ORDER BY y.height DESC, y.seq DESC LIMIT 1), '')
		FROM p_l1_validator_history x JOIN p_l1_validators v ON v.validation_id = x.validation_id
		WHERE x.tx_id IN (`+in+`) ORDER BY x.tx_id, x.height, x.seq`, args...)
	if err != nil {
		return fmt.Errorf("load L1 validator changes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			txID, vid, node, subnet, key, weight, balance, eaf, prevEAF string
			height, seq                                                 int64
		)
		if err := rows.Scan(&txID, &vid, &node, &subnet, &key, &weight, &balance, &eaf, &height, &seq, &prevEAF); err != nil {
			return fmt.Errorf("load L1 validator changes: %w", err)
		}
		t := byID[txID]
		if t == nil {
			continue
		}
		id, err := ids.FromString(vid)
		if err != nil {
			return fmt.Errorf("stored validation id %q: %w", vid, err)
		}
		d := L1ValidatorTxDetail{ValidationID: vid, ValidationIDHex: "0x" + hex.EncodeToString(id[:]), NodeID: node,
			SubnetID: subnet, Weight: decimal(unpad(weight)).Uint64(), RemainingBalance: decimal(unpad(balance)).Uint64(),
			BlsCredentials: map[string]any{"publicKey": key}}
		// The balance a tx adds is the rise of the validator's fee budget
		// (end_accumulated_fee); a new validator's is its whole balance.
		e, p := decimal(unpad(eaf)), decimal(unpad(prevEAF))
		switch {
		case prevEAF == "":
			c := int64(d.RemainingBalance)
			d.BalanceChange = &c
		case e.Sign() > 0 && p.Sign() > 0:
			c := new(big.Int).Sub(e, p).Int64()
			d.BalanceChange = &c
		}
		t.L1ValidatorDetails = append(t.L1ValidatorDetails, d)
		if t.SubnetID == "" {
			t.SubnetID = subnet
		}
	}
	return rows.Err()
}
