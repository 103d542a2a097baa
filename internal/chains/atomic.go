package chains

import (
	"github.com/permafrost-dev/permafrost/internal/decode/catomic"
	"github.com/permafrost-dev/permafrost/internal/decode/evm"
)

// NewAtomicApplier adapts the C-chain atomic-tx indexer to the EVM indexer
// the way Build wires it, for callers that build the C-chain alone (the
// coreth oracle's tests).
func NewAtomicApplier(a *catomic.Applier) evm.AtomicApplier { return atomicAdapter{a} }
