package livenet

import (
	"encoding/json"
	"io"
	"sort"
	"sync"
	"time"
)

// Chain names used in TxRecord.Chain.
const (
	ChainP  = "P"
	ChainX  = "X"
	ChainC  = "C"
	ChainL1 = "L1" // the subnet-evm chain of the main L1
)

// TxRecord is one transaction issued by the setup or the workload (or, for
// RewardValidatorTx, issued by the P-chain itself), in the spirit of the
// recordings' workload.jsonl.
type TxRecord struct {
	Seq          int    `json:"seq"`
	Step         string `json:"step"`
	Chain        string `json:"chain"`        // P, X, C or L1
	BlockchainID string `json:"blockchainID"` // CB58 blockchain ID of Chain
	// Type is the Avalanche tx type (BaseTx, ImportTx, ...; C-chain atomic
	// txs are ImportTx/ExportTx with Atomic set) or, for EVM txs, Transfer,
	// ContractCreation or ContractCall:<method>.
	Type   string `json:"type"`
	TxID   string `json:"txID"` // CB58 for Avalanche txs, 0x hash for EVM txs
	Atomic bool   `json:"atomic,omitempty"`
	// Purpose says what the tx does, for humans.
	Purpose string `json:"purpose,omitempty"`
	// Addresses involved: bech32 X-/P-/C- addresses or 0x EVM addresses.
	Addresses []string `json:"addresses,omitempty"`
	// Height is the block height the tx was accepted in (resolved after the
	// fact for P and X, from the receipt for EVM txs, from
	// avax.getAtomicTxStatus for atomic C txs). 0 while unknown.
	Height uint64 `json:"height"`
	// BlockID is the P/X block ID or the EVM block hash, when known.
	BlockID string `json:"blockID,omitempty"`
	// Accepted is set once the node reported the tx accepted. EVM txs that
	// reverted are accepted with Status 0.
	Accepted bool      `json:"accepted"`
	Status   *uint64   `json:"status,omitempty"` // EVM receipt status
	Issued   time.Time `json:"issued"`
	Time     time.Time `json:"time"` // when acceptance was seen
	// IssuedByChain marks txs the workload did not issue (RewardValidatorTx).
	IssuedByChain bool           `json:"issuedByChain,omitempty"`
	Extra         map[string]any `json:"extra,omitempty"`
}

// TxLog is the machine-readable log of every tx, safe for concurrent use.
type TxLog struct {
	mu   sync.Mutex
	recs []*TxRecord
}

// Add appends r (assigning Seq) and returns it.
func (l *TxLog) Add(r *TxRecord) *TxRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	r.Seq = len(l.recs) + 1
	if r.Issued.IsZero() {
		r.Issued = time.Now().UTC()
	}
	l.recs = append(l.recs, r)
	return r
}

// Records returns a snapshot of the records in issue order.
func (l *TxLog) Records() []TxRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]TxRecord, len(l.recs))
	for i, r := range l.recs {
		out[i] = *r
	}
	return out
}

// update runs f on the live records under the lock.
func (l *TxLog) update(f func([]*TxRecord)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f(l.recs)
}

// Chain returns the records of one chain.
func (l *TxLog) Chain(chain string) []TxRecord {
	var out []TxRecord
	for _, r := range l.Records() {
		if r.Chain == chain {
			out = append(out, r)
		}
	}
	return out
}

// WriteJSONL writes one JSON object per line, in issue order.
func (l *TxLog) WriteJSONL(w io.Writer) error {
	enc := json.NewEncoder(w)
	for _, r := range l.Records() {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

// CountsByChainAndType summarises the log ("P" -> "BaseTx" -> 3).
func (l *TxLog) CountsByChainAndType() map[string]map[string]int {
	out := map[string]map[string]int{}
	for _, r := range l.Records() {
		if out[r.Chain] == nil {
			out[r.Chain] = map[string]int{}
		}
		out[r.Chain][r.Type]++
	}
	return out
}

// BlocksWithSeveralTxs lists, per chain, the heights holding more than one logged tx.
func (l *TxLog) BlocksWithSeveralTxs() map[string][]uint64 {
	count := map[string]map[uint64]int{}
	for _, r := range l.Records() {
		if r.Height == 0 {
			continue
		}
		if count[r.Chain] == nil {
			count[r.Chain] = map[uint64]int{}
		}
		count[r.Chain][r.Height]++
	}
	out := map[string][]uint64{}
	for chain, m := range count {
		for h, n := range m {
			if n > 1 {
				out[chain] = append(out[chain], h)
			}
		}
		sort.Slice(out[chain], func(i, j int) bool { return out[chain][i] < out[chain][j] })
	}
	return out
}
