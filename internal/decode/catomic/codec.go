// Package catomic decodes and indexes the C-chain's atomic transactions (its
// imports from and exports to the P and X chains), which a C block carries in
// its blockExtraData, and holds the helpers the X-chain indexer shares with it.
//
// The types below are copies of coreth's plugin/evm/atomic codec types
// (UnsignedImportTx, UnsignedExportTx, EVMInput, EVMOutput, Tx). Coreth lives
// in avalanchego's graft/coreth module, which cannot be built in this module,
// so the wire format is re-declared here field for field, with the same codec:
// a linearcodec registering the types in coreth's order and with its skipped
// type IDs, under codec version 0 of a default-size manager. Type IDs:
//
//	0 UnsignedImportTx        1 UnsignedExportTx     2-4 skipped
//	5 secp256k1fx.TransferInput                      6 skipped
//	7 secp256k1fx.TransferOutput                     8 skipped
//	9 secp256k1fx.Credential  10 secp256k1fx.Input   11 secp256k1fx.OutputOwners
//
// Tests check the decoded IDs against the node's avax.getAtomicTx answers.
package catomic

import (
	"database/sql"
	"errors"
	"fmt"

	"github.com/ava-labs/avalanchego/codec"
	"github.com/ava-labs/avalanchego/codec/linearcodec"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/hashing"
	"github.com/ava-labs/avalanchego/vms/components/avax"
	"github.com/ava-labs/avalanchego/vms/components/verify"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"
	"github.com/ava-labs/libevm/common"
)

// CodecVersion is coreth's atomic codec version.
const CodecVersion = uint16(0)

// EVMOutput is an output an import adds to the EVM state.
type EVMOutput struct {
	Address common.Address `serialize:"true" json:"address"`
	Amount  uint64         `serialize:"true" json:"amount"`
	AssetID ids.ID         `serialize:"true" json:"assetID"`
}

// EVMInput is an input an export takes from the EVM state.
type EVMInput struct {
	Address common.Address `serialize:"true" json:"address"`
	Amount  uint64         `serialize:"true" json:"amount"`
	AssetID ids.ID         `serialize:"true" json:"assetID"`
	Nonce   uint64         `serialize:"true" json:"nonce"`
}

// UnsignedAtomicTx is either *UnsignedImportTx or *UnsignedExportTx.
type UnsignedAtomicTx interface {
	atomicTx()
}

// UnsignedImportTx consumes UTXOs exported to the C-chain by SourceChain.
type UnsignedImportTx struct {
	NetworkID      uint32                    `serialize:"true" json:"networkID"`
	BlockchainID   ids.ID                    `serialize:"true" json:"blockchainID"`
	SourceChain    ids.ID                    `serialize:"true" json:"sourceChain"`
	ImportedInputs []*avax.TransferableInput `serialize:"true" json:"importedInputs"`
	Outs           []EVMOutput               `serialize:"true" json:"outputs"`
}

// UnsignedExportTx debits EVM accounts and creates UTXOs on DestinationChain.
type UnsignedExportTx struct {
	NetworkID        uint32                     `serialize:"true" json:"networkID"`
	BlockchainID     ids.ID                     `serialize:"true" json:"blockchainID"`
	DestinationChain ids.ID                     `serialize:"true" json:"destinationChain"`
	Ins              []EVMInput                 `serialize:"true" json:"inputs"`
	ExportedOutputs  []*avax.TransferableOutput `serialize:"true" json:"exportedOutputs"`
}

func (*UnsignedImportTx) atomicTx() {}
func (*UnsignedExportTx) atomicTx() {}

// Tx is a signed atomic tx. Its ID is sha256 of its signed bytes.
type Tx struct {
	UnsignedAtomicTx `serialize:"true" json:"unsignedTx"`
	Creds            []verify.Verifiable `serialize:"true" json:"credentials"`

	id            ids.ID
	unsignedBytes []byte
	signedBytes   []byte
}

// ID is the tx ID (as avax.getAtomicTx and the data API name it).
func (t *Tx) ID() ids.ID { return t.id }

// UnsignedBytes are the bytes the credentials sign.
func (t *Tx) UnsignedBytes() []byte { return t.unsignedBytes }

