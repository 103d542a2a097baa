package warp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/proto/pb/platformvm"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp/message"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp/payload"
)

// l1Message is a P-chain Warp message about an L1 with what signing it needs.
type l1Message struct {
	msg           *warp.UnsignedMessage
	justification []byte
	// subnetID is the L1 the message is about. Its validators sign: every L1
	// validator runs the P-chain, and an L1 checks P-chain messages against
	// its own validator set.
	subnetID ids.ID
}

// pChainMessage wraps a P-chain payload the way the P-chain's ACP-118
// verifier expects: an AddressedCall with an empty source address, from the
// P-chain (ids.Empty).
func pChainMessage(networkID uint32, p message.Payload) (*warp.UnsignedMessage, error) {
	call, err := payload.NewAddressedCall(nil, p.Bytes())
	if err != nil {
		return nil, fmt.Errorf("addressed call: %w", err)
	}
	msg, err := warp.NewUnsignedMessage(networkID, constants.PlatformChainID, call.Bytes())
	if err != nil {
		return nil, fmt.Errorf("unsigned message: %w", err)
	}
	return msg, nil
}

func txKind(u txs.UnsignedTx) string {
	return strings.TrimPrefix(fmt.Sprintf("%T", u), "*txs.")
}

// messageForTx builds the message the P-chain attests for an L1 validator tx:
//
//	ConvertSubnetToL1Tx    -> SubnetToL1Conversion(conversionID), justification subnetID
//	RegisterL1ValidatorTx  -> L1ValidatorRegistration(validationID, true)
//	SetL1ValidatorWeightTx -> L1ValidatorWeight(validationID, nonce, weight), or for
//	                          weight 0 (removal) L1ValidatorRegistration(validationID, false)
//	DisableL1ValidatorTx   -> L1ValidatorRegistration(validationID, false)
//
// Registration(false) carries the L1ValidatorRegistrationJustification the
// P-chain needs: the conversion's (subnetID, index) for an initial validator,
// the RegisterL1ValidatorMessage otherwise.
func (a *Aggregator) messageForTx(ctx context.Context, tx *txs.Tx) (l1Message, error) {
	networkID := a.cfg.NetworkID
	switch u := tx.Unsigned.(type) {
	case *txs.ConvertSubnetToL1Tx:
		return conversionMessage(networkID, u)
	case *txs.RegisterL1ValidatorTx:
		reg, err := registerMessageOf(u.Message)
		if err != nil {
			return l1Message{}, err
		}
		p, err := message.NewL1ValidatorRegistration(reg.ValidationID(), true)
		if err != nil {
			return l1Message{}, fmt.Errorf("registration payload: %w", err)
		}
		msg, err := pChainMessage(networkID, p)
		return l1Message{msg: msg, subnetID: reg.SubnetID}, err
	case *txs.SetL1ValidatorWeightTx:
		w, err := weightMessageOf(u.Message)
		if err != nil {
			return l1Message{}, err
		}
		if w.Weight == 0 {
			// The validator is gone; the P-chain attests that it can never
			// validate again (the message a validator manager waits for).
			return a.removalMessage(ctx, w.ValidationID)
		}
		subnetID, err := a.subnetOfValidation(ctx, w.ValidationID)
		if err != nil {
			return l1Message{}, err
		}
		p, err := message.NewL1ValidatorWeight(w.ValidationID, w.Nonce, w.Weight)
		if err != nil {
			return l1Message{}, fmt.Errorf("weight payload: %w", err)
		}
		msg, err := pChainMessage(networkID, p)
		return l1Message{msg: msg, subnetID: subnetID}, err
	case *txs.DisableL1ValidatorTx:
		return a.removalMessage(ctx, u.ValidationID)
	default:
		return l1Message{}, badRequest(
			"transaction is a %s; only ConvertSubnetToL1Tx, RegisterL1ValidatorTx, SetL1ValidatorWeightTx and DisableL1ValidatorTx have a P-chain Warp message",
			txKind(tx.Unsigned))
	}
}

// conversionMessage is the SubnetToL1Conversion message of a
// ConvertSubnetToL1Tx; the conversion id hashes the same data the P-chain
// executor hashes.
func conversionMessage(networkID uint32, u *txs.ConvertSubnetToL1Tx) (l1Message, error) {
	data := message.SubnetToL1ConversionData{
		SubnetID:       u.Subnet,
		ManagerChainID: u.ChainID,
		ManagerAddress: u.Address,
		Validators:     make([]message.SubnetToL1ConversionValidatorData, len(u.Validators)),
	}
	for i, v := range u.Validators {
		data.Validators[i] = message.SubnetToL1ConversionValidatorData{
			NodeID:       v.NodeID,
			BLSPublicKey: v.Signer.PublicKey,
			Weight:       v.Weight,
		}
	}
	conversionID, err := message.SubnetToL1ConversionID(data)
	if err != nil {
		return l1Message{}, fmt.Errorf("conversion id: %w", err)
	}
	p, err := message.NewSubnetToL1Conversion(conversionID)
	if err != nil {
		return l1Message{}, fmt.Errorf("conversion payload: %w", err)
	}
	msg, err := pChainMessage(networkID, p)
	if err != nil {
		return l1Message{}, err
	}
	return l1Message{msg: msg, justification: u.Subnet[:], subnetID: u.Subnet}, nil
}

