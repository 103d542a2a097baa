package evm

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// txKey is a transaction's place in its chain: (block number, index).
type txKey struct{ Block, Index int64 }

func (k txKey) less(o txKey) bool {
	return k.Block < o.Block || k.Block == o.Block && k.Index < o.Index
}

// txCols are the evm_txs columns (alias t) of a NativeTransaction with the
// recipient contract's names (alias c, joined by txJoin); scanTx reads them.
const txCols = `t.block_number, t.tx_index, t.hash, t.block_hash, t.block_time,
	t.from_addr, t.to_addr, t.value, t.gas_limit, t.gas_price, t.gas_used, t.nonce, t.tx_type, t.status,
	t.method_id, t.contract_address, c.address, c.name, c.symbol, c.decimals`

// txJoin joins the recipient's contract row (evm_contracts keys addresses
// by text).
func (h *handlers) txJoin() string {
	return ` LEFT JOIN evm_contracts c ON c.chain_key = t.chain_key AND c.address = ` + h.d.DB.Dialect().HexExpr("t.to_addr")
}

// scanTx reads txCols (then extra) into a NativeTransaction of chain.
func scanTx(rows interface{ Scan(...any) error }, chain api.ChainRef, extra ...any) (NativeTransaction, txKey, error) {
	var t NativeTransaction
	var k txKey
	var to, gasPrice, methodID, created string
	var gasLimit, gasUsed, nonce, status int64
	var contract, name, symbol sql.NullString
	var decimals sql.NullInt64
	if err := rows.Scan(append([]any{&k.Block, &k.Index, store.ScanHex(&t.TxHash), store.ScanHex(&t.BlockHash), &t.BlockTimestamp,
		store.ScanHex(&t.From.Address), store.ScanHex(&to), &t.Value, &gasLimit, &gasPrice, &gasUsed, &nonce, &t.TxType, &status,
		&methodID, store.ScanHex(&created), &contract, &name, &symbol, &decimals}, extra...)...); err != nil {
		return t, k, err
	}
	t.BlockNumber = strconv.FormatInt(k.Block, 10)
	t.BlockIndex = k.Index
	t.ChainID = chain.EVMChainID
	t.TxStatus = strconv.FormatInt(status, 10)
	t.GasLimit, t.GasUsed, t.GasPrice = strconv.FormatInt(gasLimit, 10), strconv.FormatInt(gasUsed, 10), gasPrice
	t.Nonce = strconv.FormatInt(nonce, 10)
	t.Method = txMethod(callType(to, contract.Valid), methodID)
	t.To.Address = to
	if to == "" {
		// A creation's recipient is the contract it created (the
		// receipt's contractAddress).
		t.To.Address = created
	} else if contract.Valid {
		t.To.Name, t.To.Symbol = name.String, symbol.String
		if decimals.Valid {
			d := int(decimals.Int64)
			t.To.Decimals = &d
		}
	}
	return t, k, nil
}

// txMethod is a transaction's Method as the published document describes
// it: the selector and, for the standard interfaces, its signature only for
// a contract call; "Native Transfer" and "Contract Created" name the others
// (a creation's input starts with init code, not a selector).
func txMethod(callType, methodID string) Method {
	switch callType {
	case CallContractCall:
		return Method{CallType: callType, MethodHash: methodID, MethodName: knownMethods[methodID]}
	case CallContractCreation:
		return Method{CallType: callType, MethodName: "Contract Created"}
	}
	return Method{CallType: callType, MethodName: "Native Transfer"}
}

// txsByKey reads the transactions at keys (at most a page) of chain.
func (h *handlers) txsByKey(ctx context.Context, chain api.ChainRef, keys []txKey) (map[txKey]NativeTransaction, error) {
	out := make(map[txKey]NativeTransaction, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	// The keys as a list of constant rows joined to the primary key: an OR
	// of (block, index) pairs, or a row-value IN, is planned by SQLite as a
	// walk of the chain's every transaction.
	vals := map[string]any{"chain": chain.Key}
	rowsList := make([]string, len(keys))
	for i, k := range keys {
		b, x := "b"+strconv.Itoa(i), "i"+strconv.Itoa(i)
		vals[b], vals[x] = k.Block, k.Index
		rowsList[i] = "(CAST(@" + b + " AS BIGINT), CAST(@" + x + " AS BIGINT))"
	}
	// CROSS JOIN: SQLite keeps the key list as the outer loop (it may
	// otherwise walk the chain's transactions and probe the list).
	rows, err := h.query(ctx, `WITH txkeys (b, i) AS (VALUES `+strings.Join(rowsList, ", ")+`)
		SELECT `+txCols+` FROM txkeys CROSS JOIN evm_txs t`+h.txJoin()+`
		WHERE t.chain_key = @chain AND t.block_number = txkeys.b AND t.tx_index = txkeys.i`, vals)
	if err != nil {
		return nil, fmt.Errorf("transactions of %s: %w", chain.Key, err)
	}
	defer rows.Close()
	for rows.Next() {
		t, k, err := scanTx(rows, chain)
		if err != nil {
			return nil, fmt.Errorf("transactions of %s: %w", chain.Key, err)
		}
		out[k] = t
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("transactions of %s: %w", chain.Key, err)
	}
	return out, nil
}

// txTransfers are the token transfers of one transaction, by standard.
type txTransfers struct {
	erc20, erc721, erc1155 []TransferDetails
}

// transfersOf reads the token transfers of the transactions at keys, in log
// order. addr != "": only those it sent or received (an address's history).
// v2: ERC-20 tokens carry their reputation (Erc20TokenV2); filterSpam drops
// transfers of tokens the enrichment judged Malicious.
func (h *handlers) transfersOf(ctx context.Context, chain api.ChainRef, keys []txKey, addr string, v2, filterSpam bool) (map[txKey]*txTransfers, error) {
	out := map[txKey]*txTransfers{}
	if len(keys) == 0 {
		return out, nil
	}
	want := make(map[txKey]bool, len(keys))
	blocks := map[int64]bool{}
	for _, k := range keys {
		want[k] = true
		blocks[k.Block] = true
	}
	vals := map[string]any{"chain": chain.Key}
	marks := make([]string, 0, len(blocks))
	for b := range blocks {
		name := "n" + strconv.Itoa(len(marks))
		vals[name] = b
		marks = append(marks, "@"+name)
	}
	// All the blocks' transfers (a transaction's detail); an address's: its
	// rows in the from and to indexes (a block can hold many transfers of
	// others), the transfers to itself once.
	conds := []string{""}
	if addr != "" {
		vals["addr"] = store.Hex(addr)
		conds = []string{h.d.DB.IndexedBy(ctx, "evm_transfers_from") + "@ AND f.from_addr = @addr",
			h.d.DB.IndexedBy(ctx, "evm_transfers_to") + "@ AND f.to_addr = @addr AND f.from_addr <> @addr"}
	}
	for _, c := range conds {
		idx, cond, _ := strings.Cut(c, "@")
		if c == "" {
			idx, cond = "", ""
		}
		if err := h.transfersQuery(ctx, vals, idx, cond, marks, want, out, v2, filterSpam); err != nil {
			return nil, fmt.Errorf("transfers of %d transactions: %w", len(keys), err)
		}
	}
	// Log order within each transaction (the two address queries interleave).
	for _, tt := range out {
		for _, l := range [][]TransferDetails{tt.erc20, tt.erc721, tt.erc1155} {
			sort.SliceStable(l, func(i, j int) bool { return l[i].LogIndex < l[j].LogIndex })
		}
	}
	return out, nil
}

// transfersQuery reads the transfers of the blocks marks (of index idx,
// with the extra condition cond) into out, keeping the transactions want.
func (h *handlers) transfersQuery(ctx context.Context, vals map[string]any, idx, cond string, marks []string,
	want map[txKey]bool, out map[txKey]*txTransfers, v2, filterSpam bool) error {
	token := h.d.DB.Dialect().HexExpr("f.token")
	rows, err := h.query(ctx, `SELECT f.block_number, f.tx_index, f.log_index, f.erc_type, f.token, f.from_addr, f.to_addr,
			f.token_id, f.value, c.name, c.symbol, c.decimals, rep.reputation,
			n.token_uri, COALESCE(n.metadata_status, ''), n.metadata, COALESCE(n.metadata_updated_at, 0)
		FROM evm_transfers f`+idx+`
		LEFT JOIN evm_contracts c ON c.chain_key = f.chain_key AND c.address = `+token+`
		LEFT JOIN enrich_token_reputation rep ON rep.chain_key = f.chain_key AND rep.address = `+token+`
		LEFT JOIN evm_nft_tokens n ON n.chain_key = f.chain_key AND n.token = `+token+` AND n.token_id = f.token_id
			AND f.erc_type <> 'ERC-20'
		WHERE f.chain_key = @chain AND f.block_number IN (`+strings.Join(marks, ", ")+`)`+cond+`
		ORDER BY f.block_number, f.log_index, f.batch_index`, vals)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var k txKey
		var x TransferDetails
		var typ, tok, id, value, status string
		var name, symbol, rep, uri, doc sql.NullString
		var decimals sql.NullInt64
		var updated int64
		if err := rows.Scan(&k.Block, &k.Index, &x.LogIndex, &typ, store.ScanHex(&tok), store.ScanHex(&x.From.Address),
			store.ScanHex(&x.To.Address), &id, &value, &name, &symbol, &decimals, &rep, &uri, &status, &doc, &updated); err != nil {
			return err
		}
		if !want[k] {
			continue
		}
		if out[k] == nil {
			out[k] = &txTransfers{}
		}
		tt := out[k]
		switch typ {
		case ercERC20:
			if filterSpam && rep.String == "Malicious" {
				continue
			}
			x.Value = &value
			t := Erc20Token{Address: tok, Name: name.String, Symbol: symbol.String, Decimals: int(decimals.Int64), ErcType: ercERC20}
			if v2 {
				x.Erc20Token = &Erc20TokenV2{Erc20Token: t, TokenReputation: nullString(rep)}
			} else {
				x.Erc20Token = &t
			}
			tt.erc20 = append(tt.erc20, x)
		case ercERC721:
			x.Erc721Token = &Erc721Token{Address: tok, Name: name.String, Symbol: symbol.String, ErcType: ercERC721,
				TokenID: id, TokenURI: uri.String, Metadata: tokenMetadataAt(status, doc.String, false, updated)}
			tt.erc721 = append(tt.erc721, x)
		case ercERC1155:
			x.Value = &value
			x.Erc1155Token = &Erc1155Token{Address: tok, ErcType: ercERC1155, TokenID: id, TokenURI: uri.String,
				Metadata: tokenMetadataAt(status, doc.String, true, updated)}
			tt.erc1155 = append(tt.erc1155, x)
		default:
			return fmt.Errorf("transfer at block %d log %d: unknown erc type %q", k.Block, x.LogIndex, typ)
		}
	}
	return rows.Err()
}

func nullString(s sql.NullString) *string {
	if !s.Valid {
		return nil
	}
	return &s.String
}

// internalTransactions returns the internal transactions (value transfers
// and creations inside contract calls, from call traces) of the
// transactions at keys; addr != "": only those it sent or received.
//
// Hook for the call-trace indexing (issue #18 part B): the index holds no
// traces yet, so there are none to show and the lists are left out.
func (h *handlers) internalTransactions(ctx context.Context, chain api.ChainRef, keys []txKey, addr string) (map[txKey][]InternalTransactionDetails, error) {
	return nil, nil
}

// sortKeys orders keys newest first (desc) or oldest first.
func sortKeys(keys []txKey, desc bool) {
	sort.Slice(keys, func(i, j int) bool {
		if desc {
			return keys[j].less(keys[i])
		}
		return keys[i].less(keys[j])
	})
}
