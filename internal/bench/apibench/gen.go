package apibench

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/libevm/crypto"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// The network: a local network (id 1337, HRP custom, C-chain EVM id 43112, as
// avalanchego's local config), served as "testnet".
const (
	networkID   = 1337
	networkName = "testnet"
	hrp         = "custom"
	evmChainID  = "43112"
)

type generator struct {
	cfg      Config
	batch    batching
	db       *store.DB
	log      *slog.Logger
	quiet    *slog.Logger // for the indexers (their warnings are not the benchmark's)
	m        *Manifest
	chainIDs map[string]ids.ID
}

// batching is how many blocks go into one store transaction.
type batching struct {
	evm int // EVM blocks
	px  int // P- and X-chain blocks
	// cacheKiB, when set, is the SQLite writer's page cache during the
	// generation (PRAGMA cache_size), so that a batch's pages stay in memory
	// until its commit.
	cacheKiB int
	// deferIndexes: deferredIndexes are dropped before the first row and
	// built after the last (on PostgreSQL concurrently, as the bulk
	// catch-up builds them: store.BuildDeferredIndexes).
	deferIndexes bool
}

// deferredIndexes are the secondary indexes of the big tables that no writer
// reads (the writers look rows up by primary key, and utxo_addresses by
// utxo_id): built once at the end, CREATE INDEX sorts the keys instead of
// inserting each at a random place, and its pages come out full.
var deferredIndexes = []string{
	"utxo_addresses_time", "utxo_addresses_amount", "utxo_addresses_any_time", "utxo_addresses_any_amount",
	"utxo_addresses_x_asset_time", "utxo_addresses_x_asset_amount", "utxo_addresses_x_asset_any_time",
	"utxo_addresses_x_asset_any_amount", "utxo_addresses_rewards", "utxo_addresses_balance",
	"utxos_tx", "utxos_consumed_tx", "utxos_rewards", "utxos_locked",
	"px_txs_chain_time", "px_txs_chain_height", "px_blocks_time", "px_blocks_proposer",
	"evm_transfers_token", "evm_transfers_from", "evm_transfers_to", "evm_transfers_from_nft", "evm_transfers_to_nft",
	"evm_txs_hash", "evm_txs_failed", "evm_blocks_hash", "evm_blocks_time",
}

// ingestBatches are the ingest driver's transactions (100 EVM blocks, and
// small P/X batches): the reference the bulk generation is tested against.
var ingestBatches = batching{evm: 100, px: 20}

// bulkBatches are the generator's: the same indexers and writer with 20 times
// larger transactions, a 1 GiB writer cache and deferred indexes. Profiled at 72,000 P/X txs,
// commits were 30% of the CPU time with 20-block batches (every commit writes
// every page the batch dirtied, and the random-key indexes dirty a page or
// more per row); TestBulkGenerationMatchesIngestBatches shows the rows are the
// same.
var bulkBatches = batching{evm: 2000, px: 400, cacheKiB: 1 << 20, deferIndexes: true}

// Generate writes a dataset of cfg into db (migrated, empty) and returns
// its manifest.
func Generate(ctx context.Context, db *store.DB, cfg Config, log *slog.Logger) (*Manifest, error) {
	return generate(ctx, db, cfg, bulkBatches, log)
}

func generate(ctx context.Context, db *store.DB, cfg Config, batch batching, log *slog.Logger) (*Manifest, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if batch.cacheKiB > 0 && db.Dialect() == store.SQLite {
		// The writer pool is one connection that lives as long as db: the
		// setting holds for every generation transaction, and is restored.
		if _, err := db.WriterDB().ExecContext(ctx, fmt.Sprintf("PRAGMA cache_size = -%d", batch.cacheKiB)); err != nil {
			return nil, fmt.Errorf("writer cache: %w", err)
		}
		defer db.WriterDB().ExecContext(context.WithoutCancel(ctx), "PRAGMA cache_size = -65536") //nolint:errcheck // only memory
	}
	start := time.Now()
	g := &generator{cfg: cfg, batch: batch, db: db, log: log, quiet: slog.New(slog.DiscardHandler),
		m: &Manifest{Version: Version, Config: cfg, Network: networkName, EVMChainID: evmChainID},
		chainIDs: map[string]ids.ID{
			"P": ids.Empty,
			"X": ids.ID(crypto.Keccak256Hash([]byte("apibench X-chain"))),
			"C": ids.ID(crypto.Keccak256Hash([]byte("apibench C-chain"))),
		}}
	g.m.PBlockchainID, g.m.XBlockchainID, g.m.CBlockchainID = g.chainIDs["P"].String(), g.chainIDs["X"].String(), g.chainIDs["C"].String()
	if err := g.putChains(ctx); err != nil {
		return nil, err
	}
	// The bulk catch-up's mechanism (store.DeferIndexes) with this longer
	// list: nothing reads the dataset until it is built. Both backends: a
	// PostgreSQL dataset is generated in place too (Cache.OpenPostgres).
	deferred := batch.deferIndexes
	if deferred {
		if _, err := db.DeferIndexes(ctx, deferredIndexes); err != nil {
			return nil, err
		}
	}
	if err := g.generatePrimary(ctx); err != nil {
		return nil, fmt.Errorf("primary network: %w", err)
	}
	log.Info("primary network generated", "elapsed", time.Since(start).Round(time.Second))
	if err := g.generateEVM(ctx); err != nil {
		return nil, fmt.Errorf("evm: %w", err)
	}
	log.Info("evm generated", "elapsed", time.Since(start).Round(time.Second))
	if deferred {
		if err := db.BuildDeferredIndexes(ctx, nil); err != nil {
			return nil, err
		}
		log.Info("deferred indexes built", "elapsed", time.Since(start).Round(time.Second))
	}
	if err := g.survey(ctx); err != nil {
		return nil, err
	}
	g.m.GenerateSecs = int64(time.Since(start).Seconds())
	return g.m, nil
}