// addressedPayload opens the signed Warp message carried by an L1 tx.
func addressedPayload(signedMsg []byte) (message.Payload, error) {
	m, err := warp.ParseMessage(signedMsg)
	if err != nil {
		return nil, fmt.Errorf("tx carries an invalid Warp message: %w", err)
	}
	call, err := payload.ParseAddressedCall(m.Payload)
	if err != nil {
		return nil, fmt.Errorf("tx Warp message is not an addressed call: %w", err)
	}
	p, err := message.Parse(call.Payload)
	if err != nil {
		return nil, fmt.Errorf("tx Warp message payload: %w", err)
	}
	return p, nil
}

func registerMessageOf(signedMsg []byte) (*message.RegisterL1Validator, error) {
	p, err := addressedPayload(signedMsg)
	if err != nil {
		return nil, err
	}
	reg, ok := p.(*message.RegisterL1Validator)
	if !ok {
		return nil, fmt.Errorf("tx Warp message is a %T, not a RegisterL1ValidatorMessage", p)
	}
	return reg, nil
}

func weightMessageOf(signedMsg []byte) (*message.L1ValidatorWeight, error) {
	p, err := addressedPayload(signedMsg)
	if err != nil {
		return nil, err
	}
	w, ok := p.(*message.L1ValidatorWeight)
	if !ok {
		return nil, fmt.Errorf("tx Warp message is a %T, not an L1ValidatorWeightMessage", p)
	}
	return w, nil
}

// validationOrigin finds the tx that created validationID and derives the
// L1 and the registration justification from it.
func (a *Aggregator) validationOrigin(ctx context.Context, validationID ids.ID) (subnetID ids.ID, justification []byte, err error) {
	if a.cfg.L1Txs == nil {
		return ids.Empty, nil, errors.New("no L1 tx index configured")
	}
	originID, err := a.cfg.L1Txs.ValidationTx(ctx, validationID)
	if err != nil {
		return ids.Empty, nil, fmt.Errorf("tx of L1 validation %s: %w", validationID, err)
	}
	tx, err := a.cfg.L1Txs.PChainTx(ctx, originID)
	if err != nil {
		return ids.Empty, nil, fmt.Errorf("tx %s of L1 validation %s: %w", originID, validationID, err)
	}
	var j platformvm.L1ValidatorRegistrationJustification
	switch u := tx.Unsigned.(type) {
	case *txs.ConvertSubnetToL1Tx:
		for i := range u.Validators {
			if u.Subnet.Append(uint32(i)) == validationID {
				j.Preimage = &platformvm.L1ValidatorRegistrationJustification_ConvertSubnetToL1TxData{
					ConvertSubnetToL1TxData: &platformvm.SubnetIDIndex{SubnetId: u.Subnet[:], Index: uint32(i)},
				}
				subnetID = u.Subnet
				break
			}
		}
	case *txs.RegisterL1ValidatorTx:
		reg, err := registerMessageOf(u.Message)
		if err != nil {
			return ids.Empty, nil, err
		}
		if reg.ValidationID() == validationID {
			j.Preimage = &platformvm.L1ValidatorRegistrationJustification_RegisterL1ValidatorMessage{
				RegisterL1ValidatorMessage: reg.Bytes(),
			}
			subnetID = reg.SubnetID
		}
	}
	if j.Preimage == nil {
		return ids.Empty, nil, fmt.Errorf("index names %s tx %s as the origin of L1 validation %s, but it does not create it",
			txKind(tx.Unsigned), originID, validationID)
	}
	b, err := proto.Marshal(&j)
	if err != nil {
		return ids.Empty, nil, fmt.Errorf("marshal justification: %w", err)
	}
	return subnetID, b, nil
}

func (a *Aggregator) subnetOfValidation(ctx context.Context, validationID ids.ID) (ids.ID, error) {
	subnetID, _, err := a.validationOrigin(ctx, validationID)
	return subnetID, err
}

// removalMessage is L1ValidatorRegistration(validationID, false) with its
// justification.
func (a *Aggregator) removalMessage(ctx context.Context, validationID ids.ID) (l1Message, error) {
	subnetID, justification, err := a.validationOrigin(ctx, validationID)
	if err != nil {
		return l1Message{}, err
	}
	p, err := message.NewL1ValidatorRegistration(validationID, false)
	if err != nil {
		return l1Message{}, fmt.Errorf("registration payload: %w", err)
	}
	msg, err := pChainMessage(a.cfg.NetworkID, p)
	return l1Message{msg: msg, justification: justification, subnetID: subnetID}, err
}

