package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/permafrost-dev/permafrost/internal/config"
	"github.com/permafrost-dev/permafrost/internal/enrich"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/keys"
)

// demo replays the bundled recording in-process, indexes it into a temporary
// SQLite database and serves every API on cfg.Listen.
func demo(ctx context.Context, cfg *config.Config, dir string, stdout io.Writer, log *slog.Logger) error {
	if _, err := os.Stat(filepath.Join(dir, "rpc")); err != nil {
		return fmt.Errorf("demo: recording not found at %s (run from the repository root or pass --fixture): %w", dir, err)
	}
	nodeURL, stop, err := startReplay(ctx, dir, "127.0.0.1:0", log)
	if err != nil {
		return err
	}
	defer stop()
	tmp, err := os.MkdirTemp("", "permafrost-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	cfg.Node = nodeURL
	// The demo makes no outbound call: no public IPFS gateway unless one is
	// named (--ipfs-gateway).
	if cfg.IPFSGateway == "https://ipfs.io" {
		cfg.IPFSGateway = enrich.NoIPFSGateway
	}
	cfg.DB = "sqlite:" + filepath.Join(tmp, "permafrost.db")
	if cfg.Genesis == "" {
		cfg.Genesis = filepath.Join(dir, "genesis.json")
	}
	fmt.Fprintf(stdout, "demo: replaying %s at %s, indexing into %s\n", dir, nodeURL, cfg.DB)
	db, w, set, err := start(ctx, cfg, log, "demo")
	if err != nil {
		return err
	}
	defer db.Close()
	defer w.Release()
	// A key with every scope, so the demo shows the keyed routes (exports, reindex) too.
	demoKey, err := keys.Create(ctx, db, "demo", "pro", []string{"*"}, 0)
	if err != nil {
		return err
	}
	if err := ingest.New(db, set.Chains, pipelineOptions(cfg, db, set, true), log).Run(ctx); err != nil {
		return err
	}
	return run(ctx, cfg, db, set, stdout, log, func(addr string) {
		base := "http://" + addr
		fmt.Fprintf(stdout, `
Permafrost demo: the devnet-a recording is indexed and every API is served at %[1]s

Try:
  curl -s %[1]s/v1/chains
  curl -s '%[1]s/v1/networks/testnet/blockchains/p-chain/blocks?pageSize=3'
  curl -s '%[1]s/v1/networks/testnet/blockchains/x-chain/utxos?addresses=X-custom1js9jhzvc6j53vp53h8cutnrv4lt4292t58me5h'
  curl -s %[1]s/v1/chains/88888/addresses/0x03623AdD7ec6F6426D6266ED2E5a4734C786E73E/balances:getNative
  curl -s '%[1]s/v1/chains/88888/tokens/0x0e728C6A2Fc95A228d766532b430E905eb07b726/transfers'
  curl -s %[1]s/v1/avg_tps/c-chain
  curl -s -X POST %[1]s/ext/bc/P -H 'content-type: application/json' -d '{"jsonrpc":"2.0","id":1,"method":"platform.getCurrentValidators","params":{}}'
  curl -s -X POST %[1]s/v1/operations/transactions:export -H 'x-data-api-key: %[2]s' -H 'content-type: application/json' \
       -d '{"type":"TRANSACTION_EXPORT_EVM","options":{"addresses":["0x03623AdD7ec6F6426D6266ED2E5a4734C786E73E"],"includeChains":["88888"]}}'
  curl -s %[1]s/v2/chains/88888/contracts/0xEE64797aBCe5983BcD82072c120003DADE869652/nfts:listHolders
  curl -s %[1]s/v1/health-check

A demo API key with every scope: %[2]s

Press Ctrl-C to stop.
`, base, demoKey)
	}, nil)
}
