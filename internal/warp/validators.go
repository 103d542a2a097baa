package warp

import (
	"fmt"
	"math/big"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow/validators"
	"github.com/ava-labs/avalanchego/utils"
	"github.com/ava-labs/avalanchego/utils/crypto/bls"
	"github.com/ava-labs/avalanchego/utils/hashing"
	safemath "github.com/ava-labs/avalanchego/utils/math"
)

// canonicalSet turns a validator list into the canonical Warp validator set:
// validators sharing a BLS key merge into one signer, signers are ordered by
// uncompressed public key, and the total weight includes validators without a
// key. It is avalanchego's validators.FlattenValidatorSet over a slice, so
// that several key-less entries (inactive L1 validators all use the empty
// node id) all count.
func canonicalSet(vals []Validator) (validators.WarpSet, error) {
	var (
		total    uint64
		byKey    = make(map[string]*validators.Warp, len(vals))
		seenNode = make(map[ids.NodeID]struct{}, len(vals))
		err      error
	)
	for _, v := range vals {
		if total, err = safemath.Add(total, v.Weight); err != nil {
			return validators.WarpSet{}, fmt.Errorf("validator weights overflow: %w", err)
		}
		if v.PublicKey == nil || v.Weight == 0 {
			continue
		}
		if _, dup := seenNode[v.NodeID]; dup {
			return validators.WarpSet{}, fmt.Errorf("validator %s listed twice", v.NodeID)
		}
		seenNode[v.NodeID] = struct{}{}
		pk := bls.PublicKeyToUncompressedBytes(v.PublicKey)
		w, ok := byKey[string(pk)]
		if !ok {
			w = &validators.Warp{PublicKey: v.PublicKey, PublicKeyBytes: pk}
			byKey[string(pk)] = w
		}
		w.Weight += v.Weight // cannot overflow: bounded by total
		w.NodeIDs = append(w.NodeIDs, v.NodeID)
	}
	list := make([]*validators.Warp, 0, len(byKey))
	for _, w := range byKey {
		list = append(list, w)
	}
	utils.Sort(list)
	return validators.WarpSet{Validators: list, TotalWeight: total}, nil
}

// meetsQuorum is avalanchego's warp.VerifyWeight test:
// weight*100 >= total*percent.
func meetsQuorum(weight, total, percent uint64) bool {
	l := new(big.Int).Mul(new(big.Int).SetUint64(weight), big.NewInt(100))
	r := new(big.Int).Mul(new(big.Int).SetUint64(total), new(big.Int).SetUint64(percent))
	return l.Cmp(r) >= 0
}

// neededWeight is the smallest weight that meets percent of total:
// ceil(total*percent/100).
func neededWeight(total, percent uint64) uint64 {
	n := new(big.Int).Mul(new(big.Int).SetUint64(total), new(big.Int).SetUint64(percent))
	n.Add(n, big.NewInt(99))
	n.Div(n, big.NewInt(100))
	return n.Uint64() // <= total
}

// syncManager makes subnetID's validators in m equal to vals, so that
// avalanchego's network connects to exactly them (ConnectToAllValidators).
// Validators without a BLS key or node id are skipped: they cannot sign.
func syncManager(m validators.Manager, subnetID ids.ID, vals []Validator) error {
	want := make(map[ids.NodeID]Validator, len(vals))
	for _, v := range vals {
		if v.PublicKey == nil || v.Weight == 0 || v.NodeID == ids.EmptyNodeID {
			continue
		}
		want[v.NodeID] = v
	}
	for nodeID, cur := range m.GetMap(subnetID) {
		w, ok := want[nodeID]
		if ok && cur.PublicKey != nil && cur.PublicKey.Equals(w.PublicKey) {
			continue
		}
		// Gone or re-keyed: remove all of its weight (removes the validator).
		if err := m.RemoveWeight(subnetID, nodeID, cur.Weight); err != nil {
			return fmt.Errorf("remove validator %s: %w", nodeID, err)
		}
	}
	for nodeID, v := range want {
		cur, ok := m.GetValidator(subnetID, nodeID)
		switch {
		case !ok:
			// The network verifies a validator's BLS signature on its IP
			// once per txID; a txID derived from the key makes it check.
			txID := hashing.ComputeHash256Array(bls.PublicKeyToCompressedBytes(v.PublicKey))
			if err := m.AddStaker(subnetID, nodeID, v.PublicKey, txID, v.Weight); err != nil {
				return fmt.Errorf("add validator %s: %w", nodeID, err)
			}
		case cur.Weight < v.Weight:
			if err := m.AddWeight(subnetID, nodeID, v.Weight-cur.Weight); err != nil {
				return fmt.Errorf("add weight of %s: %w", nodeID, err)
			}
		case cur.Weight > v.Weight:
			if err := m.RemoveWeight(subnetID, nodeID, cur.Weight-v.Weight); err != nil {
				return fmt.Errorf("remove weight of %s: %w", nodeID, err)
			}
		}
	}
	return nil
}
