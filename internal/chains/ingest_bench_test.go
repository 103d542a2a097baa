package chains

import (
	"context"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/permafrost-dev/permafrost/internal/decode/evm"
	"github.com/permafrost-dev/permafrost/internal/evmsim"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/source"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// BenchmarkIngestEVM measures the whole ingest path for generated C-chain-like
// blocks (20 txs each, with receipts and ERC-20/721 Transfer logs): a local
// JSON-RPC node on loopback -> source (batched fetch) -> EVM indexer -> store,
// one transaction per batch with the checkpoint. Each iteration ingests
// BENCH_BLOCKS blocks (default 5000) into a fresh database.
func BenchmarkIngestEVM(b *testing.B) {
	n := 5000
	if s := os.Getenv("BENCH_BLOCKS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	const txPerBlock = 20
	gen := evm.NewGenerator(1, txPerBlock)
	raw := make([]ingest.RawBlock, n)
	for i := range raw {
		raw[i] = gen.Next()
	}
	node, err := evmsim.New(43112, raw)
	if err != nil {
		b.Fatal(err)
	}
	raw = nil
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: node}
	go srv.Serve(l) //nolint:errcheck
	defer srv.Close()
	url := "http://" + l.Addr().String()

	for _, backend := range storetest.Backends {
		b.Run(backend, func(b *testing.B) {
			var total time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				db := storetest.Open(b, storetest.DSNFor(b, backend))
				src, err := source.NewEVM(context.Background(), url, source.EVMOptions{BatchSize: 50, Concurrency: 4})
				if err != nil {
					b.Fatal(err)
				}
				ix, err := evm.NewIndexer(evm.Config{ChainKey: "C", ChainID: big.NewInt(43112), GenesisAlloc: gen.Alloc(),
					Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
				if err != nil {
					b.Fatal(err)
				}
				chain := ingest.Chain{Key: "C", Kind: "EVM", BlockchainID: "bench", EVMChainID: "43112", Source: &EVMSource{EVM: src}, Indexer: ix, BatchSize: 100}
				var logw io.Writer = io.Discard
				if os.Getenv("BENCH_LOG") != "" {
					logw = os.Stderr
				}
				p := ingest.New(db, []ingest.Chain{chain}, ingest.Options{UntilTip: true}, slog.New(slog.NewTextHandler(logw, nil)))
				b.StartTimer()
				start := time.Now()
				if err := p.Run(context.Background()); err != nil {
					b.Fatal(err)
				}
				total += time.Since(start)
			}
			secs := total.Seconds() / float64(b.N)
			b.ReportMetric(float64(n)/secs, "blocks/s")
			b.ReportMetric(float64(n*txPerBlock)/secs, "txs/s")
			b.ReportMetric(float64(peakRSS())/(1<<20), "peakRSS_MB")
		})
	}
}

// peakRSS is the process's peak resident set (VmHWM), in bytes.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	_ = runtime.NumCPU
	return 0
}
