// Package chainmetrics recomputes the Metrics API's EVM chain metrics from
// blocks and receipts as a node answers them (eth_getBlockByNumber with full
// txs, eth_getBlockReceipts), independently of the index and its rollups:
// the expected answers of the metrics tests, written from the definitions in
// docs/metrics.md. Test-only.
package chainmetrics

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// Event topics of the token transfers that make addresses active.
const (
	topicTransfer       = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"
	topicTransferSingle = "0xc3d58168c5ae7397731d063d5bbf3d657854427343f4c083240f7aacaa2d0f62"
	topicTransferBatch  = "0x4a39dc06d4c0dbc64b70af90fd698a233a518aa5d07e595d983b8c0526c8f7fb"
	zeroAddress         = "0x0000000000000000000000000000000000000000"
)

// Tx is what the metrics need of a transaction, from its receipt.
type Tx struct {
	From, To string
	GasUsed  int64
	Price    *big.Int
	Created  bool // a successful top-level contract creation
}

// Block is one block: its time in milliseconds, txs and token transfers
// (from, to), and the creators of the contracts its traces created inside
// txs (none without traces).
type Block struct {
	Number, Ms int64
	Txs        []Tx
	Transfers  [][2]string
	Nested     []string
	// Moves are the block's ERC-20 and ERC-721 Transfer logs, with amounts
	// (an ERC-721 token counts 1).
	Moves []Move
}

// Move is one Transfer log of a token.
type Move struct {
	Token, From, To string
	Amount          *big.Int
}

func hexInt(s string) (int64, error) {
	return strconv.ParseInt(strings.TrimPrefix(s, "0x"), 16, 64)
}

func topicAddr(topic string) string { return "0x" + strings.ToLower(topic[len(topic)-40:]) }

// Parse reads a block (eth_getBlockByNumber with full txs) and its receipts
// (eth_getBlockReceipts).
func Parse(block, receipts json.RawMessage) (Block, error) {
	var b struct {
		Number      string `json:"number"`
		Timestamp   string `json:"timestamp"`
		TimestampMs string `json:"timestampMilliseconds"`
	}
	if err := json.Unmarshal(block, &b); err != nil {
		return Block{}, fmt.Errorf("block: %w", err)
	}
	var out Block
	var err error
	if out.Number, err = hexInt(b.Number); err != nil {
		return Block{}, fmt.Errorf("block number: %w", err)
	}
	sec, err := hexInt(b.Timestamp)
	if err != nil {
		return Block{}, fmt.Errorf("block %d time: %w", out.Number, err)
	}
	out.Ms = sec * 1000
	if b.TimestampMs != "" {
		if out.Ms, err = hexInt(b.TimestampMs); err != nil {
			return Block{}, fmt.Errorf("block %d time: %w", out.Number, err)
		}
	}
	var rs []struct {
		From              string `json:"from"`
		To                string `json:"to"`
		GasUsed           string `json:"gasUsed"`
		EffectiveGasPrice string `json:"effectiveGasPrice"`
		Status            string `json:"status"`
		ContractAddress   string `json:"contractAddress"`
		Logs              []struct {
			Address string   `json:"address"`
			Topics  []string `json:"topics"`
			Data    string   `json:"data"`
		} `json:"logs"`
	}
	if len(receipts) > 0 && string(receipts) != "null" {
		if err := json.Unmarshal(receipts, &rs); err != nil {
			return Block{}, fmt.Errorf("block %d receipts: %w", out.Number, err)
		}
	}
	for _, r := range rs {
		price, ok := new(big.Int).SetString(strings.TrimPrefix(r.EffectiveGasPrice, "0x"), 16)
		if !ok {
			return Block{}, fmt.Errorf("block %d: price %q", out.Number, r.EffectiveGasPrice)
		}
		gas, err := hexInt(r.GasUsed)
		if err != nil {
			return Block{}, fmt.Errorf("block %d: gas used: %w", out.Number, err)
		}
		out.Txs = append(out.Txs, Tx{From: strings.ToLower(r.From), To: strings.ToLower(r.To), GasUsed: gas,
			Price: price, Created: r.Status == "0x1" && r.ContractAddress != "" && r.ContractAddress != zeroAddress})
		for _, lg := range r.Logs {
			switch {
			case len(lg.Topics) >= 3 && lg.Topics[0] == topicTransfer:
				out.Transfers = append(out.Transfers, [2]string{topicAddr(lg.Topics[1]), topicAddr(lg.Topics[2])})
				amount := big.NewInt(1)
				if len(lg.Topics) == 3 {
					if _, ok := amount.SetString(strings.TrimPrefix(lg.Data, "0x"), 16); !ok {
						return Block{}, fmt.Errorf("block %d: transfer amount %q", out.Number, lg.Data)
					}
				}
				out.Moves = append(out.Moves, Move{Token: strings.ToLower(lg.Address), From: topicAddr(lg.Topics[1]),
					To: topicAddr(lg.Topics[2]), Amount: amount})
			case len(lg.Topics) == 4 && (lg.Topics[0] == topicTransferSingle || lg.Topics[0] == topicTransferBatch):
				out.Transfers = append(out.Transfers, [2]string{topicAddr(lg.Topics[2]), topicAddr(lg.Topics[3])})
			}
		}
	}
	return out, nil
}

