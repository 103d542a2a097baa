package platform

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/ava-labs/avalanchego/database"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/formatting/address"
	"github.com/ava-labs/avalanchego/utils/set"
	"github.com/ava-labs/avalanchego/vms/components/avax"
	"github.com/ava-labs/avalanchego/vms/platformvm"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"

	safemath "github.com/ava-labs/avalanchego/utils/math"

	"github.com/permafrost-dev/permafrost/internal/decode/proposervm"
	"github.com/permafrost-dev/permafrost/internal/ingest"
)

// errNotIndexed: nothing of the P-chain is indexed yet.
var errNotIndexed = errors.New("the index holds no P-chain block yet")

// Values of the pchain indexer's tables (migrations/0003_pchain.sql).
const (
	kindValidator       = "VALIDATOR"
	kindDelegator       = "DELEGATOR"
	kindSubnetValidator = "SUBNET_VALIDATOR"
	removalNotRewarded  = "NOT_REWARDED"
	removalRewarded     = "REWARDED"
)

// tipState is the height a "current" answer is given for.
type tipState struct {
	height uint64 // the last indexed (accepted) block
	state  uint64 // the height whose state holds: height, or its parent for a proposal block
}

// tip reads the indexed P tip.
func (s *Service) tip(ctx context.Context) (tipState, error) {
	var (
		h   int64
		typ string
	)
	err := s.db.QueryRowContext(ctx, `SELECT height, block_type FROM px_blocks WHERE chain_key = 'P'
		ORDER BY height DESC LIMIT 1`).Scan(&h, &typ)
	if errors.Is(err, sql.ErrNoRows) {
		return tipState{}, errNotIndexed
	}
	if err != nil {
		return tipState{}, fmt.Errorf("P tip: %w", err)
	}
	return tipState{height: uint64(h), state: stateHeight(uint64(h), typ)}, nil
}

// stateHeight is the height whose state holds after accepting block h of
// type typ: a proposal block's changes are written with its option block.
func stateHeight(h uint64, typ string) uint64 {
	if h > 0 && isProposal(typ) {
		return h - 1
	}
	return h
}

func isProposal(blockType string) bool {
	return blockType == "BanffProposalBlock" || blockType == "ApricotProposalBlock"
}

// stateAt resolves an arbitrary indexed height to its state height.
func (s *Service) stateAt(ctx context.Context, h uint64) (uint64, error) {
	if h > math.MaxInt64 {
		return 0, database.ErrNotFound
	}
	var typ string
	err := s.db.QueryRowContext(ctx, `SELECT block_type FROM px_blocks WHERE chain_key = 'P' AND height = $1`, int64(h)).Scan(&typ)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, database.ErrNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("P block %d: %w", h, err)
	}
	return stateHeight(h, typ), nil
}

// blockAt returns the ID and codec bytes of P block h; database.ErrNotFound
// when not indexed.
func (s *Service) blockAt(ctx context.Context, h uint64) (ids.ID, []byte, error) {
	if h > math.MaxInt64 {
		return ids.Empty, nil, database.ErrNotFound
	}
	var (
		hash string
		body []byte
		enc  ingest.RawEncoding
	)
	err := s.db.QueryRowContext(ctx, `SELECT hash, body, encoding FROM raw_blocks WHERE chain_key = 'P' AND height = $1`, int64(h)).Scan(&hash, &body, &enc)
	if errors.Is(err, sql.ErrNoRows) {
		return ids.Empty, nil, database.ErrNotFound
	}
	if err != nil {
		return ids.Empty, nil, fmt.Errorf("P block %d: %w", h, err)
	}
	id, err := ids.FromString(hash)
	if err != nil {
		return ids.Empty, nil, fmt.Errorf("stored block id %q at %d: %w", hash, h, err)
	}
	// Stored as the node's index served it when it could: the proposervm
	// wrapper, whose inner block is what platform.getBlock answers.
	if body, err = ingest.RawBody(body, enc); err != nil {
		return ids.Empty, nil, fmt.Errorf("raw P block %d: %w", h, err)
	}
	inner, _, err := proposervm.Unwrap(body, hash)
	if err != nil {
		return ids.Empty, nil, fmt.Errorf("raw P block %d: %w", h, err)
	}
	return id, inner, nil
}

