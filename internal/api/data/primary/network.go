package primary

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/ava-labs/avalanchego/utils/constants"

	"github.com/permafrost-dev/permafrost/internal/api"
)

// Page sizes of the network-wide listings (blockchains, subnets), as the
// published document gives them.
const (
	defaultNetworkPageSize = 100
	maxNetworkPageSize     = 10000
)

// Blockchain is the OpenAPI Blockchain: a chain created by a CreateChainTx
// (or the X- and C-chains of the genesis), as p_blockchains holds it. The
// P-chain is created by no transaction and, as platform.getBlockchains, is
// not listed.
type Blockchain struct {
	CreateBlockTimestamp int64  `json:"createBlockTimestamp"`
	CreateBlockNumber    string `json:"createBlockNumber"`
	BlockchainID         string `json:"blockchainId"`
	VMID                 string `json:"vmId"`
	SubnetID             string `json:"subnetId"`
	BlockchainName       string `json:"blockchainName"`
	EVMChainID           *int64 `json:"evmChainId,omitempty"`
	// GenesisData is an EVM chain's genesis as the object its genesis file
	// holds (the document's EvmGenesisDto branch), another JSON genesis as
	// the raw JSON string (its string branch); binary genesis is left out.
	GenesisData json.RawMessage `json:"genesisData,omitempty"`
}

// ListBlockchainsResponse is ListBlockchainsResponse.
type ListBlockchainsResponse struct {
	NextPageToken string       `json:"nextPageToken,omitempty"`
	Blockchains   []Blockchain `json:"blockchains"`
}

// Subnet is the OpenAPI Subnet at the indexed tip.
type Subnet struct {
	CreateBlockTimestamp        int64               `json:"createBlockTimestamp"`
	CreateBlockIndex            string              `json:"createBlockIndex"`
	SubnetID                    string              `json:"subnetId"`
	OwnerAddresses              []string            `json:"ownerAddresses"`
	Threshold                   int64               `json:"threshold"`
	Locktime                    int64               `json:"locktime"`
	SubnetOwnershipInfo         SubnetOwnershipInfo `json:"subnetOwnershipInfo"`
	IsL1                        bool                `json:"isL1"`
	L1ConversionTransactionHash string              `json:"l1ConversionTransactionHash,omitempty"`
	L1ValidatorManagerDetails   *L1ValidatorManager `json:"l1ValidatorManagerDetails,omitempty"`
	Blockchains                 []Blockchain        `json:"blockchains"`
}

// SubnetOwnershipInfo is the subnet's current owner (CreateSubnetTx, or the
// last TransferSubnetOwnershipTx).
type SubnetOwnershipInfo struct {
	Locktime  int64    `json:"locktime"`
	Threshold int64    `json:"threshold"`
	Addresses []string `json:"addresses"`
}

// L1ValidatorManager is L1ValidatorManagerDetails (ConvertSubnetToL1Tx).
type L1ValidatorManager struct {
	BlockchainID    string `json:"blockchainId"`
	ContractAddress string `json:"contractAddress"`
}

// ListSubnetsResponse is ListSubnetsResponse.
type ListSubnetsResponse struct {
	NextPageToken string   `json:"nextPageToken,omitempty"`
	Subnets       []Subnet `json:"subnets"`
}

// createdCursor is the last item of a page ordered by (creation time, id).
type createdCursor struct {
	T  int64  `json:"t"`
	ID string `json:"id"`
}

// keysetAfter is the SQL condition of the items after cur in order
// (columns timeCol, idCol), with its two arguments numbered from n.
func keysetAfter(order, timeCol, idCol string, n int) string {
	op := ">"
	if order == "desc" {
		op = "<"
	}
	return fmt.Sprintf("(%s, %s) %s ($%d, $%d)", timeCol, idCol, op, n, n+1)
}

const blockchainColumns = `blockchain_id, name, subnet_id, vm_id, genesis_data, created_height, created_time`

