package ingest

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/hashing"
	"github.com/ava-labs/avalanchego/vms/avm/block"
	"github.com/ava-labs/avalanchego/vms/avm/fxs"
	"github.com/ava-labs/avalanchego/vms/nftfx"
	pblock "github.com/ava-labs/avalanchego/vms/platformvm/block"
	"github.com/ava-labs/avalanchego/vms/propertyfx"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"
)

// avalancheNode is what the P and X sources need of the node client.
type avalancheNode interface {
	PHeight(ctx context.Context) (uint64, error)
	PBlockByHeight(ctx context.Context, h uint64) ([]byte, error)
	XHeight(ctx context.Context) (uint64, error)
	XBlockByHeight(ctx context.Context, h uint64) ([]byte, error)
}

// fetchParallel fetches heights from..to with at most workers requests in flight.
func fetchParallel(ctx context.Context, from, to uint64, workers int, get func(ctx context.Context, h uint64) (RawBlock, error)) ([]RawBlock, error) {
	n := int(to - from + 1)
	out := make([]RawBlock, n)
	errs := make([]error, n)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, workers)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			b, err := get(ctx, from+uint64(i))
			if err != nil {
				errs[i] = err
				cancel()
				return
			}
			out[i] = b
		}(i)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// PSource reads P-chain blocks from a node.
type PSource struct {
	Node    avalancheNode
	Workers int
	// Wrappers, when set, swaps blocks for their proposervm wrappers.
	Wrappers *Wrappers
	mu       sync.Mutex
	last     int64 // last timestamp seen: option and Apricot blocks carry none
}

func (s *PSource) Tip(ctx context.Context) (uint64, error) { return s.Node.PHeight(ctx) }

// Notice says when blocks go without proposer details (Wrappers.Notice).
func (s *PSource) Notice() string { return s.Wrappers.Notice() }

func (s *PSource) Fetch(ctx context.Context, from, to uint64) ([]RawBlock, error) {
	blocks, err := fetchParallel(ctx, from, to, max(s.Workers, 1), func(ctx context.Context, h uint64) (RawBlock, error) {
		b, err := s.Node.PBlockByHeight(ctx, h)
		if err != nil {
			return RawBlock{}, err
		}
		rb := RawBlock{Height: h, Hash: ids.ID(hashing.ComputeHash256Array(b)).String(), Bytes: b, Timestamp: -1}
		if blk, err := pblock.Parse(pblock.GenesisCodec, b); err == nil {
			if bb, ok := blk.(pblock.BanffBlock); ok {
				rb.Timestamp = bb.Timestamp().Unix()
			}
		}
		return rb, nil
	})
	if err != nil {
		return nil, err
	}
	s.Wrappers.attach(ctx, blocks, func(b []byte) (uint64, error) {
		blk, err := pblock.Parse(pblock.GenesisCodec, b)
		if err != nil {
			return 0, err
		}
		return blk.Height(), nil
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range blocks {
		if blocks[i].Timestamp < 0 {
			blocks[i].Timestamp = s.last
		}
		s.last = blocks[i].Timestamp
	}
	return blocks, nil
}

// XSource reads X-chain blocks from a node.
type XSource struct {
	Node    avalancheNode
	Workers int
	// Wrappers, when set, swaps blocks for their proposervm wrappers.
	Wrappers *Wrappers
	// MissingHistory, when set, says what of the chain's history the
	// blocks do not hold while it is not indexed (the DAG before the
	// Cortina linearization on mainnet and Fuji): a notice in status.
	MissingHistory Noticer
	parser         block.Parser
	once           sync.Once
	err            error
}

func (s *XSource) Tip(ctx context.Context) (uint64, error) { return s.Node.XHeight(ctx) }

// Notice says what of the chain's history is missing (MissingHistory) and
// when blocks go without proposer details (Wrappers.Notice).
func (s *XSource) Notice() string {
	notes := make([]string, 0, 2)
	missing := ""
	if s.MissingHistory != nil {
		missing = s.MissingHistory.Notice()
	}
	for _, n := range []string{missing, s.Wrappers.Notice()} {
		if n != "" {
			notes = append(notes, n)
		}
	}
	return strings.Join(notes, "; ")
}

func (s *XSource) Fetch(ctx context.Context, from, to uint64) ([]RawBlock, error) {
	s.once.Do(func() {
		s.parser, s.err = block.NewParser([]fxs.Fx{&secp256k1fx.Fx{}, &nftfx.Fx{}, &propertyfx.Fx{}})
	})
	if s.err != nil {
		return nil, fmt.Errorf("x-chain parser: %w", s.err)
	}
	blocks, err := fetchParallel(ctx, from, to, max(s.Workers, 1), func(ctx context.Context, h uint64) (RawBlock, error) {
		b, err := s.Node.XBlockByHeight(ctx, h)
		if err != nil {
			return RawBlock{}, err
		}
		rb := RawBlock{Height: h, Hash: ids.ID(hashing.ComputeHash256Array(b)).String(), Bytes: b}
		if blk, err := s.parser.ParseGenesisBlock(b); err == nil {
			rb.Timestamp = blk.Timestamp().Unix()
		}
		return rb, nil
	})
	if err != nil {
		return nil, err
	}
	s.Wrappers.attach(ctx, blocks, func(b []byte) (uint64, error) {
		blk, err := s.parser.ParseGenesisBlock(b)
		if err != nil {
			return 0, err
		}
		return blk.Height(), nil
	})
	return blocks, nil
}