// messageFromJustification serves a request that has a justification but no
// message: the P-chain justifications determine their message.
//
//	32 bytes (a subnet id)                 -> SubnetToL1Conversion of that L1
//	L1ValidatorRegistrationJustification   -> L1ValidatorRegistration(validationID, false)
func (a *Aggregator) messageFromJustification(ctx context.Context, j []byte) (l1Message, error) {
	if len(j) == ids.IDLen {
		subnetID, _ := ids.ToID(j)
		if a.cfg.L1Txs == nil {
			return l1Message{}, errors.New("no L1 tx index configured")
		}
		txID, err := a.cfg.L1Txs.ConversionTx(ctx, subnetID)
		if errors.Is(err, ErrNotFound) {
			return l1Message{}, badRequest("justification names subnet %s, which was not converted to an L1; send the message to sign", subnetID)
		}
		if err != nil {
			return l1Message{}, fmt.Errorf("conversion of subnet %s: %w", subnetID, err)
		}
		tx, err := a.cfg.L1Txs.PChainTx(ctx, txID)
		if err != nil {
			return l1Message{}, fmt.Errorf("conversion tx %s: %w", txID, err)
		}
		u, ok := tx.Unsigned.(*txs.ConvertSubnetToL1Tx)
		if !ok || u.Subnet != subnetID {
			return l1Message{}, fmt.Errorf("index names %s tx %s as the conversion of subnet %s", txKind(tx.Unsigned), txID, subnetID)
		}
		return conversionMessage(a.cfg.NetworkID, u)
	}
	validationID, subnetID, ok := registrationJustification(j)
	if !ok {
		return l1Message{}, badRequest("justification alone does not determine a message (expected a subnet id or an L1ValidatorRegistrationJustification); send the message to sign")
	}
	p, err := message.NewL1ValidatorRegistration(validationID, false)
	if err != nil {
		return l1Message{}, fmt.Errorf("registration payload: %w", err)
	}
	msg, err := pChainMessage(a.cfg.NetworkID, p)
	return l1Message{msg: msg, justification: j, subnetID: subnetID}, err
}

// registrationJustification reads an L1ValidatorRegistrationJustification
// and returns the validation id and the L1 it names.
func registrationJustification(j []byte) (validationID, subnetID ids.ID, ok bool) {
	var rj platformvm.L1ValidatorRegistrationJustification
	if err := proto.Unmarshal(j, &rj); err != nil {
		return ids.Empty, ids.Empty, false
	}
	switch pre := rj.GetPreimage().(type) {
	case *platformvm.L1ValidatorRegistrationJustification_ConvertSubnetToL1TxData:
		subnetID, err := ids.ToID(pre.ConvertSubnetToL1TxData.GetSubnetId())
		if err != nil {
			return ids.Empty, ids.Empty, false
		}
		return subnetID.Append(pre.ConvertSubnetToL1TxData.GetIndex()), subnetID, true
	case *platformvm.L1ValidatorRegistrationJustification_RegisterL1ValidatorMessage:
		reg, err := message.ParseRegisterL1Validator(pre.RegisterL1ValidatorMessage)
		if err != nil {
			return ids.Empty, ids.Empty, false
		}
		return reg.ValidationID(), reg.SubnetID, true
	}
	return ids.Empty, ids.Empty, false
}

// pChainSigningSubnet picks the default signing subnet of a P-chain message:
// the L1 it is about, else the primary network.
func (a *Aggregator) pChainSigningSubnet(ctx context.Context, msg *warp.UnsignedMessage, justification []byte) (ids.ID, error) {
	call, err := payload.ParseAddressedCall(msg.Payload)
	if err != nil {
		return constants.PrimaryNetworkID, nil
	}
	p, err := message.Parse(call.Payload)
	if err != nil {
		return constants.PrimaryNetworkID, nil
	}
	var validationID ids.ID
	switch p := p.(type) {
	case *message.SubnetToL1Conversion:
		if subnetID, err := ids.ToID(justification); err == nil {
			return subnetID, nil
		}
		return constants.PrimaryNetworkID, nil
	case *message.L1ValidatorRegistration:
		if _, subnetID, ok := registrationJustification(justification); ok {
			return subnetID, nil
		}
		validationID = p.ValidationID
	case *message.L1ValidatorWeight:
		validationID = p.ValidationID
	default:
		return constants.PrimaryNetworkID, nil
	}
	subnetID, err := a.subnetOfValidation(ctx, validationID)
	if errors.Is(err, ErrNotFound) || a.cfg.L1Txs == nil {
		// Unknown validation: the P-chain will refuse it anyway; its own
		// validators are the natural default.
		return constants.PrimaryNetworkID, nil
	}
	return subnetID, err
}
