package pchain

import (
	"fmt"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/vms/components/avax"
	"github.com/ava-labs/avalanchego/vms/platformvm/fx"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp/message"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp/payload"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"

	"github.com/permafrost-dev/permafrost/internal/decode/primary"
)

// txInfo is what a tx says about itself, before any state is consulted.
type txInfo struct {
	typ          string // PrimaryNetworkTxType
	memo         []byte
	sourceChain  ids.ID
	destChain    ids.ID
	subnetID     ids.ID
	nodeID       ids.NodeID
	validationID ids.ID
	blockchainID ids.ID
	rewardStaker ids.ID // RewardValidatorTx
	// Everything below is validated up front so execution cannot fail half way
	// on a malformed tx.
	ins      []*avax.TransferableInput
	outs     []*avax.TransferableOutput
	register *message.RegisterL1Validator // RegisterL1ValidatorTx
	weight   *message.L1ValidatorWeight   // SetL1ValidatorWeightTx
	warpSrc  ids.ID                       // source chain of the Warp message
}

// describer is the txs.Visitor that reads a tx into a txInfo. A tx it rejects
// is stored as UNKNOWN.
type describer struct{ info *txInfo }

var _ txs.Visitor = (*describer)(nil)

// describe validates and summarises a tx.
func describe(stx *txs.Tx) (*txInfo, error) {
	if stx == nil || stx.Unsigned == nil {
		return nil, fmt.Errorf("pchain: empty tx")
	}
	info := &txInfo{typ: "UNKNOWN"}
	if err := stx.Unsigned.Visit(&describer{info: info}); err != nil {
		return nil, err
	}
	for _, in := range info.ins {
		if _, ok := in.In.(avax.TransferableIn); !ok || in.In == nil {
			return nil, fmt.Errorf("pchain: input %s has unsupported type %T", in.InputID(), in.In)
		}
	}
	for _, out := range info.outs {
		if out == nil || out.Out == nil {
			return nil, fmt.Errorf("pchain: empty output")
		}
		if _, err := primary.OutputFields(out.Out); err != nil {
			return nil, err
		}
	}
	return info, nil
}

func (d *describer) base(tx *txs.BaseTx, typ string) {
	d.info.typ = typ
	d.info.memo = tx.Memo
	d.info.ins = append(d.info.ins, tx.Ins...)
	d.info.outs = append(d.info.outs, tx.Outs...)
}

func checkOwner(o fx.Owner) error {
	if _, ok := o.(*secp256k1fx.OutputOwners); !ok {
		return fmt.Errorf("pchain: unsupported owner type %T", o)
	}
	return nil
}

func (d *describer) AddValidatorTx(tx *txs.AddValidatorTx) error {
	d.base(&tx.BaseTx, "AddValidatorTx")
	d.info.subnetID, d.info.nodeID = tx.SubnetID(), tx.NodeID()
	d.info.outs = append(d.info.outs, tx.StakeOuts...)
	return checkOwner(tx.RewardsOwner)
}

func (d *describer) AddSubnetValidatorTx(tx *txs.AddSubnetValidatorTx) error {
	d.base(&tx.BaseTx, "AddSubnetValidatorTx")
	d.info.subnetID, d.info.nodeID = tx.SubnetID(), tx.NodeID()
	return nil
}

func (d *describer) AddDelegatorTx(tx *txs.AddDelegatorTx) error {
	d.base(&tx.BaseTx, "AddDelegatorTx")
	d.info.subnetID, d.info.nodeID = tx.SubnetID(), tx.NodeID()
	d.info.outs = append(d.info.outs, tx.StakeOuts...)
	return checkOwner(tx.DelegationRewardsOwner)
}

func (d *describer) CreateChainTx(tx *txs.CreateChainTx) error {
	d.base(&tx.BaseTx, "CreateChainTx")
	d.info.subnetID = tx.SubnetID
	return nil
}

func (d *describer) CreateSubnetTx(tx *txs.CreateSubnetTx) error {
	d.base(&tx.BaseTx, "CreateSubnetTx")
	return checkOwner(tx.Owner)
}

func (d *describer) ImportTx(tx *txs.ImportTx) error {
	d.base(&tx.BaseTx, "ImportTx")
	d.info.sourceChain = tx.SourceChain
	d.info.ins = append(d.info.ins, tx.ImportedInputs...)
	return nil
}

func (d *describer) ExportTx(tx *txs.ExportTx) error {
	d.base(&tx.BaseTx, "ExportTx")
	d.info.destChain = tx.DestinationChain
	d.info.outs = append(d.info.outs, tx.ExportedOutputs...)
	return nil
}

func (d *describer) AdvanceTimeTx(*txs.AdvanceTimeTx) error {
	d.info.typ = "AdvanceTimeTx"
	return nil
}

func (d *describer) RewardValidatorTx(tx *txs.RewardValidatorTx) error {
	d.info.typ = "RewardValidatorTx"
	d.info.rewardStaker = tx.TxID
	return nil
}