// scanBlockchain reads one p_blockchains row (blockchainColumns).
func scanBlockchain(rows interface{ Scan(...any) error }) (Blockchain, error) {
	var (
		b       Blockchain
		genesis []byte
		height  int64
	)
	if err := rows.Scan(&b.BlockchainID, &b.BlockchainName, &b.SubnetID, &b.VMID, &genesis, &height, &b.CreateBlockTimestamp); err != nil {
		return Blockchain{}, fmt.Errorf("read blockchain: %w", err)
	}
	b.CreateBlockNumber = strconv.FormatInt(height, 10)
	if !json.Valid(genesis) {
		return b, nil
	}
	// EVM genesis (C-chain, subnet-evm) is a JSON object with config.chainId.
	var g struct {
		Config struct {
			ChainID *big.Int `json:"chainId"`
		} `json:"config"`
	}
	if json.Unmarshal(genesis, &g) == nil && g.Config.ChainID != nil && g.Config.ChainID.IsInt64() {
		id := g.Config.ChainID.Int64()
		b.EVMChainID = &id
		b.GenesisData = json.RawMessage(genesis)
		return b, nil
	}
	s, err := json.Marshal(string(genesis))
	if err != nil {
		return Blockchain{}, fmt.Errorf("blockchain %s genesis: %w", b.BlockchainID, err)
	}
	b.GenesisData = s
	return b, nil
}

// networkList reads the parameters every network-wide listing takes:
// pageSize (1..10000, default 100), sortOrder (by creation time, default
// asc: oldest first, like the node's lists) and pageToken.
func (h *handlers) networkList(r *http.Request, route string) (q *request, size int, order string, cur *createdCursor, err error) {
	q, err = h.begin(r, false)
	if err != nil {
		return nil, 0, "", nil, err
	}
	size = q.p.PageSize(defaultNetworkPageSize, 1, maxNetworkPageSize)
	order = sortOrder(q.p, "asc")
	var c createdCursor
	has, err := h.decodeCursor(q, route, &c)
	if err != nil {
		return nil, 0, "", nil, err
	}
	if err := q.p.Err(); err != nil {
		return nil, 0, "", nil, err
	}
	if err := h.checkChain(r.Context(), "P"); err != nil {
		return nil, 0, "", nil, err
	}
	if has {
		cur = &c
	}
	return q, size, order, cur, nil
}

