package livenet

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"
)

// buildOrSkip builds the binaries; the test is skipped (loudly) only when
// the node cannot be built, e.g. without network access to the module proxy.
func buildOrSkip(t *testing.T) *Binaries {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	b, err := Build(ctx, t.Logf)
	var be *BuildError
	if errors.As(err, &be) && be.What == "avalanchego" {
		t.Skipf("SKIP livenet: avalanchego v1.14.2 cannot be built here, so the live-network tests do not run: %v", err)
	}
	if err != nil {
		t.Fatalf("livenet build: %v", err)
	}
	return b
}

func TestNetworkStartOnly(t *testing.T) {
	if os.Getenv("LIVENET_START_ONLY") == "" {
		t.Skip("set LIVENET_START_ONLY=1 to run")
	}
	b := buildOrSkip(t)
	ctx := context.Background()
	n, err := Start(ctx, NetworkConfig{Binaries: b, RootDir: rootDir(t), Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Stop(context.Background()) })
	t.Logf("L1 %s rpc %s", n.L1.BlockchainID, n.L1RPCURL())
	for _, r := range n.Log.Records() {
		t.Logf("%+v", r)
	}
}

// rootDir is a test temp dir, or $LIVENET_DIR/<test> when set (kept for
// inspecting node logs after a failure).
func rootDir(t *testing.T) string {
	if d := os.Getenv("LIVENET_DIR"); d != "" {
		return d + "/" + t.Name()
	}
	return t.TempDir()
}
