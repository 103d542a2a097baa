package pchain

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/crypto/secp256k1"
	"github.com/ava-labs/avalanchego/utils/formatting/address"
	"github.com/ava-labs/avalanchego/vms/platformvm/fx"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp/message"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"

	"github.com/permafrost-dev/permafrost/internal/decode/primary"
	"github.com/permafrost-dev/permafrost/internal/store"
)

func hash256(b []byte) [32]byte { return sha256.Sum256(b) }

func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "null"
	}
	return string(b)
}

// parseUint reads a stored decimal (padded or not).
func parseUint(s string) (uint64, error) {
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("pchain: stored number %q: %w", s, err)
	}
	return v, nil
}

func hexOrEmpty(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return "0x" + hex.EncodeToString(b)
}

// Owner is the JSON form of an owner (secp256k1fx.OutputOwners or an ACP-77
// PChainOwner) as stored in owner columns.
type Owner struct {
	Locktime  uint64   `json:"locktime"`
	Threshold uint32   `json:"threshold"`
	Addresses []string `json:"addresses"` // bech32 without chain prefix, sorted
}

func (ix *Indexer) ownerOf(o fx.Owner) (Owner, error) {
	oo, ok := o.(*secp256k1fx.OutputOwners)
	if !ok {
		return Owner{}, fmt.Errorf("pchain: unsupported owner type %T", o)
	}
	return ix.ownerFrom(oo.Locktime, oo.Threshold, oo.Addrs)
}

func (ix *Indexer) pchainOwner(o message.PChainOwner) (Owner, error) {
	return ix.ownerFrom(0, o.Threshold, o.Addresses)
}

func (ix *Indexer) ownerFrom(locktime uint64, threshold uint32, addrs []ids.ShortID) (Owner, error) {
	out := Owner{Locktime: locktime, Threshold: threshold, Addresses: make([]string, 0, len(addrs))}
	for _, a := range addrs {
		s, err := address.FormatBech32(ix.hrp, a.Bytes())
		if err != nil {
			return Owner{}, fmt.Errorf("pchain: format address: %w", err)
		}
		out.Addresses = append(out.Addresses, s)
	}
	sort.Strings(out.Addresses)
	return out, nil
}

// Credential is one signature of a tx input with the public key it recovers
// to (base64 both, as the data API's UtxoCredential).
type Credential struct {
	Signature string `json:"signature"`
	PublicKey string `json:"publicKey"`
}

// credentials renders the tx credentials, one list per credential (inputs in
// order, then subnet/disable authorization), recovering each signer's key.
func credentials(stx *txs.Tx) string {
	out := make([][]Credential, 0, len(stx.Creds))
	if stx.Unsigned == nil {
		return "[]"
	}
	msg := stx.Unsigned.Bytes()
	for _, c := range stx.Creds {
		cred, ok := c.(*secp256k1fx.Credential)
		if !ok {
			out = append(out, []Credential{})
			continue
		}
		list := make([]Credential, 0, len(cred.Sigs))
		for _, sig := range cred.Sigs {
			e := Credential{Signature: base64.StdEncoding.EncodeToString(sig[:])}
			if pk, err := secp256k1.RecoverPublicKey(msg, sig[:]); err == nil {
				e.PublicKey = base64.StdEncoding.EncodeToString(pk.Bytes())
			}
			list = append(list, e)
		}
		out = append(out, list)
	}
	return jsonString(out)
}

// txRow is the common row of a P tx.
type txRow struct {
	id           string
	height       uint64
	index        int
	blockID      string
	time         int64
	typ          string
	memo         string
	source, dest string
	creds        string
	bytes        []byte
	rewardStaker string
	status       string
	decided      int64
	info         *txInfo
}

// insertTxRow writes px_txs and p_txs for a tx. A proposal tx can be
// accepted again with the same bytes after an abort (e.g. an AdvanceTimeTx
// re-proposed): the later block wins, as the node's tx index does.
func insertTxRow(ctx context.Context, tx *store.Tx, r txRow) error {
	if r.creds == "" {
		r.creds = "[]"
	}
	if _, err := tx.Exec(ctx, `INSERT INTO px_txs (tx_id, chain_key, height, tx_index, block_id, timestamp, tx_type, memo,
		source_chain, destination_chain, credentials, tx_bytes, reward_staker_tx)
		VALUES ($1,'P',$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12)
		ON CONFLICT (tx_id) DO UPDATE SET height = excluded.height, tx_index = excluded.tx_index,
		block_id = excluded.block_id, timestamp = excluded.timestamp, rewarded = FALSE`,
		r.id, int64(r.height), r.index, r.blockID, r.time, r.typ, r.memo, r.source, r.dest, r.creds, r.bytes, r.rewardStaker); err != nil {
		return fmt.Errorf("pchain: insert tx %s: %w", r.id, err)
	}
	var subnet, node, validation, chain string
	if i := r.info; i != nil {
		if i.subnetID != ids.Empty || i.typ == "CreateChainTx" {
			subnet = i.subnetID.String()
		}
		if i.nodeID != ids.EmptyNodeID {
			node = i.nodeID.String()
		}
		if i.validationID != ids.Empty {
			validation = i.validationID.String()
		}
		if i.blockchainID != ids.Empty {
			chain = i.blockchainID.String()
		}
	}
	decided := r.decided
	if r.status != "Processing" && decided == 0 {
		decided = int64(r.height)
	}
	if r.status == "Processing" {
		decided = -1
	}
	if _, err := tx.Exec(ctx, `INSERT INTO p_txs (tx_id, height, status, decided_height, burned, subnet_id, node_id,
		validation_id, blockchain_id) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9)
		ON CONFLICT (tx_id) DO UPDATE SET height = excluded.height, status = excluded.status,
		decided_height = excluded.decided_height, burned = excluded.burned`,
		r.id, int64(r.height), r.status, decided, primary.PadAmount(0), subnet, node, validation, chain); err != nil {
		return fmt.Errorf("pchain: insert p tx %s: %w", r.id, err)
	}
	return nil
}

// newTxRow fills the common row from a decoded tx.
func (ix *Indexer) newTxRow(stx *txs.Tx, info *txInfo, bc *blockCtx, index int, status string) txRow {
	r := txRow{
		id: stx.ID().String(), height: bc.height, index: index, blockID: bc.blockID.String(), time: bc.time,
		typ: info.typ, memo: hexOrEmpty(info.memo), creds: credentials(stx), bytes: stx.Bytes(), status: status, info: info,
	}
	if info.sourceChain != ids.Empty {
		r.source = info.sourceChain.String()
	}
	if info.destChain != ids.Empty {
		r.dest = info.destChain.String()
	}
	if info.rewardStaker != ids.Empty {
		r.rewardStaker = info.rewardStaker.String()
	}
	return r
}

// storeUnknown keeps a tx the indexer could not map, with its raw bytes.
func (ix *Indexer) storeUnknown(ctx context.Context, tx *store.Tx, bc *blockCtx, stx *txs.Tx, index int, cause error) error {
	id := stx.ID()
	ix.Log.Error("pchain: tx stored as UNKNOWN", "height", bc.height, "tx", id, "err", cause)
	return insertTxRow(ctx, tx, txRow{id: id.String(), height: bc.height, index: index, blockID: bc.blockID.String(),
		time: bc.time, typ: "UNKNOWN", bytes: stx.Bytes(), creds: credentials(stx), status: "Committed"})
}
