package source

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/ava-labs/libevm/common"

	"github.com/permafrost-dev/permafrost/internal/jsonscan"
)

// Call traces. coreth and subnet-evm serve debug_traceBlockByNumber when
// the chain config's eth-apis include "debug-tracer"; most nodes do not.
// Blocks asks for them with each height (a third call per height in the same
// batch) until the node answers that it has no such method; from then on
// blocks come without traces (Notice says so) until the process restarts.

const (
	tracesUnknown int32 = iota // not asked yet: ask
	tracesOn                   // the node traces
	tracesOff                  // disabled, or the node has no tracer
)

// maxTracedBatch bounds the heights of one batch with traces: three calls
// a height, and nodes refuse batches of more than 1000 calls.
const maxTracedBatch = 333

// traceRequest is the tracer config of the fetch: the callTracer with its
// defaults (every nested frame, no logs).
const traceRequest = `{"tracer":"callTracer"}`

type traceState struct {
	state      atomic.Int32
	configured bool // off by configuration (TracesOff), not by the node
}

func (t *traceState) want() bool { return t.state.Load() != tracesOff }

// Traces reports whether the blocks fetched last came with call traces
// (false before the first fetch answered).
func (e *EVM) Traces() bool { return e.traces.state.Load() == tracesOn }

// TraceNotice says, when blocks are fetched without call traces, what that
// means for the index; "" while the node traces (or before it was asked).
func (e *EVM) TraceNotice() string {
	if e.traces.state.Load() != tracesOff {
		return ""
	}
	why := "the node does not serve debug_traceBlockByNumber; enable its debug-tracer API"
	if e.traces.configured {
		why = "not fetched by configuration"
	}
	return "no call traces (" + why + "): internal transactions are not indexed, and native balances " +
		"are read from the node (eth_getBalance) once contracts hold value"
}

// IsMethodMissing recognises a node's "no such method" answer.
func IsMethodMissing(err error) bool {
	var re *RPCError
	if !errors.As(err, &re) {
		return false
	}
	m := strings.ToLower(re.Message)
	return re.Code == -32601 || strings.Contains(m, "does not exist") || strings.Contains(m, "method not found") ||
		strings.Contains(m, "not available") || strings.Contains(m, "not supported")
}

// tracesMissing turns tracing off for good after the node said it has no
// tracer, with one log line.
func (e *EVM) tracesMissing(cause error) {
	if e.traces.state.Swap(tracesOff) != tracesOff {
		log := e.retry.Logger
		if log == nil {
			log = slog.Default()
		}
		log.Info("the node does not serve debug_traceBlockByNumber: EVM blocks are indexed without call traces",
			"url", e.url, "err", cause)
	}
}

// checkTraces validates one height's callTracer answer against its block's
// transactions: an array of one {txHash, result} per tx, in tx order.
func checkTraces(h uint64, traces []byte, txHashes []common.Hash) error {
	if len(traces) == 0 || bytes.Equal(traces, null) {
		return fmt.Errorf("%w: traces of block %d: %w", ErrInconsistent, h, ErrNotFound)
	}
	s := jsonscan.New(traces)
	count := 0
	err := s.Array(func(i int) error {
		count++
		var (
			th        common.Hash
			hasHash   bool
			hasResult bool
			failure   string
		)
		err := s.Object(func(key []byte) error {
			switch string(key) {
			case "txHash":
				if s.Null() {
					return nil
				}
				var err error
				th, err = hashValue(s, "txHash")
				hasHash = err == nil
				return err
			case "result":
				if s.Null() {
					return nil
				}
				c, err := s.Peek()
				if err != nil {
					return err
				}
				if c != '{' {
					return fmt.Errorf("trace %d: result is not a call frame", i)
				}
				hasResult = true
				return s.Skip()
			case "error":
				if s.Null() {
					return nil
				}
				v, err := s.Str()
				failure = string(v)
				return err
			}
			return s.Skip()
		})
		if err != nil {
			return fmt.Errorf("trace %d: %w", i, err)
		}
		if failure != "" {
			return fmt.Errorf("trace %d: the node could not trace it: %s", i, failure)
		}
		if !hasResult {
			return fmt.Errorf("trace %d has no result", i)
		}
		// Older nodes leave txHash out (or zero): then the position counts.
		if i < len(txHashes) && hasHash && th != (common.Hash{}) && th != txHashes[i] {
			return fmt.Errorf("%w: block %d: trace %d is of tx %s, want %s", ErrInconsistent, h, i, th.Hex(), txHashes[i].Hex())
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrInconsistent) {
			return err
		}
		return fmt.Errorf("%w: traces of block %d: %w", ErrMalformed, h, err)
	}
	if count != len(txHashes) {
		return fmt.Errorf("%w: block %d has %d txs but %d traces", ErrInconsistent, h, len(txHashes), count)
	}
	return nil
}
