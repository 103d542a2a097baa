package testenv

import (
	"context"
	"strings"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/store"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

// workloadTx is one line of workload.jsonl.
type workloadTx = devnet.Tx[workloadExtra]

type workloadExtra struct {
	Atomic bool `json:"atomic"`
}

// Every tx the workload issued is indexed through the replay node and the
// real pipeline: on its chain, with its type, linked to its addresses.
func TestWorkloadIndexed(t *testing.T) {
	txs := devnet.LoadWorkload[workloadExtra](t)
	if len(txs) != 94 {
		t.Fatalf("workload has %d txs, want 94", len(txs))
	}
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) {
			db := Devnet(t, backend).DB
			for _, w := range txs {
				if w.Chain == "C" && !w.Extra.Atomic {
					checkEVMTx(t, db, w)
				} else {
					checkPrimaryTx(t, db, w)
				}
			}
		})
	}
}

func checkPrimaryTx(t *testing.T, db *store.DB, w workloadTx) {
	t.Helper()
	ctx := context.Background()
	var chain, typ string
	if err := db.QueryRowContext(ctx, `SELECT chain_key, tx_type FROM px_txs WHERE tx_id = $1`, w.TxID).Scan(&chain, &typ); err != nil {
		t.Errorf("seq %d %s %s: not indexed: %v", w.Seq, w.Chain, w.TxID, err)
		return
	}
	if chain != w.Chain || typ != w.Type {
		t.Errorf("seq %d: indexed as %s %s, want %s %s", w.Seq, chain, typ, w.Chain, w.Type)
	}
	for _, a := range w.Addresses {
		if strings.HasPrefix(a, "0x") {
			continue // the EVM side of an atomic tx: checked by native balances
		}
		_, bech, _ := strings.Cut(a, "-")
		var n int
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM px_tx_addresses WHERE tx_id = $1 AND address = $2`, w.TxID, bech).Scan(&n); err != nil || n == 0 {
			t.Errorf("seq %d %s: address %s not linked (%v)", w.Seq, w.Type, a, err)
		}
	}
}

func checkEVMTx(t *testing.T, db *store.DB, w workloadTx) {
	t.Helper()
	ctx := context.Background()
	hash := strings.ToLower(w.TxID)
	var block, index, status int64
	var from string
	err := db.QueryRowContext(ctx, `SELECT block_number, tx_index, from_addr, status FROM evm_txs
		WHERE chain_key = 'C' AND hash = $1`, store.Hex(hash)).Scan(&block, &index, store.ScanHex(&from), &status)
	if err != nil {
		t.Errorf("seq %d %s: not indexed: %v", w.Seq, w.TxID, err)
		return
	}
	if !strings.EqualFold(from, w.Addresses[0]) {
		t.Errorf("seq %d: sender %s, workload says %s", w.Seq, from, w.Addresses[0])
	}
	for _, a := range w.Addresses {
		a = strings.ToLower(a)
		if status == 0 && a != from {
			continue // a reverted call's other parties are only in its calldata
		}
		topic := "0x000000000000000000000000" + strings.TrimPrefix(a, "0x")
		var n int
		err := db.QueryRowContext(ctx, `SELECT
			(SELECT COUNT(*) FROM evm_address_txs WHERE chain_key = 'C' AND address = $1 AND block_number = $2 AND tx_index = $3) +
			(SELECT COUNT(*) FROM evm_transfers WHERE chain_key = 'C' AND tx_hash = $4 AND (from_addr = $1 OR to_addr = $1 OR token = $1 OR operator = $1)) +
			(SELECT COUNT(*) FROM evm_logs WHERE chain_key = 'C' AND tx_hash = $4 AND (address = $1 OR topic1 = $5 OR topic2 = $5 OR topic3 = $5))`,
			store.Hex(a), block, index, store.Hex(hash), store.Hex(topic)).Scan(&n)
		if err != nil || n == 0 {
			t.Errorf("seq %d %s: address %s not linked to the tx or its transfers (%v)", w.Seq, w.Type, a, err)
		}
	}
}
