package genesis

import (
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/hashing"
)

func hashing256(b []byte) ids.ID { return ids.ID(hashing.ComputeHash256Array(b)) }
