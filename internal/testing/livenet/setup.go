package livenet

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// DirEnv keeps the network's directory (node data and logs) under
// $PERMAFROST_LIVENET_DIR/<test name> instead of a temp dir removed after
// the test, for inspecting node logs after a failure.
const DirEnv = "PERMAFROST_LIVENET_DIR"

// Timings are the phases measured by Setup.
type Timings struct {
	Build        time.Duration // node + plugin build (0 when cached)
	NodeBuild    time.Duration
	PluginBuild  time.Duration
	NetworkStart time.Duration // primary network + L1 up
}

// BuildOrSkip builds (or takes from the cache) the node and the plugin. The
// test is skipped, with a message saying why, only when the node itself
// cannot be built (e.g. no module proxy and a cold module cache); any other
// failure fails the test.
func BuildOrSkip(t testing.TB) *Binaries {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	b, err := Build(ctx, t.Logf)
	var be *BuildError
	if errors.As(err, &be) && be.What == "avalanchego" {
		t.Skipf("SKIPPED: the live-network tests need avalanchego v1.14.2, which cannot be built here: %v", err)
	}
	if err != nil {
		t.Fatalf("livenet: %v", err)
	}
	return b
}

// Setup builds the binaries (skipping as BuildOrSkip does), starts the
// network with its L1 and stops it when the test ends.
func Setup(t testing.TB) (*Network, Timings) {
	t.Helper()
	var tm Timings
	start := time.Now()
	b := BuildOrSkip(t)
	tm.Build, tm.NodeBuild, tm.PluginBuild = time.Since(start), b.NodeBuild, b.PluginBuild

	dir := t.TempDir()
	if d := os.Getenv(DirEnv); d != "" {
		dir = filepath.Join(d, filepath.Clean(t.Name()))
		_ = os.RemoveAll(dir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start = time.Now()
	n, err := Start(ctx, NetworkConfig{Binaries: b, RootDir: dir, Logf: t.Logf})
	if err != nil {
		t.Fatalf("livenet: %v (node logs under %s)", err, dir)
	}
	tm.NetworkStart = time.Since(start)
	t.Cleanup(func() {
		if err := n.Stop(context.Background()); err != nil {
			t.Errorf("livenet: stopping the network: %v", err)
		}
	})
	return n, tm
}
