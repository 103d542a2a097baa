package source

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"sync"

	"github.com/ava-labs/libevm/common"
	"github.com/ava-labs/libevm/common/hexutil"
	"github.com/ava-labs/libevm/rpc"
)

const (
	defaultBatchSize   = 20
	maxBatchSize       = 500 // two calls per height; nodes cap batches at 1000 items
	defaultConcurrency = 4
	maxConcurrency     = 64
	// MaxBlocksRange bounds one Blocks call, which holds its whole range in
	// memory.
	MaxBlocksRange = 1 << 16
)

// EVMOptions tunes an EVM client.
type EVMOptions struct {
	Retry Retry
	// BatchSize is the number of heights per JSON-RPC batch (each height is
	// two calls); default 20, at most 500.
	BatchSize int
	// Concurrency is the number of batches in flight; default 4, at most 64.
	Concurrency int
	// HTTPClient sends the requests (default: a new http.Client).
	HTTPClient *http.Client
}

// EVM reads an EVM JSON-RPC endpoint (the C-chain at base+PathCRPC, or an
// L1's URL) with libevm's rpc client. Blocks are kept as the node's raw JSON:
// coreth and subnet-evm headers carry fields go-ethereum's types drop.
type EVM struct {
	url         string
	c           *rpc.Client
	retry       Retry
	batchSize   int
	concurrency int
}

