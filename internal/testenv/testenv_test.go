package testenv

import (
	"context"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// The whole recording is indexed: every height of every chain.
func TestDevnetIngestsEveryHeight(t *testing.T) {
	want := map[string]int64{"P": 41, "X": 19, "C": 37}
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) {
			e := Devnet(t, backend)
			ctx := context.Background()
			for chain, tip := range want {
				var n, maxH int64
				if err := e.DB.QueryRowContext(ctx, `SELECT COUNT(*), MAX(height) FROM raw_blocks WHERE chain_key = $1`, chain).Scan(&n, &maxH); err != nil {
					t.Fatal(err)
				}
				if n != tip+1 || maxH != tip {
					t.Errorf("%s: %d raw blocks up to %d, want %d up to %d", chain, n, maxH, tip+1, tip)
				}
			}
		})
	}
}