// blockByID returns the codec bytes of an indexed P block.
func (s *Service) blockByID(ctx context.Context, id ids.ID) ([]byte, error) {
	var h int64
	err := s.db.QueryRowContext(ctx, `SELECT height FROM px_blocks WHERE block_id = $1 AND chain_key = 'P'`, id.String()).Scan(&h)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, database.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("P block %s: %w", id, err)
	}
	got, b, err := s.blockAt(ctx, uint64(h))
	if err != nil {
		return nil, err
	}
	if got != id {
		return nil, fmt.Errorf("raw P block %d is %s, indexed as %s", h, got, id)
	}
	return b, nil
}

// utxoEntry is a spendable UTXO with the height it entered the node's
// address index.
type utxoEntry struct {
	id   ids.ID
	utxo *avax.UTXO
	// inserted is the state height whose commit added the UTXO to the
	// node's state: its block, or the option block of a proposal block, and
	// for stake the staker's removal (stake is held outside the UTXO set).
	inserted uint64
	addr     int // position of the address it was listed under
}

// utxosAt returns the P-chain UTXOs of addrs spendable after state height h
// (created by then, not spent by then, not held as stake by a staker still
// in the set), in the node's order: addresses by bytes; per address its
// index list, newest insertion first (a linkeddb puts at the head). The
// node's order among UTXOs of one commit is Go map order, i.e. random;
// here it is by UTXO ID. Each UTXO comes once.
func (s *Service) utxosAt(ctx context.Context, addrs set.Set[ids.ShortID], h uint64) ([]utxoEntry, error) {
	list := addrs.List()
	sort.Slice(list, func(i, j int) bool { return bytes.Compare(list[i][:], list[j][:]) < 0 })
	var (
		out  []utxoEntry
		seen set.Set[ids.ID]
	)
	for pos, a := range list {
		bech, err := address.FormatBech32(s.g.HRP, a[:])
		if err != nil {
			return nil, fmt.Errorf("format address: %w", err)
		}
		batch, err := s.addressUTXOsAt(ctx, bech, h)
		if err != nil {
			return nil, err
		}
		sort.Slice(batch, func(i, j int) bool {
			if batch[i].inserted != batch[j].inserted {
				return batch[i].inserted > batch[j].inserted
			}
			return bytes.Compare(batch[i].id[:], batch[j].id[:]) < 0
		})
		for _, e := range batch {
			if seen.Contains(e.id) {
				continue
			}
			seen.Add(e.id)
			e.addr = pos
			out = append(out, e)
		}
	}
	return out, nil
}

