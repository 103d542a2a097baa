package pchain

import (
	"bytes"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/ingest"
	"github.com/permafrost-dev/permafrost/internal/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// recordedBlocks returns the raw P blocks 0..tip from the recorded hex
// answers of calls (the P-chain's).
func recordedBlocks(t testing.TB, calls devnet.Calls) []ingest.RawBlock {
	t.Helper()
	byHeight := map[uint64][]byte{}
	for _, x := range calls.Method("platform.getBlockByHeight") {
		var p struct {
			Height   json.Number `json:"height"`
			Encoding string      `json:"encoding"`
		}
		if bytes.HasPrefix(bytes.TrimSpace(x.Params), []byte("[")) || x.Response.Error != nil {
			continue // the array-wrapped duplicate, error cases
		}
		devnet.Params(t, x, &p)
		if p.Encoding != "hex" || x.Response.Result == nil {
			continue
		}
		var res struct {
			Block string `json:"block"`
		}
		devnet.Result(t, x, &res)
		h, err := strconv.ParseUint(p.Height.String(), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		byHeight[h] = devnet.HexBytes(t, res.Block)
	}
	out := make([]ingest.RawBlock, len(byHeight))
	for h, b := range byHeight {
		if h >= uint64(len(out)) {
			t.Fatalf("gap in recorded heights at %d", h)
		}
		out[h] = ingest.RawBlock{Height: h, Bytes: b}
	}
	return out
}