// Bytes are the signed tx bytes.
func (t *Tx) Bytes() []byte { return t.signedBytes }

// NewCodec builds coreth's atomic codec (see the package comment).
func NewCodec() (codec.Manager, error) {
	m := codec.NewDefaultManager()
	lc := linearcodec.NewDefault()
	errs := []error{
		lc.RegisterType(&UnsignedImportTx{}),
		lc.RegisterType(&UnsignedExportTx{}),
	}
	lc.SkipRegistrations(3)
	errs = append(errs, lc.RegisterType(&secp256k1fx.TransferInput{}))
	lc.SkipRegistrations(1)
	errs = append(errs, lc.RegisterType(&secp256k1fx.TransferOutput{}))
	lc.SkipRegistrations(1)
	errs = append(errs,
		lc.RegisterType(&secp256k1fx.Credential{}),
		lc.RegisterType(&secp256k1fx.Input{}),
		lc.RegisterType(&secp256k1fx.OutputOwners{}),
		m.RegisterCodec(CodecVersion, lc),
	)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("catomic: build codec: %w", err)
	}
	return m, nil
}

// Decode parses a C block's blockExtraData in the batch format every block
// uses since ApricotPhase5 (a codec-encoded list of txs). Empty extra data is
// no txs. Use DecodeExtraData for blocks of any age.
func Decode(extraData []byte) ([]*Tx, error) {
	c, err := NewCodec()
	if err != nil {
		return nil, err
	}
	return decode(c, extraData, true)
}

// DecodeExtraData parses blockExtraData of a block: batch holds when
// ApricotPhase5 was active at the block's time; before it, a block carried at
// most one atomic tx, encoded alone.
func DecodeExtraData(extraData []byte, batch bool) ([]*Tx, error) {
	c, err := NewCodec()
	if err != nil {
		return nil, err
	}
	return decode(c, extraData, batch)
}

func decode(c codec.Manager, extraData []byte, batch bool) (txs []*Tx, err error) {
	if len(extraData) == 0 {
		return nil, nil
	}
	defer func() { // hostile bytes must not take the indexer down
		if r := recover(); r != nil {
			txs, err = nil, fmt.Errorf("catomic: decode panicked: %v", r)
		}
	}()
	if batch {
		if _, err := c.Unmarshal(extraData, &txs); err != nil {
			return nil, fmt.Errorf("catomic: decode atomic txs: %w", err)
		}
		if len(txs) == 0 {
			return nil, errors.New("catomic: non-empty extra data without atomic txs")
		}
	} else {
		tx := new(Tx)
		if _, err := c.Unmarshal(extraData, tx); err != nil {
			return nil, fmt.Errorf("catomic: decode atomic tx: %w", err)
		}
		txs = []*Tx{tx}
	}
	for i, tx := range txs {
		if err := tx.initialize(c); err != nil {
			return nil, fmt.Errorf("catomic: atomic tx %d: %w", i, err)
		}
	}
	return txs, nil
}

// initialize sets the bytes and ID the way coreth does: by re-marshalling
// (the codec is canonical, so these are the bytes as issued).
func (t *Tx) initialize(c codec.Manager) error {
	if t == nil || t.UnsignedAtomicTx == nil {
		return errors.New("nil tx")
	}
	unsigned, err := c.Marshal(CodecVersion, &t.UnsignedAtomicTx)
	if err != nil {
		return fmt.Errorf("marshal unsigned tx: %w", err)
	}
	signed, err := c.Marshal(CodecVersion, t)
	if err != nil {
		return fmt.Errorf("marshal tx: %w", err)
	}
	t.unsignedBytes, t.signedBytes = unsigned, signed
	t.id = hashing.ComputeHash256Array(signed)
	return nil
}

// signatures lists each credential's signatures (all are secp256k1fx credentials).
func (t *Tx) signatures() ([][][65]byte, error) {
	out := make([][][65]byte, len(t.Creds))
	for i, c := range t.Creds {
		cred, ok := c.(*secp256k1fx.Credential)
		if !ok {
			return nil, fmt.Errorf("catomic: credential %d is %T", i, c)
		}
		out[i] = cred.Sigs
	}
	return out, nil
}

func isNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }
