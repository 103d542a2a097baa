package export

import (
	"context"
	"fmt"
	"math/big"
	"strconv"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/store"
)

// An EVM chain written straight into the tables internal/decode/evm fills
// (same columns and conventions), for exports larger or longer than the
// devnet recording: the truncation tests and the benchmark.

const (
	genChain   = "C"
	genChainID = "43114"
	genAddr    = "0x00000000000000000000000000000000000000aa" // the exported address
	genOther   = "0x00000000000000000000000000000000000000bb"
	genToken   = "0x00000000000000000000000000000000000000cc"
	genPrice   = "25000000000"
	genGas     = 51234
)

// genDays writes perDay[d] rows involving genAddr on day start+d: blocks of
// one tx each carrying up to perTx ERC-20 transfers to genAddr; the first tx
// of each day is sent by genAddr (one NATIVE row, its transfers following),
// the others by genOther. It returns the expected CSV records in export
// order when want is set (nil otherwise: the benchmark's millions of rows
// are not kept).
func genDays(t testing.TB, db *store.DB, start time.Time, perDay []int, perTx int, want bool) [][]string {
	t.Helper()
	ctx := context.Background()
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	exec := func(q string, args ...any) {
		if _, err := tx.Exec(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(`INSERT INTO chains (chain_key, kind, blockchain_id, evm_chain_id, network_id, name) VALUES ($1,'EVM',$2,$3,1,'')
		ON CONFLICT (chain_key) DO NOTHING`, genChain, "2q9e4r6Mu3U68nU1fYjgbR6JvwrRx36CohpAX5UQxse55x1Q5", genChainID)
	exec(`INSERT INTO evm_contracts (chain_key, address, creation_kind, tx_hash, block_number, block_time, deployer_address,
		erc_type, symbol, decimals) VALUES ($1,$2,'tx','0x00',0,0,$3,'ERC-20','=TKN',18) ON CONFLICT DO NOTHING`, genChain, genToken, genOther)
	var out [][]string
	fee := new(big.Int).Mul(big.NewInt(genGas), mustBig(genPrice)).String()
	block := int64(0)
	for d, n := range perDay {
		dayStart := start.Unix() + int64(d)*daySeconds
		for i := 0; n > 0; i++ {
			k := min(n, perTx)
			n -= k
			block++
			ts := dayStart + 60 + int64(i)*7
			if ts >= dayStart+daySeconds {
				t.Fatalf("day %d holds too many blocks", d)
			}
			bh, th := fmt.Sprintf("0x%064x", block), fmt.Sprintf("0x%064x", 1<<40+block)
			exec(`INSERT INTO evm_blocks (chain_key, number, hash, parent_hash, timestamp, tx_count, gas_used, gas_limit,
				miner, size_bytes, state_root, extra_data) VALUES ($1,$2,$3,$4,$5,1,0,0,$4,0,$4,'0x')`, genChain, block, store.Hex(bh), []byte{}, ts)
			from := genOther
			if i == 0 {
				from = genAddr
			}
			exec(`INSERT INTO evm_txs (chain_key, block_number, tx_index, hash, block_hash, block_time, from_addr, to_addr,
				value, gas_limit, gas_price, gas_used, nonce, tx_type, status, method_id, input_size, log_count)
				VALUES ($1,$2,0,$3,$4,$5,$6,$7,'0',100000,$8,$9,$10,2,1,'0xa9059cbb',68,$11)`,
				genChain, block, store.Hex(th), store.Hex(bh), ts, store.Hex(from), store.Hex(genToken), genPrice, genGas, block, k)
			exec(`INSERT INTO evm_address_txs (chain_key, address, block_number, tx_index) VALUES ($1,$2,$3,0)`, genChain, store.Hex(from), block)
			exec(`INSERT INTO evm_address_txs (chain_key, address, block_number, tx_index) VALUES ($1,$2,$3,0)`, genChain, store.Hex(genToken), block)
			dt := time.Unix(ts, 0).UTC().Format(time.RFC3339)
			common := []string{genChainID, strconv.FormatInt(block, 10), bh, strconv.FormatInt(ts, 10), dt, th, "0"}
			if want && from == genAddr {
				out = append(out, append(append([]string{}, common...), "NATIVE", "", "", genAddr, genToken, "0", "", "",
					"", "", fee, strconv.Itoa(genGas), genPrice, "success", "0xa9059cbb", ""))
			}
			for l := range k {
				v := strconv.FormatInt(block*1000+int64(l), 10)
				exec(`INSERT INTO evm_transfers (chain_key, block_number, log_index, batch_index, tx_index, tx_hash, block_time,
					token, erc_type, from_addr, to_addr, value) VALUES ($1,$2,$3,0,0,$4,$5,$6,'ERC-20',$7,$8,$9)`,
					genChain, block, l, store.Hex(th), ts, store.Hex(genToken), store.Hex(from), store.Hex(genAddr), v)
				if want {
					out = append(out, append(append([]string{}, common...), "ERC-20", strconv.Itoa(l), "0", from, genAddr, v,
						genToken, "'=TKN", "18", "", "", "", "", "success", "0xa9059cbb", ""))
				}
			}
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return out
}

func mustBig(s string) *big.Int {
	v, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic(s)
	}
	return v
}