// listBlockchains answers listBlockchains: every chain of p_blockchains by
// (creation time, blockchain id).
func (h *handlers) listBlockchains(r *http.Request) (any, error) {
	q, size, order, cur, err := h.networkList(r, routeBlockchains)
	if err != nil {
		return nil, err
	}
	where, args := "1 = 1", []any{}
	if cur != nil {
		where, args = keysetAfter(order, "created_time", "blockchain_id", 1), []any{cur.T, cur.ID}
	}
	ctx := r.Context()
	rows, err := h.d.DB.QueryContext(ctx, `SELECT `+blockchainColumns+` FROM p_blockchains WHERE `+where+
		` ORDER BY created_time `+order+`, blockchain_id `+order+` LIMIT `+strconv.Itoa(size+1), args...)
	if err != nil {
		return nil, fmt.Errorf("list blockchains: %w", err)
	}
	defer rows.Close()
	out := ListBlockchainsResponse{Blockchains: []Blockchain{}}
	for rows.Next() {
		b, err := scanBlockchain(rows)
		if err != nil {
			return nil, err
		}
		if len(out.Blockchains) == size {
			last := out.Blockchains[size-1]
			out.NextPageToken = h.encodeCursor(q, routeBlockchains, createdCursor{T: last.CreateBlockTimestamp, ID: last.BlockchainID})
			break
		}
		out.Blockchains = append(out.Blockchains, b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list blockchains: %w", err)
	}
	return out, nil
}

// getBlockchainByID answers getBlockchainById.
func (h *handlers) getBlockchainByID(r *http.Request) (any, error) {
	q, err := h.begin(r, false)
	if err != nil {
		return nil, err
	}
	id := r.PathValue("blockchainId")
	if _, err := api.ParseCB58ID(id); err != nil {
		return nil, api.BadRequest("blockchainId: " + err.Error())
	}
	ctx := r.Context()
	if err := h.checkChain(ctx, "P"); err != nil {
		return nil, err
	}
	b, err := scanBlockchain(h.d.DB.QueryRowContext(ctx, `SELECT `+blockchainColumns+` FROM p_blockchains WHERE blockchain_id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, api.NotFound("blockchainId: %s is not a blockchain created on the P-chain of network %s", id, q.network)
	}
	if err != nil {
		return nil, err
	}
	return b, nil
}

const subnetColumns = `subnet_id, created_height, created_time, owner_threshold, owner_locktime, owner_addresses,
	conversion_tx_id, manager_chain_id, manager_address`

// scanSubnet reads one p_subnets row (subnetColumns), without its chains.
func scanSubnet(rows interface{ Scan(...any) error }) (Subnet, error) {
	var (
		s      Subnet
		height int64
		owners string
		conv   string
		mChain string
		mAddr  string
	)
	if err := rows.Scan(&s.SubnetID, &height, &s.CreateBlockTimestamp, &s.Threshold, &s.Locktime, &owners, &conv, &mChain, &mAddr); err != nil {
		return Subnet{}, fmt.Errorf("read subnet: %w", err)
	}
	s.CreateBlockIndex = strconv.FormatInt(height, 10)
	if err := json.Unmarshal([]byte(owners), &s.OwnerAddresses); err != nil {
		return Subnet{}, fmt.Errorf("subnet %s owners: %w", s.SubnetID, err)
	}
	if s.OwnerAddresses == nil {
		s.OwnerAddresses = []string{}
	}
	s.SubnetOwnershipInfo = SubnetOwnershipInfo{Locktime: s.Locktime, Threshold: s.Threshold, Addresses: s.OwnerAddresses}
	if conv != "" {
		s.IsL1 = true
		s.L1ConversionTransactionHash = conv
		s.L1ValidatorManagerDetails = &L1ValidatorManager{BlockchainID: mChain, ContractAddress: mAddr}
	}
	s.Blockchains = []Blockchain{}
	return s, nil
}

// withBlockchains fills the chains of each subnet (by creation order).
func (h *handlers) withBlockchains(ctx context.Context, subnets []Subnet) error {
	if len(subnets) == 0 {
		return nil
	}
	at := map[string]int{}
	args := make([]any, len(subnets))
	for i, s := range subnets {
		at[s.SubnetID] = i
		args[i] = s.SubnetID
	}
	rows, err := h.d.DB.QueryContext(ctx, `SELECT `+blockchainColumns+` FROM p_blockchains WHERE subnet_id IN (`+
		placeholders(1, len(args))+`) ORDER BY created_time, blockchain_id`, args...)
	if err != nil {
		return fmt.Errorf("blockchains of subnets: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		b, err := scanBlockchain(rows)
		if err != nil {
			return err
		}
		s := &subnets[at[b.SubnetID]]
		s.Blockchains = append(s.Blockchains, b)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("blockchains of subnets: %w", err)
	}
	return nil
}

// listSubnets answers listSubnets: every subnet of p_subnets (the primary
// network included, as platform.getSubnets lists it) by (creation time,
// subnet id).
func (h *handlers) listSubnets(r *http.Request) (any, error) {
	q, size, order, cur, err := h.networkList(r, routeSubnets)
	if err != nil {
		return nil, err
	}
	where, args := "1 = 1", []any{}
	if cur != nil {
		where, args = keysetAfter(order, "created_time", "subnet_id", 1), []any{cur.T, cur.ID}
	}
	ctx := r.Context()
	rows, err := h.d.DB.QueryContext(ctx, `SELECT `+subnetColumns+` FROM p_subnets WHERE `+where+
		` ORDER BY created_time `+order+`, subnet_id `+order+` LIMIT `+strconv.Itoa(size+1), args...)
	if err != nil {
		return nil, fmt.Errorf("list subnets: %w", err)
	}
	defer rows.Close()
	out := ListSubnetsResponse{Subnets: []Subnet{}}
	for rows.Next() {
		s, err := scanSubnet(rows)
		if err != nil {
			return nil, err
		}
		if len(out.Subnets) == size {
			last := out.Subnets[size-1]
			out.NextPageToken = h.encodeCursor(q, routeSubnets, createdCursor{T: last.CreateBlockTimestamp, ID: last.SubnetID})
			break
		}
		out.Subnets = append(out.Subnets, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list subnets: %w", err)
	}
	rows.Close()
	if err := h.withBlockchains(ctx, out.Subnets); err != nil {
		return nil, err
	}
	return out, nil
}

// getSubnetByID answers getSubnetById.
func (h *handlers) getSubnetByID(r *http.Request) (any, error) {
	q, err := h.begin(r, false)
	if err != nil {
		return nil, err
	}
	id := r.PathValue("subnetId")
	if _, err := api.ParseCB58ID(id); err != nil {
		return nil, api.BadRequest("subnetId: " + err.Error())
	}
	ctx := r.Context()
	if err := h.checkChain(ctx, "P"); err != nil {
		return nil, err
	}
	s, err := scanSubnet(h.d.DB.QueryRowContext(ctx, `SELECT `+subnetColumns+` FROM p_subnets WHERE subnet_id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, api.NotFound("subnetId: %s is not a subnet of network %s", id, q.network)
	}
	if err != nil {
		return nil, err
	}
	list := []Subnet{s}
	if err := h.withBlockchains(ctx, list); err != nil {
		return nil, err
	}
	return list[0], nil
}

// NetworkDetails is GetNetworkDetailsResponse.
type NetworkDetails struct {
	ValidatorDetails ValidatorsDetails `json:"validatorDetails"`
	DelegatorDetails DelegatorsDetails `json:"delegatorDetails"`
}

// ValidatorsDetails is the active primary-network validators at the tip.
type ValidatorsDetails struct {
	ValidatorCount               int64                 `json:"validatorCount"`
	TotalAmountStaked            string                `json:"totalAmountStaked"`
	EstimatedAnnualStakingReward string                `json:"estimatedAnnualStakingReward"`
	StakingDistributionByVersion []StakingDistribution `json:"stakingDistributionByVersion"`
	StakingRatio                 string                `json:"stakingRatio"`
}

// StakingDistribution is the stake of the validators running one version.
type StakingDistribution struct {
	Version        string `json:"version"`
	AmountStaked   string `json:"amountStaked"`
	ValidatorCount int64  `json:"validatorCount"`
}

// DelegatorsDetails is the active primary-network delegators at the tip.
type DelegatorsDetails struct {
	DelegatorCount    int64  `json:"delegatorCount"`
	TotalAmountStaked string `json:"totalAmountStaked"`
}

// activeStakers are the stakers of subnet $1 active at tip time $2.
const activeStakers = `subnet_id = $1 AND removed_height < 0 AND start_time <= $2`

// activeStakerSums counts and sums the active validators and delegators of
// subnet $1 at $2, in SQL: the active set is thousands of rows on mainnet
// (a few amounts each below 2^63: all of them are part of the supply), read
// from one covering index (0177).
const activeStakerSums = `SELECT kind, COUNT(*), CAST(SUM(CAST(stake_amount AS BIGINT)) AS TEXT),
	CAST(SUM(CAST(potential_reward AS BIGINT)) AS TEXT)
	FROM p_stakers WHERE ` + activeStakers + ` AND kind IN ('VALIDATOR', 'DELEGATOR') GROUP BY kind`

// stakeSums is activeStakerSums' answer at one P-chain tip.
type stakeSums struct {
	height, time           int64
	vCount, dCount         int64
	vStake, dStake, reward *big.Int // never changed once made: requests share them
}

// tipSums keeps the last stakeSums: the active set changes only with the
// P-chain's tip (its blocks add and remove stakers, its time starts them),
// and reading it walks every active staker (22,235 index entries at x5px:
// 5 ms of PostgreSQL's CPU, the costliest primary-network request), while
// the route is asked far more often than the tip moves.
type tipSums struct {
	mu   sync.Mutex
	last *stakeSums
}

// activeSums counts and sums the primary network's stakers active at the
// tip (height, tipTime), from tipSums when it holds that tip.
func (h *handlers) activeSums(ctx context.Context, height, tipTime int64) (*stakeSums, error) {
	h.sums.mu.Lock()
	last := h.sums.last
	h.sums.mu.Unlock()
	if last != nil && last.height == height && last.time == tipTime {
		return last, nil
	}
	rows, err := h.d.DB.QueryContext(ctx, activeStakerSums, constants.PrimaryNetworkID.String(), tipTime)
	if err != nil {
		return nil, fmt.Errorf("active stakers: %w", err)
	}
	defer rows.Close()
	out := &stakeSums{height: height, time: tipTime, vStake: new(big.Int), dStake: new(big.Int), reward: new(big.Int)}
	for rows.Next() {
		var (
			kind             string
			n                int64
			stake, potential string
		)
		if err := rows.Scan(&kind, &n, &stake, &potential); err != nil {
			return nil, fmt.Errorf("active stakers: %w", err)
		}
		st, ok1 := new(big.Int).SetString(stake, 10)
		pr, ok2 := new(big.Int).SetString(potential, 10)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("active %s stake sums %q, %q", kind, stake, potential)
		}
		out.reward.Add(out.reward, pr)
		if kind == "VALIDATOR" {
			out.vCount, out.vStake = n, st
		} else {
			out.dCount, out.dStake = n, st
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("active stakers: %w", err)
	}
	h.sums.mu.Lock()
	h.sums.last = out
	h.sums.mu.Unlock()
	return out, nil
}

// getNetworkDetails answers getNetworkDetails from the primary-network
// stakers active at the indexed tip (started by the tip's time, not yet
// removed), as platform.getCurrentValidators lists them:
// estimatedAnnualStakingReward is the sum of their potential rewards (the
// document: "total potential rewards from currently active validations and
// delegations"), stakingRatio is their stake over the tip's current supply,
// and the distribution by version is what our node observes (Deps.Node;
// validators it does not report are counted under "unknown"; empty without
// a node).
func (h *handlers) getNetworkDetails(r *http.Request) (any, error) {
	q, err := h.begin(r, false)
	if err != nil {
		return nil, err
	}
	if err := q.p.Err(); err != nil {
		return nil, err
	}
	ctx := r.Context()
	if err := h.checkChain(ctx, "P"); err != nil {
		return nil, err
	}
	height, tipTime, ok, err := tip(ctx, h.d.DB, "P")
	if err != nil {
		return nil, err
	}
	out := NetworkDetails{
		ValidatorDetails: ValidatorsDetails{TotalAmountStaked: "0", EstimatedAnnualStakingReward: "0",
			StakingDistributionByVersion: []StakingDistribution{}, StakingRatio: "0"},
		DelegatorDetails: DelegatorsDetails{TotalAmountStaked: "0"},
	}
	if !ok {
		return out, nil
	}
	primaryID := constants.PrimaryNetworkID.String()
	sums, err := h.activeSums(ctx, height, tipTime)
	if err != nil {
		return nil, err
	}
	vStake, dStake := sums.vStake, sums.dStake
	out.ValidatorDetails.ValidatorCount, out.DelegatorDetails.DelegatorCount = sums.vCount, sums.dCount
	out.ValidatorDetails.TotalAmountStaked = vStake.String()
	out.DelegatorDetails.TotalAmountStaked = dStake.String()
	out.ValidatorDetails.EstimatedAnnualStakingReward = sums.reward.String()

	var supply string
	err = h.d.DB.QueryRowContext(ctx, `SELECT current_supply FROM p_block_state WHERE height = $1`, height).Scan(&supply)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("current supply: %w", err)
	}
	if s, ok := new(big.Int).SetString(unpad(supply), 10); ok && s.Sign() > 0 {
		ratio := new(big.Rat).SetFrac(new(big.Int).Add(vStake, dStake), s)
		out.ValidatorDetails.StakingRatio = trimDecimal(ratio.FloatString(18))
	}

	if h.d.Node == nil || out.ValidatorDetails.ValidatorCount == 0 {
		return out, nil
	}
	obs, err := h.d.Node.Validators(ctx)
	if err != nil {
		h.d.Log.Debug("network details without versions: node unavailable", "err", err)
		return out, nil
	}
	byNode := map[string]*big.Int{}
	vrows, err := h.d.DB.QueryContext(ctx, `SELECT node_id, stake_amount FROM p_stakers WHERE `+activeStakers+` AND kind = 'VALIDATOR'`,
		primaryID, tipTime)
	if err != nil {
		return nil, fmt.Errorf("active validators: %w", err)
	}
	defer vrows.Close()
	for vrows.Next() {
		var node, stake string
		if err := vrows.Scan(&node, &stake); err != nil {
			return nil, fmt.Errorf("active validators: %w", err)
		}
		amount, ok := new(big.Int).SetString(unpad(stake), 10)
		if !ok {
			return nil, fmt.Errorf("validator %s: stored stake %q", node, stake)
		}
		byNode[node] = amount
	}
	if err := vrows.Err(); err != nil {
		return nil, fmt.Errorf("active validators: %w", err)
	}
	out.ValidatorDetails.StakingDistributionByVersion = byVersion(byNode, obs)
	return out, nil
}

// byVersion groups validators' stake by the version our node reports.
func byVersion(byNode map[string]*big.Int, obs map[string]Observed) []StakingDistribution {
	type acc struct {
		stake *big.Int
		n     int64
	}
	m := map[string]*acc{}
	for node, stake := range byNode {
		v := "unknown"
		if o, ok := obs[node]; ok && o.Version != "" {
			v = o.Version
		}
		if m[v] == nil {
			m[v] = &acc{stake: new(big.Int)}
		}
		m[v].stake.Add(m[v].stake, stake)
		m[v].n++
	}
	out := make([]StakingDistribution, 0, len(m))
	for v, a := range m {
		out = append(out, StakingDistribution{Version: v, AmountStaked: a.stake.String(), ValidatorCount: a.n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out
}

// trimDecimal drops trailing zeros of a fraction ("0.500" -> "0.5", "1.000" -> "1").
func trimDecimal(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// ChainIDsResponse is ChainAddressChainIdMapListResponse.
type ChainIDsResponse struct {
	Addresses []AddressChains `json:"addresses"`
}

// AddressChains is ChainAddressChainIdMap.
type AddressChains struct {
	Address       string   `json:"address"`
	BlockchainIDs []string `json:"blockchainIds"`
}

// documentedChainIDs are the values of the document's BlockchainIds enum:
// the P-chain id (the same on every network) and the X- and C-chain ids
// of mainnet and fuji.
var documentedChainIDs = map[string]bool{
	"11111111111111111111111111111111LpoYY":              true,
	"2oYMBNV4eNHyqk2fjjV5nVQLDbtmNJzq5s3qs3Lo6ftnC6FByM": true,
	"2JVSBoinj9C2J33VntvzYtVJNZdN2NKiwwKjcumHUWEb5DbBrm": true,
	"2q9e4r6Mu3U68nU1fYjgbR6JvwrRx36CohpAX5UQxse55x1Q5":  true,
	"yH8D7ThNJkxmtkuv2jgBa4P1Rn3Qpr4pPr7QYNfcdoS6k6HWp":  true,
}

// getChainIDsForAddresses answers getChainIdsForAddresses: for each
// address, the primary-network chains (P, X, and the C-chain's atomic txs)
// where a tx touched it (px_tx_addresses). The document's BlockchainIds is
// a closed enum of mainnet and fuji ids: on another network the X- and
// C-chain ids cannot be expressed, so only the chains whose id the enum
// holds are listed (see docs/operations.md).
func (h *handlers) getChainIDsForAddresses(r *http.Request) (any, error) {
	q, err := h.begin(r, false)
	if err != nil {
		return nil, err
	}
	addrs := h.addressesParam(q.p, "addresses")
	if len(addrs) == 0 && q.p.Err() == nil {
		q.p.Fail("addresses is required (a comma-separated list of P- or X-chain addresses)")
	}
	if err := q.p.Err(); err != nil {
		return nil, err
	}
	ctx := r.Context()
	out := ChainIDsResponse{Addresses: make([]AddressChains, 0, len(addrs))}
	for _, a := range addrs {
		item := AddressChains{Address: a, BlockchainIDs: []string{}}
		for _, key := range []string{"P", "X", "C"} {
			id := h.blockchainID(key)
			if id == "" || !documentedChainIDs[id] {
				continue
			}
			var one int
			err := h.d.DB.QueryRowContext(ctx, `SELECT 1 FROM px_tx_addresses WHERE address = $1 AND chain_key = $2 LIMIT 1`, a, key).Scan(&one)
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("chains of %s: %w", a, err)
			}
			item.BlockchainIDs = append(item.BlockchainIDs, id)
		}
		out.Addresses = append(out.Addresses, item)
	}
	return out, nil
}
