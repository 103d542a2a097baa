package livenet

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"time"

	"github.com/ava-labs/libevm/common"
	"github.com/ava-labs/libevm/common/hexutil"
	"github.com/ava-labs/libevm/core/types"

	"github.com/ava-labs/avalanchego/graft/coreth/ethclient"
	"github.com/ava-labs/avalanchego/ids"

	ethereum "github.com/ava-labs/libevm"
)

// TxKind selects the EVM tx envelope; the zero value is EIP-1559.
type TxKind uint8

// EVM tx envelope kinds.
const (
	TxDynamicFee TxKind = iota // type 2 (the default)
	TxLegacy                   // type 0
	TxAccessList               // type 1 (EIP-2930)
)

// EVMChain sends and tracks txs on one EVM chain (the C-chain or the L1).
// Nonces are kept locally so one sender can have several txs in flight,
// which is what puts several txs in one block.
type EVMChain struct {
	Name         string // ChainC or ChainL1
	BlockchainID ids.ID
	URL          string
	Client       *ethclient.Client
	ChainID      *big.Int

	log    *TxLog
	mu     sync.Mutex
	nonces map[common.Address]uint64
}

// DialEVM connects to an EVM JSON-RPC endpoint.
func DialEVM(ctx context.Context, name string, blockchainID ids.ID, url string, log *TxLog) (*EVMChain, error) {
	c, err := ethclient.DialContext(ctx, url)
	if err != nil {
		return nil, err
	}
	chainID, err := c.ChainID(ctx)
	if err != nil {
		return nil, err
	}
	return &EVMChain{Name: name, BlockchainID: blockchainID, URL: url, Client: c, ChainID: chainID, log: log, nonces: map[common.Address]uint64{}}, nil
}

// EVMTx describes one tx to send.
type EVMTx struct {
	From  *Key
	To    *common.Address // nil: contract creation
	Value *big.Int
	Data  []byte
	// Gas 0 estimates (x1.5); a fixed value is needed for txs meant to revert.
	Gas        uint64
	Kind       TxKind
	AccessList types.AccessList

	Step    string
	Type    string // "Transfer", "ContractCreation", "ContractCall:<method>"; derived when empty
	Purpose string
	// Addresses beyond From/To (recipients inside the call data).
	Addresses    []common.Address
	ExpectRevert bool
	Extra        map[string]any
}

// Pending is a sent EVM tx waiting for its receipt.
type Pending struct {
	Tx      *types.Transaction
	Record  *TxRecord
	expect  bool
	Receipt *types.Receipt
}

// ContractAddress is the created contract of a ContractCreation (after Wait).
func (p *Pending) ContractAddress() common.Address { return p.Receipt.ContractAddress }

func (c *EVMChain) nextNonce(ctx context.Context, addr common.Address) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.nonces[addr]
	if !ok {
		var hexN hexutil.Uint64
		if err := rpcCall(ctx, c.URL, "eth_getTransactionCount", []any{addr, "pending"}, &hexN); err != nil {
			return 0, err
		}
		n = uint64(hexN)
	}
	c.nonces[addr] = n + 1
	return n, nil
}

// resetNonce forgets the local nonce of addr (after a failed send).
func (c *EVMChain) resetNonce(addr common.Address) {
	c.mu.Lock()
	delete(c.nonces, addr)
	c.mu.Unlock()
}

// gasPrices are the node's suggestions: eth_gasPrice (base fee + tip) and
// eth_maxPriorityFeePerGas. Fee caps are twice the suggestion, as
// avalanchego's e2e tests do, so a base fee rise does not strand a tx.
func (c *EVMChain) gasPrices(ctx context.Context) (price, tip *big.Int, err error) {
	var p, t hexutil.Big
	if err := rpcCall(ctx, c.URL, "eth_gasPrice", []any{}, &p); err != nil {
		return nil, nil, err
	}
	if err := rpcCall(ctx, c.URL, "eth_maxPriorityFeePerGas", []any{}, &t); err != nil {
		return nil, nil, err
	}
	return (*big.Int)(&p), (*big.Int)(&t), nil
}

