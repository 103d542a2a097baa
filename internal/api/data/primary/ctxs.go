package primary

import (
	"context"
	"fmt"
)

// EVMInput is the OpenAPI EVMInput: an account an ExportTx debits.
type EVMInput struct {
	FromAddress string       `json:"fromAddress"`
	Asset       AssetAmount  `json:"asset"`
	Credentials []Credential `json:"credentials"`
}

// EVMOutput is the OpenAPI EVMOutput: an account an ImportTx credits.
type EVMOutput struct {
	ToAddress string      `json:"toAddress"`
	Asset     AssetAmount `json:"asset"`
}

// CChainAtomicTx is CChainExportTransaction (txType ExportTx: evmInputs and
// emittedUtxos) or CChainImportTransaction (ImportTx: evmOutputs and
// consumedUtxos); the other pair is left out.
type CChainAtomicTx struct {
	TxHash           string        `json:"txHash"`
	BlockHeight      int64         `json:"blockHeight"`
	BlockHash        string        `json:"blockHash"`
	Timestamp        int64         `json:"timestamp"`
	Memo             string        `json:"memo"`
	AmountUnlocked   []AssetAmount `json:"amountUnlocked"`
	AmountCreated    []AssetAmount `json:"amountCreated"`
	SourceChain      string        `json:"sourceChain"`
	DestinationChain string        `json:"destinationChain"`
	TxType           string        `json:"txType"`
	EVMInputs        []EVMInput    `json:"-"`
	EmittedUtxos     []Utxo        `json:"-"`
	EVMOutputs       []EVMOutput   `json:"-"`
	ConsumedUtxos    []Utxo        `json:"-"`
}

// CChainExportTx is CChainExportTransaction.
type CChainExportTx struct {
	CChainAtomicTx
	EVMInputs    []EVMInput `json:"evmInputs"`
	EmittedUtxos []Utxo     `json:"emittedUtxos"`
}

// CChainImportTx is CChainImportTransaction.
type CChainImportTx struct {
	CChainAtomicTx
	EVMOutputs    []EVMOutput `json:"evmOutputs"`
	ConsumedUtxos []Utxo      `json:"consumedUtxos"`
}

// shape is the tx as the schema of its type.
func (t CChainAtomicTx) shape() any {
	if t.TxType == "ImportTx" {
		return CChainImportTx{CChainAtomicTx: t, EVMOutputs: t.EVMOutputs, ConsumedUtxos: t.ConsumedUtxos}
	}
	return CChainExportTx{CChainAtomicTx: t, EVMInputs: t.EVMInputs, EmittedUtxos: t.EmittedUtxos}
}