func (g *generator) putChains(ctx context.Context) error {
	for _, c := range []struct{ key, kind, evm, name string }{
		{"P", "P", "", "P-Chain"}, {"X", "X", "", "X-Chain"}, {"C", "EVM", evmChainID, "C-Chain"},
	} {
		var evmID any
		if c.evm != "" {
			evmID = c.evm
		}
		if _, err := g.db.ExecContext(ctx, `INSERT INTO chains (chain_key, kind, blockchain_id, evm_chain_id, network_id, name)
			VALUES ($1,$2,$3,$4,$5,$6)`, c.key, c.kind, g.chainIDs[c.key].String(), evmID, networkID, c.name); err != nil {
			return fmt.Errorf("put chain %s: %w", c.key, err)
		}
	}
	return nil
}

// putCheckpoint records a chain's indexed tip as the ingest driver does,
// with the node at the same height (the chain is healthy, not lagging).
func putCheckpoint(ctx context.Context, tx *store.Tx, chain string, height int64, hash string, t int64) error {
	if _, err := tx.Exec(ctx, `INSERT INTO checkpoints (chain_key, height, block_hash, block_time, node_height, rate, updated_at)
		VALUES ($1,$2,$3,$4,$2,0,$5) ON CONFLICT (chain_key) DO UPDATE SET height = excluded.height,
		block_hash = excluded.block_hash, block_time = excluded.block_time, node_height = excluded.node_height,
		updated_at = excluded.updated_at`, chain, height, hash, t, time.Now().Unix()); err != nil {
		return fmt.Errorf("checkpoint %s: %w", chain, err)
	}
	return nil
}

// survey fills the manifest's sizes and EVM keys from the database.
func (g *generator) survey(ctx context.Context) error {
	db := g.db
	one := func(dst *int64, q string, args ...any) error {
		if err := db.QueryRowContext(ctx, q, args...).Scan(dst); err != nil {
			return fmt.Errorf("survey %q: %w", q, err)
		}
		return nil
	}
	for _, c := range []struct {
		dst *int64
		q   string
	}{
		{&g.m.EVMBlocks, `SELECT COUNT(*) FROM evm_blocks`},
		{&g.m.EVMTxs, `SELECT COUNT(*) FROM evm_txs`},
		{&g.m.EVMTransfers, `SELECT COUNT(*) FROM evm_transfers`},
		{&g.m.UTXOs, `SELECT COUNT(*) FROM utxos`},
		{&g.m.Stakers, `SELECT COUNT(*) FROM p_stakers`},
		{&g.m.RewardUTXOs, `SELECT COUNT(*) FROM utxos WHERE reward_type <> ''`},
		{&g.m.ICMMessages, `SELECT COUNT(*) FROM icm_messages`},
	} {
		if err := one(c.dst, c.q); err != nil {
			return err
		}
	}
	list := func(q string, args ...any) ([]string, error) {
		rows, err := db.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, fmt.Errorf("survey %q: %w", q, err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var v any
			var n sql.NullInt64
			if err := rows.Scan(&v, &n); err != nil {
				return nil, fmt.Errorf("survey %q: %w", q, err)
			}
			switch v := v.(type) {
			case []byte: // an address as the EVM tables store it
				out = append(out, store.HexString(v))
			case string:
				out = append(out, v)
			default:
				return nil, fmt.Errorf("survey %q: %T value", q, v)
			}
		}
		return out, rows.Err()
	}
	var err error
	// Busiest first; the tail of the ordering is the cold end.
	if g.m.EVMHot, err = list(`SELECT address, COUNT(*) AS n FROM evm_address_txs WHERE chain_key = 'C'
		GROUP BY address ORDER BY n DESC, address LIMIT 10`); err != nil {
		return err
	}
	if g.m.EVMCold, err = list(`SELECT address, COUNT(*) AS n FROM evm_address_txs WHERE chain_key = 'C'
		GROUP BY address HAVING COUNT(*) BETWEEN 5 AND 400 ORDER BY n, address LIMIT 200`); err != nil {
		return err
	}
	tokens, err := list(`SELECT token, COUNT(*) AS n FROM evm_transfers WHERE chain_key = 'C' AND erc_type = 'ERC-20'
		GROUP BY token ORDER BY n DESC, token`)
	if err != nil {
		return err
	}
	g.m.ERC20Hot = tokens[:min(3, len(tokens))]
	g.m.ERC20Cold = tokens[min(3, len(tokens)):]
	if g.m.ERC721, err = list(`SELECT address, 0 FROM evm_contracts WHERE chain_key = 'C' AND erc_type = 'ERC-721' ORDER BY address`); err != nil {
		return err
	}
	if len(g.m.ERC721) > 0 {
		if g.m.NFTTokenIDs, err = list(`SELECT token_id, 0 FROM evm_nft_tokens WHERE chain_key = 'C' AND token = $1
			ORDER BY token_id LIMIT 300`, g.m.ERC721[0]); err != nil {
			return err
		}
	}
	if g.m.ERC1155Holders, err = list(`SELECT holder, COUNT(*) AS n FROM evm_token_balances WHERE chain_key = 'C'
		AND erc_type = 'ERC-1155' GROUP BY holder ORDER BY n DESC, holder LIMIT 50`); err != nil {
		return err
	}
	return nil
}
