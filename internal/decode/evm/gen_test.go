package evm

import (
	"context"
	"math/big"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/devnet/indextest"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// TestGeneratedChainInvariants indexes a generated chain and checks what must
// hold whatever the data: native coins are conserved (fees go to the
// coinbase), no balance is negative, token supply equals what was minted, and the
// current tables agree with the latest history rows.
func TestGeneratedChainInvariants(t *testing.T) {
	const n, perBlock = 150, 20 // generated's
	gen, blocks := generated(42, n)
	alloc := gen.Alloc()
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		indextest.Apply(t, db, genIndexer(t, gen), blocks, 25)

		sum := func(q string, args ...any) *big.Int {
			rows, err := db.QueryContext(ctx, q, args...)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			total := new(big.Int)
			for rows.Next() {
				var s string
				if err := rows.Scan(&s); err != nil {
					t.Fatal(err)
				}
				v, ok := new(big.Int).SetString(s, 10)
				if !ok || v.Sign() < 0 {
					t.Fatalf("balance %q", s)
				}
				total.Add(total, v)
			}
			return total
		}
		supply := new(big.Int)
		for _, v := range alloc {
			supply.Add(supply, v)
		}
		if got := sum(`SELECT balance FROM evm_native_balances WHERE chain_key = 'gen'`); got.Cmp(supply) != 0 {
			t.Errorf("native total %s, want the alloc %s", got, supply)
		}
		minted := sum(`SELECT value FROM evm_transfers WHERE chain_key = 'gen' AND erc_type = 'ERC-20' AND from_addr = $1`,
			store.Hex("0x0000000000000000000000000000000000000000"))
		if got := sum(`SELECT balance FROM evm_token_balances WHERE chain_key = 'gen' AND erc_type = 'ERC-20'`); got.Cmp(minted) != 0 || minted.Sign() == 0 {
			t.Errorf("ERC-20 holdings %s, minted %s", got, minted)
		}
		var nfts, counted int64
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM evm_nft_tokens WHERE chain_key = 'gen'`).Scan(&nfts); err != nil {
			t.Fatal(err)
		}
		counted = sum(`SELECT balance FROM evm_token_balances WHERE chain_key = 'gen' AND erc_type = 'ERC-721'`).Int64()
		if nfts == 0 || counted != nfts {
			t.Errorf("ERC-721 holder counts sum to %d, tokens %d", counted, nfts)
		}
		var txs int64
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM evm_txs WHERE chain_key = 'gen'`).Scan(&txs); err != nil {
			t.Fatal(err)
		}
		if want := int64((n-2)*perBlock + genERC20s + genERC721s); txs != want {
			t.Errorf("txs = %d, want %d", txs, want)
		}
		for _, q := range []string{
			`SELECT COUNT(*) FROM evm_native_balances b WHERE b.chain_key = 'gen' AND b.balance <> (SELECT h.balance FROM evm_native_balance_history h
				WHERE h.chain_key = b.chain_key AND h.address = b.address ORDER BY h.block_number DESC LIMIT 1)`,
			`SELECT COUNT(*) FROM evm_token_balances b WHERE b.chain_key = 'gen' AND b.balance <> (SELECT h.balance FROM evm_token_balance_history h
				WHERE h.chain_key = b.chain_key AND h.holder = b.holder AND h.erc_type = b.erc_type AND h.token = b.token AND h.token_id = b.token_id
				ORDER BY h.block_number DESC LIMIT 1)`,
			`SELECT COUNT(*) FROM evm_contracts WHERE chain_key = 'gen' AND (creation_kind <> 'tx' OR erc_type = '')`,
		} {
			var bad int
			if err := db.QueryRowContext(ctx, q).Scan(&bad); err != nil {
				t.Fatal(err)
			}
			if bad != 0 {
				t.Errorf("%d rows break: %s", bad, q)
			}
		}
	})
}