// cTxs loads C-chain atomic txs by id, in the order of ids, each shaped
// as CChainExportTx or CChainImportTx.
func (h *handlers) cTxs(ctx context.Context, as *assets, txIDs []string) ([]any, error) {
	if len(txIDs) == 0 {
		return []any{}, nil
	}
	args, in := idArgs(txIDs)
	rows, err := h.d.DB.QueryContext(ctx, `SELECT tx_id, height, block_id, timestamp, tx_type, memo, source_chain,
		destination_chain, chain_key FROM px_txs WHERE tx_id IN (`+in+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("load C atomic txs: %w", err)
	}
	byID := map[string]*CChainAtomicTx{}
	for rows.Next() {
		var t CChainAtomicTx
		var chain string
		if err := rows.Scan(&t.TxHash, &t.BlockHeight, &t.BlockHash, &t.Timestamp, &t.TxType, &t.Memo, &t.SourceChain,
			&t.DestinationChain, &chain); err != nil {
			rows.Close()
			return nil, fmt.Errorf("load C atomic txs: %w", err)
		}
		if chain != "C" { // checked here: see pTxs
			continue
		}
		// The C-chain is the other end of every atomic tx it holds.
		if t.TxType == "ImportTx" {
			t.DestinationChain = h.blockchainID("C")
		} else {
			t.SourceChain = h.blockchainID("C")
		}
		byID[t.TxHash] = &t
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load C atomic txs: %w", err)
	}
	emitted, err := queryUTXOs(ctx, h.d.DB, `SELECT `+utxoColumns+` FROM utxos WHERE tx_id IN (`+in+`)
		AND created_chain = 'C' ORDER BY tx_id, output_index`, args...)
	if err != nil {
		return nil, err
	}
	consumed, err := queryUTXOs(ctx, h.d.DB, `SELECT `+utxoColumns+` FROM utxos WHERE consumed_tx IN (`+in+`)
		ORDER BY consumed_tx, consumed_input_index, utxo_id`, args...)
	if err != nil {
		return nil, err
	}
	type io struct {
		txID, dir, addr, asset, amount string
		index                          int
	}
	var ios []io
	ioRows, err := h.d.DB.QueryContext(ctx, `SELECT tx_id, direction, io_index, address, asset_id, amount FROM c_atomic_evm_io
		WHERE tx_id IN (`+in+`) ORDER BY tx_id, direction, io_index`, args...)
	if err != nil {
		return nil, fmt.Errorf("load atomic EVM inputs/outputs: %w", err)
	}
	var ioAssets []string
	for ioRows.Next() {
		var x io
		if err := ioRows.Scan(&x.txID, &x.dir, &x.index, &x.addr, &x.asset, &x.amount); err != nil {
			ioRows.Close()
			return nil, fmt.Errorf("load atomic EVM inputs/outputs: %w", err)
		}
		x.amount = unpad(x.amount)
		ios = append(ios, x)
		ioAssets = append(ioAssets, x.asset)
	}
	ioRows.Close()
	if err := ioRows.Err(); err != nil {
		return nil, fmt.Errorf("load atomic EVM inputs/outputs: %w", err)
	}
	if err := as.load(ctx, ioAssets...); err != nil {
		return nil, err
	}
	s, err := h.prepare(ctx, as, append(append([]*utxoRow{}, emitted...), consumed...))
	if err != nil {
		return nil, err
	}
	creds, err := credentials(ctx, h.d.DB, txIDs)
	if err != nil {
		return nil, err
	}
	for _, u := range emitted {
		if t := byID[u.TxID]; t != nil {
			t.EmittedUtxos = append(t.EmittedUtxos, s.utxo(u))
		}
	}
	for _, u := range consumed {
		if t := byID[u.ConsumedTx]; t != nil {
			t.ConsumedUtxos = append(t.ConsumedUtxos, s.utxo(u))
		}
	}
	for _, x := range ios {
		t := byID[x.txID]
		if t == nil {
			continue
		}
		a := as.amount(x.asset, x.amount)
		if x.dir == "IN" {
			in := EVMInput{FromAddress: x.addr, Asset: a, Credentials: []Credential{}}
			// An export's credentials sign its EVM inputs, one per input.
			if c := creds[x.txID]; x.index < len(c) && c[x.index] != nil {
				in.Credentials = c[x.index]
			}
			t.EVMInputs = append(t.EVMInputs, in)
		} else {
			t.EVMOutputs = append(t.EVMOutputs, EVMOutput{ToAddress: x.addr, Asset: a})
		}
	}
	out := make([]any, 0, len(txIDs))
	for _, id := range txIDs {
		t := byID[id]
		if t == nil {
			continue
		}
		if t.TxType == "ImportTx" {
			if t.ConsumedUtxos == nil {
				t.ConsumedUtxos = []Utxo{}
			}
			if t.EVMOutputs == nil {
				t.EVMOutputs = []EVMOutput{}
			}
			t.AmountUnlocked = sumAmounts(t.ConsumedUtxos)
			t.AmountCreated = sumAmounts(evmOutputAmounts(t.EVMOutputs))
			t.EmittedUtxos = nil
		} else {
			if t.EmittedUtxos == nil {
				t.EmittedUtxos = []Utxo{}
			}
			if t.EVMInputs == nil {
				t.EVMInputs = []EVMInput{}
			}
			var ins []Utxo
			for _, x := range t.EVMInputs {
				ins = append(ins, Utxo{Asset: x.Asset})
			}
			t.AmountUnlocked = sumAmounts(ins)
			t.AmountCreated = sumAmounts(t.EmittedUtxos)
			t.ConsumedUtxos = nil
		}
		out = append(out, t.shape())
	}
	return out, nil
}

func evmOutputAmounts(outs []EVMOutput) []Utxo {
	us := make([]Utxo, len(outs))
	for i, o := range outs {
		us[i].Asset = o.Asset
	}
	return us
}
