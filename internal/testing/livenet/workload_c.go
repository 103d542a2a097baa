package livenet

import (
	"context"
	"errors"
	"fmt"
	"math/big"

	"github.com/ava-labs/libevm/common"
	"github.com/ava-labs/libevm/core/types"
)

// cChain covers the C-chain's EVM txs: native transfers (legacy, EIP-2930,
// EIP-1559, with data), ERC-20/721/1155 deploy, mint, transfer, approve,
// burn, reverted txs, a WAVAX-style contract (withdraw sends native value
// back: an internal transfer) and a factory creating a contract in a call.
// Txs that do not depend on each other are sent together (several per block).
func (w *workload) cChain(ctx context.Context) error {
	c := w.c
	ivan, judy, mallory := w.key("ivan"), w.key("judy"), w.key("mallory")
	ivanA, judyA, malloryA := ivan.EthAddress(), judy.EthAddress(), mallory.EthAddress()
	carolA, erinA, peggyA := w.key("carol").EthAddress(), w.key("erin").EthAddress(), w.key("peggy").EthAddress()
	k := w.contracts

	deploy := func(step, name string, args ...any) EVMTx {
		data, err := k[name].DeployData(args...)
		if err != nil {
			panic(err)
		}
		return EVMTx{From: ivan, Data: data, Step: step, Purpose: "deploy " + name, Extra: map[string]any{"contract": name}}
	}
	supply := Avax(1_000_000)
	ps, err := c.SendWait(ctx,
		EVMTx{From: judy, To: &malloryA, Value: Avax(10), Kind: TxLegacy, Step: "c01-transfer-legacy", Purpose: "10 AVAX judy->mallory, legacy (type 0)"},
		EVMTx{From: judy, To: &carolA, Value: Avax(3), Step: "c02-transfer-1559", Purpose: "3 AVAX judy->carol, EIP-1559 (type 2)"},
		EVMTx{From: judy, To: &peggyA, Value: Avax(1), Data: []byte("permafrost livenet"), Step: "c03-transfer-with-data", Type: "Transfer", Purpose: "1 AVAX judy->peggy with input data"},
		EVMTx{From: judy, To: &erinA, Value: Avax(2), Kind: TxAccessList, AccessList: types.AccessList{{Address: erinA}}, Step: "c04-transfer-2930", Purpose: "2 AVAX judy->erin, EIP-2930 (type 1) with an access list"},
		deploy("c05-deploy-erc20", "DevToken", "Livenet Token", "LVT", supply, ivanA),
		deploy("c06-deploy-erc721", "DevNFT", "Livenet NFT", "LNFT", ivanA),
		deploy("c07-deploy-erc1155", "DevMulti", "Livenet Multi", "LMT", ivanA),
		deploy("c08-deploy-wavax", "WAVAX"),
		deploy("c09-deploy-factory", "TokenFactory"),
	)
	if err != nil {
		return err
	}
	token, nft, multi, wavax, factory := ps[4].ContractAddress(), ps[5].ContractAddress(), ps[6].ContractAddress(), ps[7].ContractAddress(), ps[8].ContractAddress()
	w.mu.Lock()
	for name, a := range map[string]common.Address{"DevToken": token, "DevNFT": nft, "DevMulti": multi, "WAVAX": wavax, "TokenFactory": factory} {
		w.res.CContracts[name] = a
	}
	w.mu.Unlock()

	call := func(from *Key, to common.Address, contract, method string, args ...any) EVMTx {
		return EVMTx{From: from, To: addrPtr(to), Data: k[contract].Call(method, args...), Type: "ContractCall:" + method}
	}
	with := func(tx EVMTx, step, purpose string, value *big.Int, addrs ...common.Address) EVMTx {
		tx.Step, tx.Purpose, tx.Value, tx.Addresses = step, purpose, value, addrs
		return tx
	}
	dataURI := "data:application/json;base64,eyJuYW1lIjoiTGl2ZW5ldCBORlQgIzEiLCJkZXNjcmlwdGlvbiI6InBlcm1hZnJvc3QgbGl2ZW5ldCJ9"
	ps, err = c.SendWait(ctx,
		with(call(ivan, token, "DevToken", "transfer", malloryA, Avax(1000)), "c10-erc20-transfer", "transfer 1000 LVT ivan->mallory", nil, malloryA),
		with(call(ivan, token, "DevToken", "approve", judyA, Avax(500)), "c11-erc20-approve", "approve judy for 500 LVT", nil, judyA),
		with(call(ivan, token, "DevToken", "mint", carolA, Avax(42)), "c12-erc20-mint", "mint 42 LVT to carol (Transfer from 0x0)", nil, carolA),
		with(call(ivan, nft, "DevNFT", "mint", ivanA, big.NewInt(1), dataURI), "c13-erc721-mint-1", "mint NFT 1 to ivan (data: URI)", nil),
		with(call(ivan, nft, "DevNFT", "mint", malloryA, big.NewInt(2), "http://127.0.0.1:8080/nft/2.json"), "c14-erc721-mint-2", "mint NFT 2 to mallory (http URI)", nil, malloryA),
		with(call(ivan, nft, "DevNFT", "mint", ivanA, big.NewInt(3), "ipfs://bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi/3.json"), "c15-erc721-mint-3", "mint NFT 3 to ivan (ipfs URI)", nil),
		with(call(ivan, multi, "DevMulti", "mint", ivanA, big.NewInt(1), big.NewInt(100), dataURI), "c16-erc1155-mint-1", "mint 100 of id 1 to ivan (URI event)", nil),
		with(call(ivan, multi, "DevMulti", "mint", ivanA, big.NewInt(2), big.NewInt(50), "ipfs://bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi/{id}.json"), "c17-erc1155-mint-2", "mint 50 of id 2 to ivan", nil),
		with(call(ivan, multi, "DevMulti", "mintBatch", ivanA, []*big.Int{big.NewInt(3), big.NewInt(4)}, []*big.Int{big.NewInt(7), big.NewInt(9)}), "c18-erc1155-mint-batch", "mintBatch ids 3, 4 to ivan (TransferBatch from 0x0)", nil),
		with(call(ivan, wavax, "WAVAX", "deposit"), "c19-wavax-deposit", "deposit 5 AVAX into WAVAX", Avax(5)),
		with(call(ivan, factory, "TokenFactory", "create", "Factory Token", "FTK", Avax(777)), "c20-factory-create", "factory creates a new ERC-20 in a call (internal CREATE)", nil),
	)
	if err != nil {
		return err
	}
	child, err := factoryChild(ps[len(ps)-1].Receipt, factory)
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.res.CContracts["FactoryChild"] = child
	w.mu.Unlock()

	if _, err := c.SendWait(ctx,
		with(call(judy, token, "DevToken", "transferFrom", ivanA, erinA, Avax(200)), "c21-erc20-transfer-from", "judy moves 200 LVT ivan->erin with her allowance", nil, ivanA, erinA),
		with(call(mallory, token, "DevToken", "burn", Avax(100)), "c22-erc20-burn", "mallory burns 100 LVT (Transfer to 0x0)", nil),
		func() EVMTx {
			tx := with(call(mallory, token, "DevToken", "transfer", carolA, Avax(1_000_000_000)), "c23-erc20-transfer-reverts", "mallory transfers more LVT than she has: reverts (status 0)", nil, carolA)
			tx.Gas, tx.ExpectRevert = 100_000, true
			return tx
		}(),
		with(call(ivan, nft, "DevNFT", "safeTransferFrom", ivanA, malloryA, big.NewInt(1)), "c24-erc721-safe-transfer", "NFT 1 ivan->mallory (safeTransferFrom)", nil, malloryA),
		with(call(ivan, nft, "DevNFT", "approve", judyA, big.NewInt(3)), "c25-erc721-approve", "approve judy for NFT 3", nil, judyA),
		with(call(mallory, nft, "DevNFT", "burn", big.NewInt(2)), "c26-erc721-burn", "mallory burns NFT 2 (Transfer to 0x0)", nil),
		with(call(ivan, multi, "DevMulti", "safeTransferFrom", ivanA, malloryA, big.NewInt(1), big.NewInt(10), []byte{}), "c27-erc1155-transfer", "10 of id 1 ivan->mallory (TransferSingle)", nil, malloryA),
		with(call(ivan, multi, "DevMulti", "safeBatchTransferFrom", ivanA, carolA, []*big.Int{big.NewInt(3), big.NewInt(4)}, []*big.Int{big.NewInt(2), big.NewInt(3)}, []byte{}), "c28-erc1155-batch-transfer", "ids 3, 4 ivan->carol (TransferBatch)", nil, carolA),
		with(call(ivan, multi, "DevMulti", "burn", ivanA, big.NewInt(2), big.NewInt(5)), "c29-erc1155-burn", "ivan burns 5 of id 2", nil),
		with(call(ivan, multi, "DevMulti", "setApprovalForAll", judyA, true), "c30-erc1155-approval-for-all", "ivan approves judy as operator", nil, judyA),
		with(call(ivan, wavax, "WAVAX", "withdraw", Avax(2)), "c31-wavax-withdraw", "withdraw 2 WAVAX: the contract sends 2 AVAX back to ivan (internal value transfer)", nil),
		with(call(ivan, wavax, "WAVAX", "transfer", malloryA, Avax(1)), "c32-wavax-transfer", "transfer 1 WAVAX to mallory", nil, malloryA),
		with(call(ivan, child, "DevToken", "transfer", carolA, Avax(7)), "c33-factory-token-transfer", "transfer 7 FTK (the factory-created token) to carol", nil, carolA),
	); err != nil {
		return err
	}
	_, err = c.SendWait(ctx,
		with(call(judy, nft, "DevNFT", "transferFrom", ivanA, carolA, big.NewInt(3)), "c34-erc721-transfer-by-approved", "judy (approved) moves NFT 3 ivan->carol", nil, ivanA, carolA),
		with(call(judy, multi, "DevMulti", "safeTransferFrom", ivanA, erinA, big.NewInt(4), big.NewInt(1), []byte{}), "c35-erc1155-transfer-by-operator", "judy (operator) moves 1 of id 4 ivan->erin", nil, ivanA, erinA),
		func() EVMTx {
			tx := with(call(judy, token, "DevToken", "mint", judyA, Avax(1)), "c36-erc20-mint-reverts", "judy (not the owner) mints: reverts (status 0)", nil)
			tx.Gas, tx.ExpectRevert = 100_000, true
			return tx
		}(),
	)
	return err
}

// factoryChild finds the token created by TokenFactory.create in its receipt.
func factoryChild(r *types.Receipt, factory common.Address) (common.Address, error) {
	if r == nil {
		return common.Address{}, errors.New("no receipt for the factory call")
	}
	for _, l := range r.Logs {
		if l.Address == factory && len(l.Topics) >= 2 {
			return common.BytesToAddress(l.Topics[1].Bytes()), nil
		}
	}
	return common.Address{}, fmt.Errorf("factory call %s logged no TokenCreated", r.TxHash.Hex())
}
