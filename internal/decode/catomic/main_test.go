package catomic_test

import (
	"testing"

	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// workloadTx is one line of workload.jsonl.
type workloadTx = devnet.Tx[map[string]any]
