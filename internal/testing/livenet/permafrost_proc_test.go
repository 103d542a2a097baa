package livenet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// buildPermafrost builds the server binary users run, from this worktree
// (`go build ./cmd/permafrost` at the main module's root).
func buildPermafrost(t *testing.T) string {
	t.Helper()
	mod, err := ModuleDir()
	if err != nil {
		t.Fatalf("livenet: %v", err)
	}
	root := filepath.Clean(filepath.Join(mod, "..", "..", ".."))
	out := filepath.Join(t.TempDir(), "permafrost")
	cmd := exec.Command("go", "build", "-o", out, "./cmd/permafrost")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("livenet: building permafrost in %s: %v\n%s", root, err, b)
	}
	return out
}

// freeAddr is a loopback address free at the time of the call.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("livenet: %v", err)
	}
	defer l.Close()
	return l.Addr().String()
}

// permafrost is one `permafrost serve` process following the live network.
type permafrost struct {
	t      *testing.T
	bin    string
	args   []string
	url    string
	logDir string
	runs   int
	cmd    *exec.Cmd
	done   chan error
	// mu orders start, kill and stop between the test and the kill timer;
	// closed (set by stop at the test's end) keeps a late restart from
	// outliving the test.
	mu     sync.Mutex
	closed bool
}

// startPermafrost runs `permafrost serve` against node (the L1 node, which
// serves P, X, C and the L1) on a database, logging to logDir.
func startPermafrost(t *testing.T, bin, node, genesisPath, dsn, logDir string, extra ...string) *permafrost {
	t.Helper()
	listen := freeAddr(t)
	p := &permafrost{t: t, bin: bin, url: "http://" + listen, logDir: logDir, args: []string{"serve",
		"--node", node, "--genesis", genesisPath, "--db", dsn, "--listen", listen,
		"--export-dir", filepath.Join(logDir, "exports"),
		// Loopback only: NFT metadata of the workload's tokens is not fetched from the internet.
		"--ipfs-gateway", "http://127.0.0.1:9",
		// The differential checks make thousands of requests a minute from one IP.
		"--anonymous-cu", "1000000000",
		"--log-format", "text"}}
	p.args = append(p.args, extra...)
	p.start()
	t.Cleanup(p.stop)
	return p
}

func (p *permafrost) start() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.runs++
	logPath := filepath.Join(p.logDir, fmt.Sprintf("permafrost-serve-%d.log", p.runs))
	f, err := os.Create(logPath)
	if err != nil {
		p.t.Fatalf("livenet: %v", err)
	}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		p.t.Fatalf("livenet: starting permafrost: %v", err)
	}
	p.cmd, p.done = cmd, make(chan error, 1)
	go func() { p.done <- cmd.Wait(); f.Close() }()
}

// kill sends SIGKILL, as a crash or an OOM kill would, and waits for the exit.
func (p *permafrost) kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	p.cmd = nil
}

// stop asks for a clean shutdown (SIGTERM), then kills after 20 s.
func (p *permafrost) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
	}
	p.cmd = nil
}

// exited reports a process that ended on its own (not through kill/stop).
func (p *permafrost) exited() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return nil
	}
	select {
	case err := <-p.done:
		p.done <- err
		return fmt.Errorf("permafrost serve exited: %v (log %s)", err, p.logDir)
	default:
		return nil
	}
}

// logTail is the end of the current run's log, for failure messages.
func (p *permafrost) logTail() string {
	b, _ := os.ReadFile(filepath.Join(p.logDir, fmt.Sprintf("permafrost-serve-%d.log", p.runs)))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

var pfHTTP = &http.Client{Timeout: 30 * time.Second}

// get fetches path from a Permafrost HTTP server; the body and status.
func httpGet(ctx context.Context, url string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := pfHTTP.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// rpcRaw makes one JSON-RPC call and returns the whole answer envelope's
// result and error members as they were sent.
func rpcRaw(ctx context.Context, url, method string, params any) (result, rpcErr json.RawMessage, err error) {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		return nil, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := pfHTTP.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	var env struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return nil, nil, fmt.Errorf("%s %s: HTTP %d: %s", url, method, resp.StatusCode, truncate(string(raw), 300))
	}
	return env.Result, env.Error, nil
}

// servedHeights is each chain's indexed (and so served) height from
// /v1/live-check, keyed P, X, C and L1 (the EVM chain of the main L1); -1
// for a chain without a block yet.
func (p *permafrost) servedHeights(ctx context.Context, l1Keys ...string) (map[string]int64, error) {
	code, body, err := httpGet(ctx, p.url+"/v1/live-check")
	if err != nil {
		return nil, err
	}
	var rep struct {
		Details map[string]map[string]any `json:"details"`
	}
	if err := json.Unmarshal(body, &rep); err != nil {
		return nil, fmt.Errorf("live-check: HTTP %d: %s", code, truncate(string(body), 300))
	}
	out := map[string]int64{}
	for k, ind := range rep.Details {
		key, ok := strings.CutPrefix(k, "chain:")
		if !ok {
			continue
		}
		for _, l1 := range l1Keys {
			if key == l1 {
				key = ChainL1
			}
		}
		if f, ok := ind["indexedHeight"].(float64); ok {
			out[key] = int64(f)
		}
	}
	return out, nil
}

// lagSampler records when each height of each chain was first served.
type lagSampler struct {
	mu     sync.Mutex
	seen   map[string]map[int64]time.Time
	last   map[string]int64
	errors int
}

func newLagSampler() *lagSampler {
	return &lagSampler{seen: map[string]map[int64]time.Time{}, last: map[string]int64{}}
}

// run polls every interval until ctx ends; errors (e.g. while Permafrost is
// killed) are counted, not fatal.
func (s *lagSampler) run(ctx context.Context, p func() *permafrost, l1Keys []string, every time.Duration) {
	tk := time.NewTicker(every)
	defer tk.Stop()
	for {
		h, err := p().servedHeights(ctx, l1Keys...)
		now := time.Now()
		s.mu.Lock()
		if err != nil {
			s.errors++
		}
		for chain, top := range h {
			if s.seen[chain] == nil {
				s.seen[chain] = map[int64]time.Time{}
			}
			last, ok := s.last[chain]
			if !ok {
				last = -1
			}
			for x := last + 1; x <= top; x++ {
				s.seen[chain][x] = now
			}
			if top > last {
				s.last[chain] = top
			}
		}
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
		}
	}
}

func (s *lagSampler) firstServed(chain string, h int64) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.seen[chain][h]
	return t, ok
}

// lagStats are the median and max of lags in seconds.
type lagStats struct {
	n           int
	median, max float64
}

func stats(lags []float64) lagStats {
	if len(lags) == 0 {
		return lagStats{}
	}
	sort.Float64s(lags)
	m := lags[len(lags)/2]
	if len(lags)%2 == 0 {
		m = (lags[len(lags)/2-1] + lags[len(lags)/2]) / 2
	}
	return lagStats{n: len(lags), median: m, max: lags[len(lags)-1]}
}

func (l lagStats) String() string {
	if l.n == 0 {
		return "no blocks"
	}
	return fmt.Sprintf("%d blocks, median %.2f s, max %.2f s", l.n, l.median, l.max)
}

func parseUint(s string) uint64 {
	v, _ := strconv.ParseUint(s, 10, 64)
	return v
}
