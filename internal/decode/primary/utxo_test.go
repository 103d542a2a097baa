package primary_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/vms/components/avax"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"

	"github.com/permafrost-dev/permafrost/internal/decode/primary"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// addrRow is a utxo_addresses row.
type addrRow struct {
	Address, Chain, Asset, Reward string
	Spent                         bool
	Plain                         bool // 0042: balances sum it from the index
}

// testUTXO is a UTXO of txID:index in asset, owned by the given short ids.
func testUTXO(txID ids.ID, index uint32, asset ids.ID, amount uint64, owners ...ids.ShortID) (*avax.UTXO, []byte) {
	u := &avax.UTXO{
		UTXOID: avax.UTXOID{TxID: txID, OutputIndex: index},
		Asset:  avax.Asset{ID: asset},
		Out: &secp256k1fx.TransferOutput{Amt: amount, OutputOwners: secp256k1fx.OutputOwners{
			Threshold: 1, Addrs: owners}},
	}
	b, err := txs.Codec.Marshal(txs.CodecVersion, u)
	if err != nil {
		panic(err)
	}
	return u, b
}

func addressRows(t *testing.T, db *store.DB, utxoID string) []addrRow {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `SELECT address, chain_key, asset_id, reward_type, spent, plain
		FROM utxo_addresses WHERE utxo_id = $1 ORDER BY address`, utxoID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []addrRow
	for rows.Next() {
		var r addrRow
		if err := rows.Scan(&r.Address, &r.Chain, &r.Asset, &r.Reward, &r.Spent, &r.Plain); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Each address row of a UTXO carries its asset and reward type (the data
// API's filters, 0015), whatever the order the creation and the spend are
// indexed in, and rows written before 0015 get them from the migration.
func TestUTXOAddressesCarryAssetAndRewardType(t *testing.T) {
	const hrp = constants.LocalHRP
	w := primary.Writer{HRP: hrp}
	alice, bob := ids.ShortID{1}, ids.ShortID{2}
	bech := func(a ids.ShortID) string {
		s, err := primary.Addresses(hrp, &secp256k1fx.OutputOwners{Addrs: []ids.ShortID{a}})
		if err != nil {
			t.Fatal(err)
		}
		return s[0]
	}
	avaxID, other := ids.ID{0xaa}, ids.ID{0xbb}
	transfer, transferBytes := testUTXO(ids.ID{1}, 0, other, 5, alice, bob)
	reward, rewardBytes := testUTXO(ids.ID{2}, 1, avaxID, 7, alice)
	imported, importedBytes := testUTXO(ids.ID{3}, 0, avaxID, 9, bob)
	cases := []struct {
		name      string
		u         *avax.UTXO
		bytes     []byte
		created   primary.Created
		spendLast bool // spent after creation, else before (an import indexed first)
		spend     bool
		want      []addrRow // by address
	}{
		{"X transfer of two owners", transfer, transferBytes, primary.Created{CreatedChain: "X", ChainKey: "X", Time: 10}, true, false,
			[]addrRow{{bech(bob), "X", other.String(), "", false, false}, {bech(alice), "X", other.String(), "", false, false}}},
		{"P reward", reward, rewardBytes, primary.Created{CreatedChain: "P", ChainKey: "P", Time: 20, UTXOType: "TRANSFER", RewardType: "VALIDATOR"},
			true, true, []addrRow{{bech(alice), "P", avaxID.String(), "VALIDATOR", true, true}}},
		{"spend indexed before the creation", imported, importedBytes, primary.Created{CreatedChain: "X", ChainKey: "P", Time: 30}, false, true,
			[]addrRow{{bech(bob), "P", avaxID.String(), "", true, false}}},
	}
	storetest.ForEachBackend(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		for _, c := range cases {
			tx, err := db.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			spend := func() {
				if err := w.SpendUTXO(ctx, tx, &c.u.UTXOID, primary.Spent{TxID: ids.ID{9}.String(), ChainKey: c.created.ChainKey,
					Time: 40, AssetID: c.u.AssetID().String(), Amount: 1}); err != nil {
					t.Fatal(err)
				}
			}
			if c.spend && !c.spendLast {
				spend()
			}
			if err := w.PutUTXO(ctx, tx, c.u, c.bytes, c.created); err != nil {
				t.Fatal(err)
			}
			if c.spend && c.spendLast {
				spend()
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			if got := addressRows(t, db, c.u.InputID().String()); fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("%s:\n got %v\nwant %v", c.name, got, c.want)
			}
		}

		// The same rows as written before 0015: without the columns, and
		// without its indexes (the columns cannot be dropped under them),
		// nor 0042's plain flag and index.
		for _, q := range []string{
			`DROP INDEX utxo_addresses_balance`, `ALTER TABLE utxo_addresses DROP COLUMN plain`,
			`DELETE FROM schema_migrations WHERE name = '0042_plain_utxo_balances.sql'`,
			`DROP INDEX utxo_addresses_x_asset_time`, `DROP INDEX utxo_addresses_x_asset_amount`,
			`DROP INDEX utxo_addresses_x_asset_any_time`, `DROP INDEX utxo_addresses_x_asset_any_amount`,
			`DROP INDEX utxo_addresses_rewards`,
			`ALTER TABLE utxo_addresses DROP COLUMN asset_id`, `ALTER TABLE utxo_addresses DROP COLUMN reward_type`,
			`DELETE FROM schema_migrations WHERE name = '0015_utxo_address_filters.sql'`,
		} {
			if _, err := db.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if err := db.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			if got := addressRows(t, db, c.u.InputID().String()); fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("%s, after the migration:\n got %v\nwant %v", c.name, got, c.want)
			}
		}
	})
}