// Send signs and sends tx and logs it; it does not wait.
func (c *EVMChain) Send(ctx context.Context, tx EVMTx) (*Pending, error) {
	from := tx.From.EthAddress()
	value := tx.Value
	if value == nil {
		value = new(big.Int)
	}
	gas := tx.Gas
	if gas == 0 {
		msg := ethereum.CallMsg{From: from, To: tx.To, Value: value, Data: tx.Data}
		est, err := c.Client.EstimateGas(ctx, msg)
		if err != nil {
			return nil, fmt.Errorf("%s %s: estimating gas: %w", c.Name, tx.Step, err)
		}
		gas = est * 3 / 2
	}
	price, tip, err := c.gasPrices(ctx)
	if err != nil {
		return nil, err
	}
	feeCap := new(big.Int).Mul(price, big.NewInt(2))
	nonce, err := c.nextNonce(ctx, from)
	if err != nil {
		return nil, err
	}
	var inner types.TxData
	switch tx.Kind {
	case TxLegacy:
		inner = &types.LegacyTx{Nonce: nonce, GasPrice: feeCap, Gas: gas, To: tx.To, Value: value, Data: tx.Data}
	case TxAccessList:
		inner = &types.AccessListTx{ChainID: c.ChainID, Nonce: nonce, GasPrice: feeCap, Gas: gas, To: tx.To, Value: value, Data: tx.Data, AccessList: tx.AccessList}
	default:
		inner = &types.DynamicFeeTx{ChainID: c.ChainID, Nonce: nonce, GasTipCap: tip, GasFeeCap: feeCap.Add(feeCap, tip), Gas: gas, To: tx.To, Value: value, Data: tx.Data, AccessList: tx.AccessList}
	}
	signed, err := types.SignNewTx(tx.From.Key.ToECDSA(), types.LatestSignerForChainID(c.ChainID), inner)
	if err != nil {
		return nil, err
	}

	typ := tx.Type
	if typ == "" {
		switch {
		case tx.To == nil:
			typ = "ContractCreation"
		case len(tx.Data) == 0:
			typ = "Transfer"
		default:
			typ = "ContractCall"
		}
	}
	addrs := []string{from.Hex()}
	if tx.To != nil {
		addrs = append(addrs, tx.To.Hex())
	}
	for _, a := range tx.Addresses {
		addrs = append(addrs, a.Hex())
	}
	extra := map[string]any{"txType": signed.Type(), "nonce": nonce, "gas": gas}
	if value.Sign() != 0 {
		extra["value"] = value.String()
	}
	if tx.To != nil {
		extra["to"] = tx.To.Hex()
	}
	if tx.ExpectRevert {
		extra["expectRevert"] = true
	}
	for k, v := range tx.Extra {
		extra[k] = v
	}
	rec := c.log.Add(&TxRecord{
		Step: tx.Step, Chain: c.Name, BlockchainID: c.BlockchainID.String(), Type: typ,
		TxID: signed.Hash().Hex(), Purpose: tx.Purpose, Addresses: dedupe(addrs), Extra: extra,
	})
	if err := c.Client.SendTransaction(ctx, signed); err != nil {
		c.resetNonce(from)
		return nil, fmt.Errorf("%s %s: sending: %w", c.Name, tx.Step, err)
	}
	return &Pending{Tx: signed, Record: rec, expect: tx.ExpectRevert}, nil
}

// Wait waits for the receipts of ps and records heights and status. A tx
// whose status is not the expected one (success, or revert when
// ExpectRevert) is an error.
func (c *EVMChain) Wait(ctx context.Context, ps ...*Pending) error {
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	var errs []error
	for _, p := range ps {
		for {
			r, err := c.Client.TransactionReceipt(ctx, p.Tx.Hash())
			if err == nil {
				p.Receipt = r
				break
			}
			if !errors.Is(err, ethereum.NotFound) && !strings.Contains(err.Error(), "not found") {
				return fmt.Errorf("%s %s receipt: %w", c.Name, p.Record.Step, err)
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("%s %s (%s): no receipt: %w", c.Name, p.Record.Step, p.Tx.Hash().Hex(), ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
		r := p.Receipt
		status := r.Status
		c.log.update(func([]*TxRecord) {
			p.Record.Accepted = true
			p.Record.Time = time.Now().UTC()
			p.Record.Height = r.BlockNumber.Uint64()
			p.Record.BlockID = r.BlockHash.Hex()
			p.Record.Status = &status
			p.Record.Extra["gasUsed"] = r.GasUsed
			if r.ContractAddress != (common.Address{}) {
				p.Record.Extra["contractAddress"] = r.ContractAddress.Hex()
				p.Record.Addresses = dedupe(append(p.Record.Addresses, r.ContractAddress.Hex()))
			}
		})
		reverted := status == types.ReceiptStatusFailed
		if reverted != p.expect {
			errs = append(errs, fmt.Errorf("%s %s (%s): status %d, expected revert %v", c.Name, p.Record.Step, p.Tx.Hash().Hex(), status, p.expect))
		}
	}
	return errors.Join(errs...)
}

// SendWait sends txs (in order) and waits for all of them.
func (c *EVMChain) SendWait(ctx context.Context, txs ...EVMTx) ([]*Pending, error) {
	var ps []*Pending
	for _, tx := range txs {
		p, err := c.Send(ctx, tx)
		if err != nil {
			if len(ps) > 0 {
				_ = c.Wait(ctx, ps...)
			}
			return ps, err
		}
		ps = append(ps, p)
	}
	return ps, c.Wait(ctx, ps...)
}

// CallView makes an eth_call at the latest block and unpacks into a slice of results.
func (c *EVMChain) CallView(ctx context.Context, contract *Contract, to common.Address, method string, args ...any) ([]any, error) {
	data := contract.Call(method, args...)
	out, err := c.Client.CallContract(ctx, ethereum.CallMsg{To: &to, Data: data}, nil)
	if err != nil {
		return nil, err
	}
	return contract.ABI.Unpack(method, out)
}

// BlockNumber is the chain's last accepted height.
func (c *EVMChain) BlockNumber(ctx context.Context) (uint64, error) {
	return c.Client.BlockNumber(ctx)
}

// Avax converts whole AVAX (or L1 native tokens) to wei.
func Avax(n int64) *big.Int {
	return new(big.Int).Mul(big.NewInt(n), big.NewInt(1e18))
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func addrPtr(a common.Address) *common.Address { return &a }
