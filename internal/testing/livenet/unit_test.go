package livenet

import (
	"bytes"
	"encoding/hex"
	"math/big"
	"sort"
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/crypto/bls"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp/payload"
)

// These run without a network (and with -short).

func TestContractsLoad(t *testing.T) {
	cs, err := Contracts()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"DevToken", "DevNFT", "DevMulti", "WAVAX", "TokenFactory"} {
		if c := cs[name]; c == nil || len(c.Bytecode) == 0 {
			t.Errorf("%s: no bytecode", name)
		}
	}
	// Overloads are picked by argument count: safeTransferFrom(address,address,uint256) is 0x42842e0e.
	data := cs["DevNFT"].Call("safeTransferFrom", NativeMinterAddr, FeeManagerAddr, big.NewInt(1))
	if got := hex.EncodeToString(data[:4]); got != "42842e0e" {
		t.Errorf("safeTransferFrom selector %s, want 42842e0e", got)
	}
}

func TestKeysDeterministic(t *testing.T) {
	a, b := NewKeys(), NewKeys()
	for i := range a.All {
		if a.All[i].EthAddress() != b.All[i].EthAddress() {
			t.Fatalf("key %s differs between runs", a.All[i].Name)
		}
	}
	v1, err := NewOfflineValidator("x")
	if err != nil {
		t.Fatal(err)
	}
	v2, _ := NewOfflineValidator("x")
	if v1.NodeID != v2.NodeID || !bytes.Equal(v1.PoP.PublicKey[:], v2.PoP.PublicKey[:]) {
		t.Fatal("offline validator differs between runs")
	}
}

// SignWarp's bit set must follow the canonical order (public keys sorted by
// their uncompressed bytes) and the aggregate must verify against it.
func TestSignWarp(t *testing.T) {
	var signers []WarpSigner
	for _, name := range []string{"a", "b", "c"} {
		v, err := NewOfflineValidator(name)
		if err != nil {
			t.Fatal(err)
		}
		signers = append(signers, WarpSigner{Signer: v.Signer, Weight: 1})
	}
	chainID := ids.GenerateTestID()
	raw, err := SignWarp(12345, chainID, []byte{1, 2, 3}, []byte("payload"), signers)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := warp.ParseMessage(raw)
	if err != nil {
		t.Fatal(err)
	}
	if msg.NetworkID != 12345 || msg.SourceChainID != chainID {
		t.Fatalf("unexpected message header %d %s", msg.NetworkID, msg.SourceChainID)
	}
	call, err := payload.ParseAddressedCall(msg.Payload)
	if err != nil || !bytes.Equal(call.Payload, []byte("payload")) {
		t.Fatalf("payload: %v", err)
	}
	pks := []*bls.PublicKey{}
	for _, s := range signers {
		pks = append(pks, s.Signer.PublicKey())
	}
	sort.Slice(pks, func(i, j int) bool {
		return bytes.Compare(bls.PublicKeyToUncompressedBytes(pks[i]), bls.PublicKeyToUncompressedBytes(pks[j])) < 0
	})
	agg, err := bls.AggregatePublicKeys(pks)
	if err != nil {
		t.Fatal(err)
	}
	sig := msg.Signature.(*warp.BitSetSignature)
	s, err := bls.SignatureFromBytes(sig.Signature[:])
	if err != nil {
		t.Fatal(err)
	}
	if !bls.Verify(agg, s, msg.UnsignedMessage.Bytes()) {
		t.Fatal("aggregate signature does not verify")
	}
}

// TestCompareUTXOs: the tx-detail comparison of UTXOs finds every
// difference of owners, amount or presence, and only those (the node's
// chain alias on addresses and a served amount of an NFT are no difference).
func TestCompareUTXOs(t *testing.T) {
	served := func(addrs []any, threshold, amount string) map[string]any {
		return map[string]any{"txHash": "tx1", "outputIndex": "0", "assetId": "a", "amount": amount,
			"addresses": addrs, "threshold": threshold, "platformLocktime": "0"}
	}
	node := nodeUTXO{tx: "tx1", index: "0", asset: "a", amount: "5", owner: ownerText(1, 0, []string{"P-custom1b", "P-custom1a"})}
	nft := node
	nft.amount = ""
	for _, tc := range []struct {
		name  string
		want  []nodeUTXO
		got   []map[string]any
		diffs int
	}{
		{"equal, aliases stripped, addresses in any order", []nodeUTXO{node}, []map[string]any{served([]any{"custom1a", "custom1b"}, "1", "5")}, 0},
		{"other address", []nodeUTXO{node}, []map[string]any{served([]any{"custom1a", "custom1c"}, "1", "5")}, 1},
		{"other threshold", []nodeUTXO{node}, []map[string]any{served([]any{"custom1a", "custom1b"}, "2", "5")}, 1},
		{"other amount", []nodeUTXO{node}, []map[string]any{served([]any{"custom1a", "custom1b"}, "1", "6")}, 1},
		{"not served", []nodeUTXO{node}, nil, 1},
		{"served, unknown to the node", nil, []map[string]any{served([]any{"custom1a"}, "1", "5")}, 1},
		{"NFT: no amount on the node", []nodeUTXO{nft}, []map[string]any{served([]any{"custom1a", "custom1b"}, "1", "")}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var list []any
			for _, g := range tc.got {
				list = append(list, g)
			}
			want, got := map[string]string{}, map[string]string{}
			compareUTXOs("emitted", tc.want, servedUTXOList(map[string]any{"emittedUtxos": list}, "emittedUtxos"), want, got)
			if d := diffFields(got, want); len(d) != tc.diffs {
				t.Errorf("%d differences, want %d: %v", len(d), tc.diffs, d)
			}
		})
	}
}