// Oracle computes every metric over a chain's blocks, ascending from its
// first block.
type Oracle struct{ Blocks []Block }

func counted(a string) bool { return a != "" && a != zeroAddress }

// Window is metric over the blocks with time in [from, to) (unix seconds);
// the cumulative metrics count every block before to.
func (o Oracle) Window(metric string, from, to int64) float64 {
	var txs, gas, contracts, cumTxs, cumContracts, lastMs int64
	fees, priceSum, maxPrice := new(big.Int), new(big.Int), new(big.Int)
	var maxTPS, maxGPS float64
	active, senders, deployers := map[string]bool{}, map[string]bool{}, map[string]bool{}
	everActive, everDeployers := map[string]bool{}, map[string]bool{}
	for i, b := range o.Blocks {
		if b.Ms/1000 >= to {
			break
		}
		in := b.Ms/1000 >= from
		party := func(a string, sender bool) {
			if !counted(a) {
				return
			}
			everActive[a] = true
			if in {
				active[a] = true
				if sender {
					senders[a] = true
				}
			}
		}
		deploy := func(a string) {
			cumContracts++
			if in {
				contracts++
			}
			if counted(a) {
				everDeployers[a] = true
				if in {
					deployers[a] = true
				}
			}
		}
		var blockGas int64
		for _, tx := range b.Txs {
			blockGas += tx.GasUsed
			cumTxs++
			party(tx.From, true)
			party(tx.To, false)
			if tx.Created {
				deploy(tx.From)
			}
			if in {
				txs++
				priceSum.Add(priceSum, tx.Price)
				fees.Add(fees, new(big.Int).Mul(tx.Price, big.NewInt(tx.GasUsed)))
				if tx.Price.Cmp(maxPrice) > 0 {
					maxPrice.Set(tx.Price)
				}
			}
		}
		for _, tr := range b.Transfers {
			party(tr[0], true)
			party(tr[1], false)
		}
		for _, d := range b.Nested {
			deploy(d)
		}
		if !in {
			continue
		}
		gas += blockGas
		lastMs = b.Ms
		if i > 0 {
			d := float64(max(b.Ms-o.Blocks[i-1].Ms, 1))
			maxTPS = max(maxTPS, float64(len(b.Txs))*1000/d)
			maxGPS = max(maxGPS, float64(blockGas)*1000/d)
		}
	}
	perSec := func(n int64) float64 {
		if n == 0 {
			return 0
		}
		return float64(n) / max(float64(lastMs-from*1000)/1000, 1)
	}
	ratio := func(v *big.Int, n int64) float64 {
		if n == 0 {
			return 0
		}
		f, _ := new(big.Rat).SetFrac(v, big.NewInt(n)).Float64()
		return f
	}
	switch metric {
	case "activeAddresses":
		return float64(len(active))
	case "activeSenders":
		return float64(len(senders))
	case "cumulativeTxCount":
		return float64(cumTxs)
	case "cumulativeAddresses":
		return float64(len(everActive))
	case "cumulativeContracts":
		return float64(cumContracts)
	case "cumulativeDeployers":
		return float64(len(everDeployers))
	case "contracts":
		return float64(contracts)
	case "deployers":
		return float64(len(deployers))
	case "gasUsed":
		return float64(gas)
	case "txCount":
		return float64(txs)
	case "avgGps":
		return perSec(gas)
	case "maxGps":
		return maxGPS
	case "avgTps":
		return perSec(txs)
	case "maxTps":
		return maxTPS
	case "avgGasPrice":
		return ratio(priceSum, txs)
	case "maxGasPrice":
		return ratio(maxPrice, 1)
	case "feesPaid":
		return ratio(fees, 1)
	}
	panic("chainmetrics: unknown metric " + metric)
}