func (s *Service) addressUTXOsAt(ctx context.Context, bech string, h uint64) ([]utxoEntry, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT u.utxo_id, u.utxo_bytes, u.created_height, u.staked,
		COALESCE(s.removed_height, -1), COALESCE(b.block_type, '')
		FROM utxo_addresses a
		JOIN utxos u ON u.utxo_id = a.utxo_id
		LEFT JOIN p_stakers s ON s.tx_id = u.tx_id
		LEFT JOIN px_blocks b ON b.chain_key = 'P' AND b.height = u.created_height
		WHERE a.address = $1 AND a.chain_key = 'P' AND u.created_chain = 'P' AND u.created_height <= $2
		AND (u.consumed_height < 0 OR u.consumed_height > $2)
		AND NOT (u.staked = $3 AND (s.removed_height IS NULL OR s.removed_height < 0 OR s.removed_height > $2))`,
		bech, int64(h), true)
	if err != nil {
		return nil, fmt.Errorf("utxos of %s: %w", bech, err)
	}
	defer rows.Close()
	var out []utxoEntry
	for rows.Next() {
		var (
			idStr, typ       string
			raw              []byte
			created, removed int64
			staked           bool
		)
		if err := rows.Scan(&idStr, &raw, &created, &staked, &removed, &typ); err != nil {
			return nil, fmt.Errorf("utxos of %s: %w", bech, err)
		}
		id, err := ids.FromString(idStr)
		if err != nil {
			return nil, fmt.Errorf("stored utxo id %q: %w", idStr, err)
		}
		u := &avax.UTXO{}
		if _, err := txs.Codec.Unmarshal(raw, u); err != nil {
			return nil, fmt.Errorf("stored utxo %s: %w", idStr, err)
		}
		if u.InputID() != id {
			return nil, fmt.Errorf("stored utxo %s has id %s", idStr, u.InputID())
		}
		e := utxoEntry{id: id, utxo: u, inserted: uint64(created)}
		if isProposal(typ) {
			// Written with the option block.
			e.inserted++
		}
		if staked {
			e.inserted = uint64(removed)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("utxos of %s: %w", bech, err)
	}
	return out, nil
}

// blockchainsAt lists the chains existing after state height h as
// GetBlockchains does on a node that (re)loaded its state: subnets newest
// first, each with its chains newest first (both are linkeddb lists, which
// put at the head), then the primary network's chains likewise.
func (s *Service) blockchainsAt(ctx context.Context, h uint64) ([]platformvm.APIBlockchain, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT c.blockchain_id, c.name, c.subnet_id, c.vm_id, c.created_height,
		COALESCE(t.tx_index, 0), COALESCE(sn.created_height, 0), COALESCE(st.tx_index, 0)
		FROM p_blockchains c
		LEFT JOIN px_txs t ON t.tx_id = c.blockchain_id
		LEFT JOIN p_subnets sn ON sn.subnet_id = c.subnet_id
		LEFT JOIN px_txs st ON st.tx_id = c.subnet_id
		WHERE c.created_height <= $1`, int64(h))
	if err != nil {
		return nil, fmt.Errorf("blockchains: %w", err)
	}
	defer rows.Close()
	type entry struct {
		c                 platformvm.APIBlockchain
		chainAt, subnetAt [2]int64 // height, tx index
	}
	var list []entry
	for rows.Next() {
		var (
			id, name, subnet, vm string
			e                    entry
		)
		if err := rows.Scan(&id, &name, &subnet, &vm, &e.chainAt[0], &e.chainAt[1], &e.subnetAt[0], &e.subnetAt[1]); err != nil {
			return nil, fmt.Errorf("blockchains: %w", err)
		}
		e.c.Name = name
		for _, p := range []struct {
			dst *ids.ID
			s   string
		}{{&e.c.ID, id}, {&e.c.SubnetID, subnet}, {&e.c.VMID, vm}} {
			if *p.dst, err = ids.FromString(p.s); err != nil {
				return nil, fmt.Errorf("stored blockchain %s: %w", id, err)
			}
		}
		list = append(list, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("blockchains: %w", err)
	}
	newer := func(a, b [2]int64) bool {
		if a[0] != b[0] {
			return a[0] > b[0]
		}
		return a[1] > b[1]
	}
	sort.Slice(list, func(i, j int) bool {
		a, b := list[i], list[j]
		pa, pb := a.c.SubnetID == constants.PrimaryNetworkID, b.c.SubnetID == constants.PrimaryNetworkID
		switch {
		case pa != pb:
			return pb
		case a.c.SubnetID != b.c.SubnetID:
			if a.subnetAt != b.subnetAt {
				return newer(a.subnetAt, b.subnetAt)
			}
			return bytes.Compare(a.c.SubnetID[:], b.c.SubnetID[:]) < 0
		default:
			return newer(a.chainAt, b.chainAt)
		}
	})
	out := make([]platformvm.APIBlockchain, len(list))
	for i, e := range list {
		out[i] = e.c
	}
	return out, nil
}

// chainCreatedAt returns the height a blockchain was created at, -1 if never.
func (s *Service) chainCreatedAt(ctx context.Context, chainID ids.ID) (int64, error) {
	var h int64
	err := s.db.QueryRowContext(ctx, `SELECT created_height FROM p_blockchains WHERE blockchain_id = $1`, chainID.String()).Scan(&h)
	if errors.Is(err, sql.ErrNoRows) {
		return -1, nil
	}
	if err != nil {
		return 0, fmt.Errorf("blockchain %s: %w", chainID, err)
	}
	return h, nil
}

// chainSubnet returns the subnet validating a blockchain.
func (s *Service) chainSubnet(ctx context.Context, chainID ids.ID) (ids.ID, error) {
	var sub string
	err := s.db.QueryRowContext(ctx, `SELECT subnet_id FROM p_blockchains WHERE blockchain_id = $1`, chainID.String()).Scan(&sub)
	if errors.Is(err, sql.ErrNoRows) {
		return ids.Empty, database.ErrNotFound
	}
	if err != nil {
		return ids.Empty, fmt.Errorf("blockchain %s: %w", chainID, err)
	}
	return ids.FromString(sub)
}

