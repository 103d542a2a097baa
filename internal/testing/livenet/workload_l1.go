package livenet

import (
	"context"
	"fmt"
	"math/big"

	"github.com/ava-labs/libevm/common"
)

// l1Chain covers the L1 (subnet-evm): native transfers, contract deploys
// and calls (including an internal value transfer), and the precompiles:
// native minter, fee manager, reward manager, tx and deployer allow lists.
func (w *workload) l1Chain(ctx context.Context) error {
	c := w.l1
	trent, olivia, peggy := w.key("trent"), w.key("olivia"), w.key("peggy")
	trentA, oliviaA, peggyA := trent.EthAddress(), olivia.EthAddress(), peggy.EthAddress()
	k := w.contracts

	tokenData, err := k["DevToken"].DeployData("L1 Token", "L1T", Avax(1_000_000), trentA)
	if err != nil {
		return err
	}
	ps, err := c.SendWait(ctx,
		EVMTx{From: trent, To: &peggyA, Value: Avax(100), Step: "n01-transfer-admin-peggy", Purpose: "100 tokens trent (admin)->peggy"},
		EVMTx{From: olivia, To: &peggyA, Value: Avax(5), Kind: TxLegacy, Step: "n02-transfer-enabled-peggy", Purpose: "5 tokens olivia (allow-listed)->peggy, legacy"},
		EVMTx{From: trent, Data: tokenData, Step: "n03-deploy-erc20", Purpose: "trent (deployer admin) deploys an ERC-20", Extra: map[string]any{"contract": "DevToken"}},
		EVMTx{From: olivia, Data: k["WAVAX"].Bytecode, Step: "n04-deploy-wavax", Purpose: "olivia (deployer allow-listed) deploys WAVAX", Extra: map[string]any{"contract": "WAVAX"}},
	)
	if err != nil {
		return err
	}
	token, wavax := ps[2].ContractAddress(), ps[3].ContractAddress()
	w.mu.Lock()
	w.res.L1Contracts["DevToken"], w.res.L1Contracts["WAVAX"] = token, wavax
	w.mu.Unlock()

	call := func(from *Key, to common.Address, contract, method, step, purpose string, value *big.Int, args ...any) EVMTx {
		return EVMTx{From: from, To: addrPtr(to), Value: value, Data: k[contract].Call(method, args...), Type: "ContractCall:" + method, Step: step, Purpose: purpose}
	}
	// The fee manager's new config: the same as the genesis one but a
	// minimum base fee of 2 gwei (eth_gasPrice follows, so later txs pay it).
	fee := func(key string) *big.Int { return big.NewInt(int64(l1FeeConfig[key].(int))) }
	newFee := []any{fee("gasLimit"), fee("targetBlockRate"), big.NewInt(2_000_000_000), fee("targetGas"), fee("baseFeeChangeDenominator"), fee("minBlockGasCost"), fee("maxBlockGasCost"), fee("blockGasCostStep")}
	mint := call(trent, NativeMinterAddr, "NativeMinter", "mintNativeCoin", "n05-native-minter-mint", "native minter precompile mints 1000 tokens to peggy", nil, peggyA, Avax(1000))
	mint.Addresses = []common.Address{peggyA}
	enable := call(trent, TxAllowListAddr, "AllowList", "setEnabled", "n06-tx-allow-list-enable", "tx allow list: trent enables peggy to send txs", nil, peggyA)
	enable.Addresses = []common.Address{peggyA}
	reward := call(trent, RewardManagerAddr, "RewardManager", "setRewardAddress", "n07-reward-manager-set-address", "reward manager: block fees go to peggy", nil, peggyA)
	reward.Addresses = []common.Address{peggyA}
	transfer := call(trent, token, "DevToken", "transfer", "n08-erc20-transfer", "transfer 500 L1T trent->olivia", nil, oliviaA, Avax(500))
	transfer.Addresses = []common.Address{oliviaA}
	if _, err := c.SendWait(ctx,
		mint, enable, reward, transfer,
		call(olivia, wavax, "WAVAX", "deposit", "n09-wavax-deposit", "olivia deposits 3 tokens into WAVAX", Avax(3)),
	); err != nil {
		return err
	}
	// The fee change alone, so txs sent with the old price are not in flight.
	if _, err := c.SendWait(ctx, call(trent, FeeManagerAddr, "FeeManager", "setFeeConfig", "n10-fee-manager-set-config", "fee manager: minimum base fee 1 -> 2 gwei", nil, newFee...)); err != nil {
		return err
	}
	if _, err := c.SendWait(ctx,
		EVMTx{From: peggy, To: &trentA, Value: Avax(1), Step: "n11-transfer-newly-enabled", Purpose: "peggy (enabled by n06, funded by the minter) sends 1 token to trent"},
		call(olivia, wavax, "WAVAX", "withdraw", "n12-wavax-withdraw", "olivia withdraws 2 WAVAX: native value sent back (internal transfer)", nil, Avax(2)),
		call(trent, DeployerAllowListAddr, "AllowList", "setEnabled", "n13-deployer-allow-list-enable", "deployer allow list: trent enables peggy to deploy", nil, peggyA),
	); err != nil {
		return err
	}
	// Sanity: the precompiles' state says what the txs did.
	out, err := c.CallView(ctx, k["AllowList"], TxAllowListAddr, "readAllowList", peggyA)
	if err != nil {
		return err
	}
	if role, ok := out[0].(*big.Int); !ok || role.Int64() != 1 {
		return fmt.Errorf("tx allow list role of peggy: %v, want 1 (enabled)", out)
	}
	return nil
}