// NewEVM returns a client for the http(s) JSON-RPC endpoint rawURL. It does
// not contact the endpoint.
func NewEVM(ctx context.Context, rawURL string, opts EVMOptions) (*EVM, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("source: EVM URL %q: %w", rawURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("source: EVM URL %q: want http(s)://host[:port]/path", rawURL)
	}
	switch {
	case opts.BatchSize == 0:
		opts.BatchSize = defaultBatchSize
	case opts.BatchSize < 0 || opts.BatchSize > maxBatchSize:
		return nil, fmt.Errorf("source: EVM batch size %d: want 1..%d", opts.BatchSize, maxBatchSize)
	}
	switch {
	case opts.Concurrency == 0:
		opts.Concurrency = defaultConcurrency
	case opts.Concurrency < 0 || opts.Concurrency > maxConcurrency:
		return nil, fmt.Errorf("source: EVM concurrency %d: want 1..%d", opts.Concurrency, maxConcurrency)
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	c, err := rpc.DialOptions(ctx, rawURL, rpc.WithHTTPClient(hc))
	if err != nil {
		return nil, fmt.Errorf("source: EVM client for %s: %w", rawURL, err)
	}
	return &EVM{url: rawURL, c: c, retry: opts.Retry, batchSize: opts.BatchSize, concurrency: opts.Concurrency}, nil
}

// Close releases the client.
func (e *EVM) Close() { e.c.Close() }

// URL is the endpoint's URL.
func (e *EVM) URL() string { return e.url }

// Call sends one call and decodes its result into result (nil: discard;
// *json.RawMessage: raw bytes, "null" for a null result).
func (e *EVM) Call(ctx context.Context, method string, params []any, result any) error {
	return e.retry.Do(ctx, method, func(ctx context.Context) error {
		var raw json.RawMessage
		if err := fromLibevm(e.c.CallContext(ctx, &raw, method, params...)); err != nil {
			return err
		}
		if result == nil {
			return nil
		}
		if err := json.Unmarshal(raw, result); err != nil {
			return Permanent(fmt.Errorf("decode result into %T: %w", result, err))
		}
		return nil
	})
}

// ChainID returns eth_chainId.
func (e *EVM) ChainID(ctx context.Context) (uint64, error) {
	var id hexutil.Big
	if err := e.Call(ctx, "eth_chainId", nil, &id); err != nil {
		return 0, err
	}
	b := id.ToInt()
	if b.Sign() < 0 || !b.IsUint64() {
		return 0, fmt.Errorf("eth_chainId: %w: %s does not fit uint64", ErrMalformed, b)
	}
	return b.Uint64(), nil
}

// BlockNumber returns eth_blockNumber.
func (e *EVM) BlockNumber(ctx context.Context) (uint64, error) {
	var n hexutil.Uint64
	if err := e.Call(ctx, "eth_blockNumber", nil, &n); err != nil {
		return 0, err
	}
	return uint64(n), nil
}

// BatchElem is one call of a BatchCall.
type BatchElem struct {
	Method string
	Params []any
	// Result receives the decoded result (nil: discard).
	Result any
	// Error is the call's own error: an *RPCError from the node, or a
	// failure to decode the result into Result.
	Error error
}

// BatchCall sends elems as one JSON-RPC batch. Transport failures and
// malformed answers (including a missing element) retry the whole batch;
// JSON-RPC errors of single calls are definitive and left in their Error.
// The returned error is only about the batch as a whole.
func (e *EVM) BatchCall(ctx context.Context, elems []BatchElem) error {
	if len(elems) == 0 {
		return nil
	}
	if len(elems) > 2*maxBatchSize {
		return fmt.Errorf("source: batch of %d calls: at most %d", len(elems), 2*maxBatchSize)
	}
	raws := make([]json.RawMessage, len(elems))
	errs := make([]error, len(elems))
	err := e.retry.Do(ctx, fmt.Sprintf("batch of %d (%s...)", len(elems), elems[0].Method), func(ctx context.Context) error {
		be := make([]rpc.BatchElem, len(elems))
		for i := range elems {
			raws[i] = nil
			be[i] = rpc.BatchElem{Method: elems[i].Method, Args: elems[i].Params, Result: &raws[i]}
		}
		if err := fromLibevm(e.c.BatchCallContext(ctx, be)); err != nil {
			return err
		}
		for i := range be {
			errs[i] = nil
			if be[i].Error == nil {
				continue
			}
			err := fromLibevm(be[i].Error)
			var re *RPCError
			if !errors.As(err, &re) {
				return fmt.Errorf("%w: %s: %w", ErrMalformed, elems[i].Method, err)
			}
			errs[i] = re
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i := range elems {
		elems[i].Error = errs[i]
		if errs[i] == nil && elems[i].Result != nil {
			if err := json.Unmarshal(raws[i], elems[i].Result); err != nil {
				elems[i].Error = fmt.Errorf("decode result into %T: %w", elems[i].Result, err)
			}
		}
	}
	return nil
}

// RawEVMBlock is one block as the node answered it.
type RawEVMBlock struct {
	Height     uint64
	Hash       string // 0x-lowercase
	ParentHash string // 0x-lowercase
	Timestamp  int64  // unix seconds
	TxCount    int
	// Block is the result of eth_getBlockByNumber(n, true), verbatim.
	Block json.RawMessage
	// Receipts is the result of eth_getBlockReceipts(n), verbatim.
	Receipts json.RawMessage
}

// Bytes is the raw-block form the ingester stores:
// {"block":<Block>,"receipts":<Receipts>}.
func (b *RawEVMBlock) Bytes() []byte {
	out := make([]byte, 0, len(b.Block)+len(b.Receipts)+24)
	out = append(out, `{"block":`...)
	out = append(out, b.Block...)
	out = append(out, `,"receipts":`...)
	out = append(out, b.Receipts...)
	return append(out, '}')
}

// Blocks fetches heights from..to (inclusive) with eth_getBlockByNumber(n,
// true) and eth_getBlockReceipts(n), in batches of BatchSize heights with up
// to Concurrency batches in flight. Each block must have the asked number and
// as many receipts as transactions, all naming the block; otherwise the batch
// is retried. A height above the tip fails (IsNotFound is true), after
// retries when the node answers null rather than an error.
func (e *EVM) Blocks(ctx context.Context, from, to uint64) ([]RawEVMBlock, error) {
	if to < from {
		return nil, fmt.Errorf("source: blocks %d..%d: empty range", from, to)
	}
	if to-from >= MaxBlocksRange {
		return nil, fmt.Errorf("source: blocks %d..%d: more than %d heights", from, to, MaxBlocksRange)
	}
	out := make([]RawEVMBlock, to-from+1)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	sem := make(chan struct{}, e.concurrency)
	for lo := from; ; {
		hi := to
		if to-lo >= uint64(e.batchSize) {
			hi = lo + uint64(e.batchSize) - 1
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func(lo, hi uint64) {
			defer wg.Done()
			defer func() { <-sem }()
			err := e.retry.Do(ctx, fmt.Sprintf("eth_getBlockByNumber+eth_getBlockReceipts(%d..%d)", lo, hi), func(ctx context.Context) error {
				return e.fetchRange(ctx, lo, hi, out[lo-from:hi-from+1])
			})
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
					cancel()
				}
				mu.Unlock()
			}
		}(lo, hi)
		if hi == to {
			break
		}
		lo = hi + 1
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("source: blocks %d..%d: %w", from, to, err)
	}
	return out, nil
}

// fetchRange is one attempt at heights lo..hi into dst.
func (e *EVM) fetchRange(ctx context.Context, lo, hi uint64, dst []RawEVMBlock) error {
	n := int(hi - lo + 1)
	raws := make([]json.RawMessage, 2*n)
	be := make([]rpc.BatchElem, 0, 2*n)
	for i := 0; i < n; i++ {
		h := hexutil.EncodeUint64(lo + uint64(i))
		be = append(be,
			rpc.BatchElem{Method: "eth_getBlockByNumber", Args: []any{h, true}, Result: &raws[2*i]},
			rpc.BatchElem{Method: "eth_getBlockReceipts", Args: []any{h}, Result: &raws[2*i+1]},
		)
	}
	if err := fromLibevm(e.c.BatchCallContext(ctx, be)); err != nil {
		return err
	}
	for i := range be {
		if be[i].Error == nil {
			continue
		}
		h := lo + uint64(i/2)
		err := fromLibevm(be[i].Error)
		var re *RPCError
		if errors.As(err, &re) {
			return fmt.Errorf("%s(%d): %w", be[i].Method, h, re)
		}
		return fmt.Errorf("%w: %s(%d): %w", ErrMalformed, be[i].Method, h, err)
	}
	for i := 0; i < n; i++ {
		b, err := parseRawBlock(lo+uint64(i), raws[2*i], raws[2*i+1])
		if err != nil {
			return err
		}
		dst[i] = b
	}
	return nil
}

var null = []byte("null")

func parseRawBlock(h uint64, block, receipts json.RawMessage) (RawEVMBlock, error) {
	if len(block) == 0 || bytes.Equal(block, null) {
		return RawEVMBlock{}, fmt.Errorf("%w: block %d: %w", ErrInconsistent, h, ErrNotFound)
	}
	var hdr struct {
		Number       *hexutil.Uint64 `json:"number"`
		Hash         *common.Hash    `json:"hash"`
		ParentHash   *common.Hash    `json:"parentHash"`
		Timestamp    *hexutil.Uint64 `json:"timestamp"`
		Transactions []struct {
			Hash *common.Hash `json:"hash"`
		} `json:"transactions"`
	}
	if err := json.Unmarshal(block, &hdr); err != nil {
		return RawEVMBlock{}, fmt.Errorf("%w: block %d: %w", ErrMalformed, h, err)
	}
	if hdr.Number == nil || hdr.Hash == nil || hdr.ParentHash == nil || hdr.Timestamp == nil || hdr.Transactions == nil {
		return RawEVMBlock{}, fmt.Errorf("%w: block %d: missing number, hash, parentHash, timestamp or transactions", ErrMalformed, h)
	}
	if uint64(*hdr.Number) != h {
		return RawEVMBlock{}, fmt.Errorf("%w: asked block %d, got block %d", ErrInconsistent, h, uint64(*hdr.Number))
	}
	if uint64(*hdr.Timestamp) > math.MaxInt64 {
		return RawEVMBlock{}, fmt.Errorf("%w: block %d: timestamp %d", ErrMalformed, h, uint64(*hdr.Timestamp))
	}
	if len(receipts) == 0 || bytes.Equal(receipts, null) {
		return RawEVMBlock{}, fmt.Errorf("%w: receipts of block %d: %w", ErrInconsistent, h, ErrNotFound)
	}
	var rs []struct {
		TransactionHash *common.Hash    `json:"transactionHash"`
		BlockHash       *common.Hash    `json:"blockHash"`
		BlockNumber     *hexutil.Uint64 `json:"blockNumber"`
	}
	if err := json.Unmarshal(receipts, &rs); err != nil {
		return RawEVMBlock{}, fmt.Errorf("%w: receipts of block %d: %w", ErrMalformed, h, err)
	}
	if len(rs) != len(hdr.Transactions) {
		return RawEVMBlock{}, fmt.Errorf("%w: block %d has %d txs but %d receipts", ErrInconsistent, h, len(hdr.Transactions), len(rs))
	}
	for i, r := range rs {
		tx := hdr.Transactions[i]
		if tx.Hash == nil || r.TransactionHash == nil || r.BlockHash == nil || r.BlockNumber == nil {
			return RawEVMBlock{}, fmt.Errorf("%w: block %d: tx %d or its receipt lacks hashes", ErrMalformed, h, i)
		}
		if *r.BlockHash != *hdr.Hash || uint64(*r.BlockNumber) != h || *r.TransactionHash != *tx.Hash {
			return RawEVMBlock{}, fmt.Errorf("%w: block %d (%s): receipt %d is of tx %s in block %d (%s)",
				ErrInconsistent, h, hdr.Hash.Hex(), i, r.TransactionHash.Hex(), uint64(*r.BlockNumber), r.BlockHash.Hex())
		}
	}
	return RawEVMBlock{
		Height:     h,
		Hash:       hdr.Hash.Hex(),
		ParentHash: hdr.ParentHash.Hex(),
		Timestamp:  int64(*hdr.Timestamp),
		TxCount:    len(hdr.Transactions),
		Block:      block,
		Receipts:   receipts,
	}, nil
}

// fromLibevm maps libevm rpc errors to ours.
func fromLibevm(err error) error {
	if err == nil {
		return nil
	}
	var re rpc.Error
	if errors.As(err, &re) {
		out := &RPCError{Code: re.ErrorCode(), Message: re.Error()}
		var de rpc.DataError
		if errors.As(err, &de) && de.ErrorData() != nil {
			if b, mErr := json.Marshal(de.ErrorData()); mErr == nil {
				out.Data = b
			}
		}
		return out
	}
	var he rpc.HTTPError
	if errors.As(err, &he) {
		body := string(he.Body)
		if len(body) > 512 {
			body = body[:512]
		}
		return &HTTPError{StatusCode: he.StatusCode, Body: body}
	}
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
	)
	if errors.As(err, &syn) || errors.As(err, &typ) || errors.Is(err, rpc.ErrNoResult) ||
		errors.Is(err, rpc.ErrMissingBatchResponse) {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return err
}