// isValidatorAt reports whether node is in subnet's validator set after h.
func (s *Service) isValidatorAt(ctx context.Context, subnet ids.ID, node ids.NodeID, h uint64) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM p_validator_set WHERE subnet_id = $1 AND node_id = $2
		AND from_height <= $3 AND to_height > $3`, subnet.String(), node.String(), int64(h)).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("validator set of %s: %w", subnet, err)
	}
	return n > 0, nil
}

// supplyAt is GetCurrentSupply after state height h: the primary network's
// supply, or an elastic subnet's; database.ErrNotFound for any other subnet.
func (s *Service) supplyAt(ctx context.Context, subnet ids.ID, h uint64) (uint64, error) {
	if subnet == constants.PrimaryNetworkID {
		var supply string
		err := s.db.QueryRowContext(ctx, `SELECT current_supply FROM p_block_state WHERE height = $1`, int64(h)).Scan(&supply)
		if errors.Is(err, sql.ErrNoRows) {
			return 0, database.ErrNotFound
		}
		if err != nil {
			return 0, fmt.Errorf("supply at %d: %w", h, err)
		}
		return parseUint(supply)
	}
	var transform string
	err := s.db.QueryRowContext(ctx, `SELECT transform_tx_id FROM p_subnets WHERE subnet_id = $1`, subnet.String()).Scan(&transform)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && transform == "") {
		return 0, database.ErrNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("subnet %s: %w", subnet, err)
	}
	var at int64
	if err := s.db.QueryRowContext(ctx, `SELECT height FROM p_txs WHERE tx_id = $1`, transform).Scan(&at); err != nil {
		return 0, fmt.Errorf("transform tx %s of %s: %w", transform, subnet, err)
	}
	if at < 0 || uint64(at) > h {
		return 0, database.ErrNotFound
	}
	stx, err := s.loadTx(ctx, transform)
	if err != nil {
		return 0, err
	}
	tr, ok := stx.Unsigned.(*txs.TransformSubnetTx)
	if !ok {
		return 0, fmt.Errorf("transform tx %s of %s is a %T", transform, subnet, stx.Unsigned)
	}
	return s.mintedSupply(ctx, subnet, tr.InitialSupply, h)
}

// mintedSupply replays a subnet's supply from its base: every staker that
// joined the current set by h mints its potential reward, every staker
// removed unrewarded by h burns it back (avalanchego's putStaker and
// RewardValidatorTx abort path).
func (s *Service) mintedSupply(ctx context.Context, subnet ids.ID, base, h uint64) (uint64, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT potential_reward, removal, removed_height FROM p_stakers
		WHERE subnet_id = $1 AND kind <> $2 AND current_height >= 0 AND current_height <= $3`,
		subnet.String(), kindSubnetValidator, int64(h))
	if err != nil {
		return 0, fmt.Errorf("stakers of %s: %w", subnet, err)
	}
	defer rows.Close()
	supply := base
	for rows.Next() {
		var (
			pot, removal string
			removed      int64
		)
		if err := rows.Scan(&pot, &removal, &removed); err != nil {
			return 0, fmt.Errorf("stakers of %s: %w", subnet, err)
		}
		p, err := parseUint(pot)
		if err != nil {
			return 0, err
		}
		if supply, err = safemath.Add(supply, p); err != nil {
			return 0, fmt.Errorf("supply of %s overflows", subnet)
		}
		if removal == removalNotRewarded && removed >= 0 && uint64(removed) <= h {
			if supply, err = safemath.Sub(supply, p); err != nil {
				return 0, fmt.Errorf("supply of %s underflows", subnet)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("stakers of %s: %w", subnet, err)
	}
	return supply, nil
}

// loadTx re-reads an indexed P tx (genesis txs included).
func (s *Service) loadTx(ctx context.Context, txID string) (*txs.Tx, error) {
	var raw []byte
	if err := s.db.QueryRowContext(ctx, `SELECT tx_bytes FROM px_txs WHERE tx_id = $1`, txID).Scan(&raw); err != nil {
		return nil, fmt.Errorf("tx %s: %w", txID, err)
	}
	// The genesis codec reads everything the block codec does, and more.
	stx, err := txs.Parse(txs.GenesisCodec, raw)
	if err != nil {
		return nil, fmt.Errorf("parse tx %s: %w", txID, err)
	}
	return stx, nil
}

// parseUint reads a stored (zero-padded) decimal.
func parseUint(s string) (uint64, error) {
	v, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stored number %q: %w", s, err)
	}
	return v, nil
}