func (d *describer) RemoveSubnetValidatorTx(tx *txs.RemoveSubnetValidatorTx) error {
	d.base(&tx.BaseTx, "RemoveSubnetValidatorTx")
	d.info.subnetID, d.info.nodeID = tx.Subnet, tx.NodeID
	return nil
}

func (d *describer) TransformSubnetTx(tx *txs.TransformSubnetTx) error {
	d.base(&tx.BaseTx, "TransformSubnetTx")
	d.info.subnetID = tx.Subnet
	return nil
}

func (d *describer) AddPermissionlessValidatorTx(tx *txs.AddPermissionlessValidatorTx) error {
	d.base(&tx.BaseTx, "AddPermissionlessValidatorTx")
	d.info.subnetID, d.info.nodeID = tx.Subnet, tx.NodeID()
	d.info.outs = append(d.info.outs, tx.StakeOuts...)
	if err := checkOwner(tx.ValidatorRewardsOwner); err != nil {
		return err
	}
	return checkOwner(tx.DelegatorRewardsOwner)
}

func (d *describer) AddPermissionlessDelegatorTx(tx *txs.AddPermissionlessDelegatorTx) error {
	d.base(&tx.BaseTx, "AddPermissionlessDelegatorTx")
	d.info.subnetID, d.info.nodeID = tx.Subnet, tx.NodeID()
	d.info.outs = append(d.info.outs, tx.StakeOuts...)
	return checkOwner(tx.DelegationRewardsOwner)
}

func (d *describer) TransferSubnetOwnershipTx(tx *txs.TransferSubnetOwnershipTx) error {
	d.base(&tx.BaseTx, "TransferSubnetOwnershipTx")
	d.info.subnetID = tx.Subnet
	return checkOwner(tx.Owner)
}

func (d *describer) BaseTx(tx *txs.BaseTx) error {
	d.base(tx, "BaseTx")
	return nil
}

func (d *describer) ConvertSubnetToL1Tx(tx *txs.ConvertSubnetToL1Tx) error {
	d.base(&tx.BaseTx, "ConvertSubnetToL1Tx")
	d.info.subnetID, d.info.blockchainID = tx.Subnet, tx.ChainID
	for i, v := range tx.Validators {
		if _, err := ids.ToNodeID(v.NodeID); err != nil {
			return fmt.Errorf("pchain: conversion validator %d: %w", i, err)
		}
	}
	return nil
}

// warpPayload unwraps a Warp message into its addressed-call payload.
func (d *describer) warpPayload(b []byte) ([]byte, error) {
	msg, err := warp.ParseMessage(b)
	if err != nil {
		return nil, fmt.Errorf("pchain: warp message: %w", err)
	}
	call, err := payload.ParseAddressedCall(msg.Payload)
	if err != nil {
		return nil, fmt.Errorf("pchain: warp payload: %w", err)
	}
	d.info.warpSrc = msg.SourceChainID
	return call.Payload, nil
}

func (d *describer) RegisterL1ValidatorTx(tx *txs.RegisterL1ValidatorTx) error {
	d.base(&tx.BaseTx, "RegisterL1ValidatorTx")
	p, err := d.warpPayload(tx.Message)
	if err != nil {
		return err
	}
	msg, err := message.ParseRegisterL1Validator(p)
	if err != nil {
		return fmt.Errorf("pchain: register message: %w", err)
	}
	if _, err := ids.ToNodeID(msg.NodeID); err != nil {
		return fmt.Errorf("pchain: register message node id: %w", err)
	}
	d.info.register = msg
	d.info.subnetID, d.info.validationID = msg.SubnetID, msg.ValidationID()
	d.info.nodeID, _ = ids.ToNodeID(msg.NodeID)
	return nil
}

func (d *describer) SetL1ValidatorWeightTx(tx *txs.SetL1ValidatorWeightTx) error {
	d.base(&tx.BaseTx, "SetL1ValidatorWeightTx")
	p, err := d.warpPayload(tx.Message)
	if err != nil {
		return err
	}
	msg, err := message.ParseL1ValidatorWeight(p)
	if err != nil {
		return fmt.Errorf("pchain: weight message: %w", err)
	}
	d.info.weight = msg
	d.info.validationID = msg.ValidationID
	return nil
}

func (d *describer) IncreaseL1ValidatorBalanceTx(tx *txs.IncreaseL1ValidatorBalanceTx) error {
	d.base(&tx.BaseTx, "IncreaseL1ValidatorBalanceTx")
	d.info.validationID = tx.ValidationID
	return nil
}

func (d *describer) DisableL1ValidatorTx(tx *txs.DisableL1ValidatorTx) error {
	d.base(&tx.BaseTx, "DisableL1ValidatorTx")
	d.info.validationID = tx.ValidationID
	return nil
}
