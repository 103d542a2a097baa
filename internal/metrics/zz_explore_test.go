package metrics_test

import (
	"context"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/testenv"
)

func TestZZExplore(t *testing.T) {
	e := testenv.Devnet(t, "sqlite")
	ctx := context.Background()
	for _, q := range []string{
		`SELECT chain_key, height, block_time FROM raw_blocks WHERE height < 3 OR height > 35 ORDER BY chain_key, height`,
		`SELECT chain_key, height, timestamp, tx_count FROM px_blocks WHERE height < 3 OR height > 35 ORDER BY chain_key, height`,
		`SELECT chain_key, number, timestamp, tx_count FROM evm_blocks WHERE number < 3 OR number > 35 ORDER BY number`,
		`SELECT chain_key, height, COUNT(*) FROM px_txs WHERE height <= 0 GROUP BY chain_key, height`,
		`SELECT chain_key, address, erc_type, COALESCE(name,'-') FROM evm_contracts`,
		`SELECT holder, erc_type, token, token_id, balance FROM evm_token_balances WHERE erc_type <> 'ERC-20'`,
		`SELECT * FROM metrics_chains`,
		`SELECT * FROM metrics_tx_hourly`,
		`SELECT * FROM metrics_tx_daily`,
		`SELECT * FROM metrics_nft_holders ORDER BY token, units_key DESC, holder`,
		`SELECT * FROM metrics_nft_collections`,
	} {
		rows, err := e.DB.QueryContext(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		t.Log(q)
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			rows.Scan(ptrs...)
			t.Log(vals...)
		}
		rows.Close()
	}
}