// The published document's ChainMetric and ChainRollingWindowMetric enums.
var (
	ChainMetrics = []string{"activeAddresses", "activeSenders", "cumulativeTxCount", "cumulativeAddresses",
		"cumulativeContracts", "cumulativeDeployers", "contracts", "deployers", "gasUsed", "txCount", "avgGps",
		"maxGps", "avgTps", "maxTps", "avgGasPrice", "maxGasPrice", "feesPaid"}
	RollingMetrics = []string{"gasUsed", "txCount", "avgGps", "maxGps", "avgTps", "maxTps", "avgGasPrice",
		"maxGasPrice", "feesPaid", "contracts", "deployers", "activeAddresses", "activeSenders"}
)

// HeldAbove is the addresses whose balance of token was >= threshold after
// startBlock (the opening balance) or after some block in (startBlock,
// endBlock], among those a transfer touched by endBlock, with their balance
// after endBlock: replayed from the Transfer logs.
func (o Oracle) HeldAbove(token string, threshold *big.Int, startBlock, endBlock int64) map[string]string {
	bal := map[string]*big.Int{}
	held := map[string]bool{}
	check := func(a string) {
		if bal[a].Cmp(threshold) >= 0 {
			held[a] = true
		}
	}
	for _, b := range o.Blocks {
		if b.Number > endBlock {
			break
		}
		for _, m := range b.Moves {
			if m.Token != token {
				continue
			}
			for _, a := range []string{m.From, m.To} {
				if a != zeroAddress && bal[a] == nil {
					bal[a] = new(big.Int)
				}
			}
			if m.From != zeroAddress {
				bal[m.From].Sub(bal[m.From], m.Amount)
			}
			if m.To != zeroAddress {
				bal[m.To].Add(bal[m.To], m.Amount)
			}
		}
		if b.Number >= startBlock {
			for a := range bal {
				check(a)
			}
		}
	}
	out := map[string]string{}
	for a := range held {
		out[a] = bal[a].String()
	}
	return out
}

type frame struct {
	Type  string  `json:"type"`
	From  string  `json:"from"`
	Error string  `json:"error"`
	Calls []frame `json:"calls"`
}

// NestedCreators reads a debug_traceBlockByNumber callTracer answer and
// returns the creator (frame "from") of every CREATE, CREATE2 or CREATE3
// frame below a tx's top frame that did not revert: neither it nor a frame
// above it (the tx included) failed.
func NestedCreators(result json.RawMessage) ([]string, error) {
	var txs []struct {
		Result frame `json:"result"`
	}
	if err := json.Unmarshal(result, &txs); err != nil {
		return nil, fmt.Errorf("traces: %w", err)
	}
	var out []string
	var walk func(f frame, depth int, failed bool)
	walk = func(f frame, depth int, failed bool) {
		failed = failed || f.Error != ""
		if depth > 0 && !failed && strings.HasPrefix(f.Type, "CREATE") {
			out = append(out, strings.ToLower(f.From))
		}
		for _, c := range f.Calls {
			walk(c, depth+1, failed)
		}
	}
	for _, tx := range txs {
		walk(tx.Result, 0, false)
	}
	return out, nil
}
