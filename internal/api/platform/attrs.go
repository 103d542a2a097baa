package platform

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/vms/platformvm/signer"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp/message"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp/payload"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"

	avajson "github.com/ava-labs/avalanchego/utils/json"
	platformapi "github.com/ava-labs/avalanchego/vms/platformvm/api"
)

// stakerAttributes are what the node reads from a staker's tx
// (loadStakerTxAttributes): immutable, so cached.
type stakerAttributes struct {
	shares                 uint32
	rewardsOwner           *secp256k1fx.OutputOwners
	validationRewardsOwner *secp256k1fx.OutputOwners
	delegationRewardsOwner *secp256k1fx.OutputOwners
	proofOfPossession      *signer.ProofOfPossession
}

func (s *Service) stakerAttributes(ctx context.Context, txID ids.ID) (*stakerAttributes, error) {
	if a, ok := s.stakerAttrs.Get(txID); ok {
		return a, nil
	}
	stx, err := s.loadTx(ctx, txID.String())
	if err != nil {
		return nil, err
	}
	var a *stakerAttributes
	switch t := stx.Unsigned.(type) {
	case txs.ValidatorTx:
		var pop *signer.ProofOfPossession
		if v, ok := t.(*txs.AddPermissionlessValidatorTx); ok {
			if p, ok := v.Signer.(*signer.ProofOfPossession); ok {
				pop = p
			}
		}
		a = &stakerAttributes{shares: t.Shares(), proofOfPossession: pop}
		// Owners of other types are omitted, as by the node.
		a.validationRewardsOwner, _ = t.ValidationRewardsOwner().(*secp256k1fx.OutputOwners)
		a.delegationRewardsOwner, _ = t.DelegationRewardsOwner().(*secp256k1fx.OutputOwners)
	case txs.DelegatorTx:
		a = &stakerAttributes{}
		a.rewardsOwner, _ = t.RewardsOwner().(*secp256k1fx.OutputOwners)
	default:
		return nil, fmt.Errorf("unexpected staker tx type %T", stx.Unsigned)
	}
	s.stakerAttrs.Put(txID, a)
	return a, nil
}

// apiOwner mirrors getAPIOwner: addresses in the owner's order, P-formatted.
func (s *Service) apiOwner(o *secp256k1fx.OutputOwners) (*platformapi.Owner, error) {
	out := &platformapi.Owner{
		Locktime:  avajson.Uint64(o.Locktime),
		Threshold: avajson.Uint32(o.Threshold),
		Addresses: make([]string, 0, len(o.Addrs)),
	}
	for _, a := range o.Addrs {
		str, err := s.addrs.FormatLocalAddress(a)
		if err != nil {
			return nil, err
		}
		out.Addresses = append(out.Addresses, str)
	}
	return out, nil
}

// l1Owners are an L1 validator's owners as its creating tx set them (the
// indexer's owner columns keep addresses sorted as text, not in the tx's
// order, so the tx is the source).
type l1Owners struct {
	remaining    *secp256k1fx.OutputOwners
	deactivation *secp256k1fx.OutputOwners
}

func pchainOwner(o message.PChainOwner) *secp256k1fx.OutputOwners {
	return &secp256k1fx.OutputOwners{Threshold: o.Threshold, Addrs: o.Addresses}
}

func (s *Service) l1ValidatorOwners(ctx context.Context, v *l1Validator) (*l1Owners, error) {
	if o, ok := s.l1Owners.Get(v.validationID); ok {
		return o, nil
	}
	stx, err := s.loadTx(ctx, v.createdTx)
	if err != nil {
		return nil, err
	}
	var o *l1Owners
	switch t := stx.Unsigned.(type) {
	case *txs.ConvertSubnetToL1Tx:
		if v.convIndex < 0 || v.convIndex >= len(t.Validators) {
			return nil, fmt.Errorf("L1 validator %s: conversion index %d of %d", v.validationID, v.convIndex, len(t.Validators))
		}
		c := t.Validators[v.convIndex]
		o = &l1Owners{remaining: pchainOwner(c.RemainingBalanceOwner), deactivation: pchainOwner(c.DeactivationOwner)}
	case *txs.RegisterL1ValidatorTx:
		msg, err := warp.ParseMessage(t.Message)
		if err != nil {
			return nil, fmt.Errorf("L1 validator %s: warp message: %w", v.validationID, err)
		}
		call, err := payload.ParseAddressedCall(msg.Payload)
		if err != nil {
			return nil, fmt.Errorf("L1 validator %s: warp payload: %w", v.validationID, err)
		}
		reg, err := message.ParseRegisterL1Validator(call.Payload)
		if err != nil {
			return nil, fmt.Errorf("L1 validator %s: register message: %w", v.validationID, err)
		}
		o = &l1Owners{remaining: pchainOwner(reg.RemainingBalanceOwner), deactivation: pchainOwner(reg.DisableOwner)}
	default:
		return nil, fmt.Errorf("L1 validator %s created by a %T", v.validationID, stx.Unsigned)
	}
	s.l1Owners.Put(v.validationID, o)
	return o, nil
}

func decodeHex(s string) ([]byte, error) {
	return hex.DecodeString(strings.TrimPrefix(s, "0x"))
}
