package livenet

import (
	"context"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/crypto/secp256k1"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"
	"github.com/ava-labs/avalanchego/wallet/subnet/primary"
	"github.com/ava-labs/avalanchego/wallet/subnet/primary/common"
)

// newWallet makes a wallet SDK wallet for keys against uri. The wallet
// reads the keys' UTXOs (including atomic ones) once and then tracks what
// it issues, so each concurrent goroutine of the workload has its own.
func newWallet(ctx context.Context, uri string, keys ...*Key) (*primary.Wallet, error) {
	return newWalletFor(ctx, uri, nil, keys...)
}

// newWalletFor also loads the owners of the given subnets (needed to sign
// subnet-authorised txs for subnets this wallet did not create).
func newWalletFor(ctx context.Context, uri string, subnetIDs []ids.ID, keys ...*Key) (*primary.Wallet, error) {
	var pks []*secp256k1.PrivateKey
	for _, k := range keys {
		pks = append(pks, k.Key)
	}
	kc := secp256k1fx.NewKeychain(pks...)
	w, err := primary.MakeWallet(ctx, uri, kc, kc, primary.WalletConfig{SubnetIDs: subnetIDs})
	if err != nil {
		return nil, err
	}
	// Polling every 20 ms instead of 100 ms shortens each issue-and-wait.
	return primary.NewWalletWithOptions(w, common.WithPollFrequency(20*time.Millisecond)), nil
}
