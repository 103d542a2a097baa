package proposervm_test

import (
	"bytes"
	"crypto"
	"errors"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/staking"
	"github.com/ava-labs/avalanchego/utils/hashing"
	"github.com/ava-labs/avalanchego/vms/proposervm/block"

	"github.com/permafrost-dev/permafrost/internal/decode/proposervm"
	"github.com/permafrost-dev/permafrost/internal/devnet"
)

// Wrappers built with avalanchego's own proposervm builder around a recorded
// P-chain block unwrap to that block and its header.
func TestUnwrap(t *testing.T) {
	inner := devnet.PBlocks(t, devnet.LoadRPC(t, devnet.P))[5].Bytes()
	innerID := ids.ID(hashing.ComputeHash256Array(inner)).String()

	tlsCert, err := staking.NewTLSCert()
	if err != nil {
		t.Fatal(err)
	}
	cert, err := staking.ParseCertificate(tlsCert.Leaf.Raw)
	if err != nil {
		t.Fatal(err)
	}
	parent := ids.GenerateTestID()
	at := time.Unix(1_750_000_123, 0)
	signed, err := block.Build(parent, at, 42, block.Epoch{}, cert, inner, ids.GenerateTestID(), tlsCert.PrivateKey.(crypto.Signer))
	if err != nil {
		t.Fatal(err)
	}
	unsigned, err := block.BuildUnsigned(parent, at, 43, block.Epoch{}, inner)
	if err != nil {
		t.Fatal(err)
	}
	option, err := block.BuildOption(parent, inner)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		raw  []byte
		want *proposervm.Details
	}{
		{"the block itself", inner, nil},
		{"signed", signed.Bytes(), &proposervm.Details{ID: signed.ID(), ParentID: parent, NodeID: ids.NodeIDFromCert(cert), PChainHeight: 42, Timestamp: at.Unix()}},
		{"unsigned", unsigned.Bytes(), &proposervm.Details{ID: unsigned.ID(), ParentID: parent, PChainHeight: 43, Timestamp: at.Unix()}},
		{"option", option.Bytes(), &proposervm.Details{ID: option.ID(), ParentID: parent, Option: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, d, err := proposervm.Unwrap(tt.raw, innerID)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, inner) {
				t.Fatal("inner block differs")
			}
			if (d == nil) != (tt.want == nil) || (d != nil && *d != *tt.want) {
				t.Fatalf("details %+v, want %+v", d, tt.want)
			}
		})
	}
	if id, p, node, h, ts := tests[1].want.Row(); id != signed.ID().String() || p != parent.String() || node != ids.NodeIDFromCert(cert).String() || h != 42 || ts != at.Unix() {
		t.Errorf("row of a signed wrapper: %s %s %s %d %d", id, p, node, h, ts)
	}
	if _, _, node, _, _ := tests[2].want.Row(); node != "" {
		t.Errorf("unsigned wrapper has node %q", node)
	}
	if id, _, _, _, _ := (*proposervm.Details)(nil).Row(); id != "" {
		t.Errorf("no wrapper has id %q", id)
	}

	// Another block's wrapper, or bytes that are neither, are refused.
	other := devnet.PBlocks(t, devnet.LoadRPC(t, devnet.P))[6].Bytes()
	otherWrapped, err := block.BuildOption(parent, other)
	if err != nil {
		t.Fatal(err)
	}
	for name, raw := range map[string][]byte{"another block's wrapper": otherWrapped.Bytes(), "another block": other, "garbage": {1, 2, 3}} {
		if _, _, err := proposervm.Unwrap(raw, innerID); !errors.Is(err, proposervm.ErrNotWrapper) {
			t.Errorf("%s: err %v, want ErrNotWrapper", name, err)
		}
	}
	// Without an ID to compare, the bytes are taken as the block.
	if got, d, err := proposervm.Unwrap(signed.Bytes(), ""); err != nil || d != nil || !bytes.Equal(got, signed.Bytes()) {
		t.Errorf("no id: %v %v", d, err)
	}
}
