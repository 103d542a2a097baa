package webhooks

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/ava-labs/avalanchego/utils/formatting/address"

	"github.com/permafrost-dev/permafrost/internal/api"
	"github.com/permafrost-dev/permafrost/internal/ssrf"
)

// CreateRequest is the body of POST /v1/webhooks: the union of
// EVMAddressActivityRequest, PrimaryNetworkAddressActivityRequest and
// ValidatorActivityRequest. Fields of another event type are refused by
// Validate; metadata is decoded by the type's own schema, strictly.
type CreateRequest struct {
	EventType          *string         `json:"eventType"`
	URL                *string         `json:"url"`
	Name               *string         `json:"name"`
	Description        *string         `json:"description"`
	ChainID            *string         `json:"chainId"`
	Network            *string         `json:"network"`
	Metadata           json.RawMessage `json:"metadata"`
	IncludeInternalTxs *bool           `json:"includeInternalTxs"`
	IncludeLogs        *bool           `json:"includeLogs"`
}

// UpdateRequest is UpdateWebhookRequest (PATCH /v1/webhooks/{id}).
type UpdateRequest struct {
	Name               *string `json:"name"`
	Description        *string `json:"description"`
	URL                *string `json:"url"`
	Status             *string `json:"status"`
	IncludeInternalTxs *bool   `json:"includeInternalTxs"`
	IncludeLogs        *bool   `json:"includeLogs"`
}

// AddressesRequest is AddressesChangeRequest.
type AddressesRequest struct {
	Addresses []string `json:"addresses"`
}

// URLPolicy is the SSRF policy on webhook URLs: the NFT fetcher's
// (internal/enrich), with its own operator switches
// (--webhook-allow-loopback, --webhook-allow-private); internal/ssrf holds it.
type URLPolicy struct {
	AllowLoopback bool
	AllowPrivate  bool
}

// Check refuses a URL that is not absolute http(s), carries credentials or
// a fragment, or names a host the policy forbids. Literal addresses and
// "localhost" are judged here; other names are judged again on every
// delivery, after resolution.
func (p URLPolicy) Check(raw string) error {
	if raw == "" {
		return errors.New("url is required")
	}
	if len(raw) > MaxURLLength {
		return fmt.Errorf("url is longer than %d characters", MaxURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("url %s is not a valid URL", quote(raw))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("url %s must be an http or https URL", quote(raw))
	}
	if u.Host == "" || u.Hostname() == "" {
		return fmt.Errorf("url %s has no host", quote(raw))
	}
	if u.User != nil {
		return fmt.Errorf("url %s must not carry credentials", quote(raw))
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return fmt.Errorf("url %s must not have a fragment", quote(raw))
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	ip, err := netip.ParseAddr(host)
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		ip, err = netip.MustParseAddr("127.0.0.1"), nil
	}
	if err == nil {
		if err := p.CheckAddr(ip); err != nil {
			return fmt.Errorf("url %s: %w", quote(raw), err)
		}
	}
	return nil
}

// CheckAddr applies the policy to one resolved address, naming the flag
// that would allow it.
func (p URLPolicy) CheckAddr(ip netip.Addr) error {
	err := ssrf.Check(ip, p.AllowLoopback, p.AllowPrivate)
	if err == nil {
		return nil
	}
	switch ip = ip.Unmap(); {
	case ip.IsLoopback():
		return fmt.Errorf("%w (the operator allows loopback with --webhook-allow-loopback)", err)
	case ip.IsPrivate() || ip.IsLinkLocalUnicast() || strings.Contains(err.Error(), "private") || strings.Contains(err.Error(), "metadata"):
		return fmt.Errorf("%w (the operator allows private addresses with --webhook-allow-private)", err)
	}
	return err
}

// Validate checks a create request against the document's schema of its
// event type and this index (chains, network, address formats). Every
// problem is reported at once, in a 400.
func (req *CreateRequest) Validate(n *api.Network, p URLPolicy) (*Webhook, error) {
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	w := &Webhook{Status: StatusActive}
	if req.EventType == nil || *req.EventType == "" {
		return nil, api.BadRequest("eventType is required: one of address_activity, primary_network_address_activity, validator_activity")
	}
	w.EventType = *req.EventType
	switch w.EventType {
	case EventAddressActivity, EventPrimaryAddressActivity, EventValidatorActivity:
	default:
		return nil, api.BadRequest(fmt.Sprintf("eventType must be one of address_activity, primary_network_address_activity, validator_activity, got %s", quote(w.EventType)))
	}
	if req.URL == nil {
		fail("url is required")
	} else if err := p.Check(*req.URL); err != nil {
		fail("%v", err)
	} else {
		w.URL = *req.URL
	}
	w.Name, w.Description = deref(req.Name), deref(req.Description)
	checkText(fail, "name", w.Name, MaxNameLength)
	checkText(fail, "description", w.Description, MaxDescription)
	if len(req.Metadata) == 0 || string(req.Metadata) == "null" {
		fail("metadata is required")
	}
	evm := w.EventType == EventAddressActivity
	if !evm {
		if req.IncludeInternalTxs != nil {
			fail("includeInternalTxs is a field of address_activity webhooks only")
		}
		if req.IncludeLogs != nil {
			fail("includeLogs is a field of address_activity webhooks only")
		}
	}
	switch w.EventType {
	case EventAddressActivity:
		if req.Network != nil {
			fail("network is not a field of address_activity webhooks (chainId names the EVM chain)")
		}
		if req.ChainID == nil || *req.ChainID == "" {
			fail("chainId is required: the EVM chain id of an indexed chain")
		} else if c, err := n.EVMChain(*req.ChainID); err != nil {
			fail("chainId %s is not an EVM chain indexed by this server", quote(*req.ChainID))
		} else {
			w.ChainID, w.ChainKey = c.EVMChainID, c.Key
		}
		w.IncludeInternalTxs, w.IncludeLogs = deref(req.IncludeInternalTxs), deref(req.IncludeLogs)
		if len(errs) == 0 {
			var m EVMMetadata
			if err := decodeMetadata(req.Metadata, &m); err != nil {
				return nil, err
			}
			if m.Addresses == nil {
				fail("metadata.addresses is required")
			} else if w.Keys, errs = evmAddresses("metadata.addresses", m.Addresses, errs); len(w.Keys) == 0 && len(errs) == 0 {
				fail("metadata.addresses must name at least one address")
			}
			m.EventSignatures, errs = eventSignatures(m.EventSignatures, errs)
			m.Addresses = nil
			w.Metadata, _ = json.Marshal(m)
		}
	case EventPrimaryAddressActivity:
		checkNetwork(fail, n, req.Network, w)
		if req.ChainID == nil || *req.ChainID == "" {
			fail("chainId is required: the blockchain id (or p-chain, x-chain, c-chain) of a primary-network chain")
		} else if c, err := n.Blockchain(*req.ChainID); err != nil {
			fail("chainId %s is not a primary-network chain of this network (P, X or C blockchain id)", quote(*req.ChainID))
		} else {
			w.ChainID, w.ChainKey = c.BlockchainID, c.Key
		}
		if len(errs) == 0 {
			var m PrimaryMetadata
			if err := decodeMetadata(req.Metadata, &m); err != nil {
				return nil, err
			}
			if m.KeyType != "addresses" {
				fail("metadata.keyType must be addresses, got %s", quote(m.KeyType))
			}
			if m.Keys == nil {
				fail("metadata.keys is required")
			} else if w.Keys, errs = primaryAddresses(n.HRP, "metadata.keys", m.Keys, errs); len(w.Keys) == 0 && len(errs) == 0 {
				fail("metadata.keys must name at least one address")
			}
			if m.SubEvents == nil || m.SubEvents.AddressActivitySubEvents == nil {
				fail("metadata.subEvents.addressActivitySubEvents is required: some of %s", strings.Join(PrimarySubEvents, ", "))
			} else {
				m.SubEvents.AddressActivitySubEvents, errs = enumSet("metadata.subEvents.addressActivitySubEvents", m.SubEvents.AddressActivitySubEvents, PrimarySubEvents, errs)
			}
			threshold := m.SubEvents != nil && slices.Contains(m.SubEvents.AddressActivitySubEvents, "balance_threshold")
			if f := m.BalanceThresholdFilter; f != nil {
				if !slices.Contains(BalanceTypes, f.BalanceType) {
					fail("metadata.balanceThresholdFilter.balanceType must be one of %s, got %s", strings.Join(BalanceTypes, ", "), quote(f.BalanceType))
				}
				if !isAmount(f.BalanceThreshold) {
					fail("metadata.balanceThresholdFilter.balanceThreshold must be a whole number of nAVAX, got %s", quote(f.BalanceThreshold))
				}
			} else if threshold {
				fail("metadata.balanceThresholdFilter is required with the balance_threshold sub-event")
			}
			m.EventSignatures, errs = eventSignatures(m.EventSignatures, errs)
			m.Keys = nil
			w.Metadata, _ = json.Marshal(m)
		}
	case EventValidatorActivity:
		if req.ChainID != nil {
			fail("chainId is not a field of validator_activity webhooks")
		}
		checkNetwork(fail, n, req.Network, w)
		w.ChainKey = "P"
		if len(errs) == 0 {
			var m ValidatorMetadata
			if err := decodeMetadata(req.Metadata, &m); err != nil {
				return nil, err
			}
			switch {
			case m.KeyType != "nodeId" && m.KeyType != "subnetId":
				fail("metadata.keyType must be nodeId or subnetId, got %s", quote(m.KeyType))
			case len(m.Keys) != 1:
				fail("metadata.keys must hold exactly one %s (validator_activity webhooks watch a single key)", m.KeyType)
			case m.KeyType == "nodeId":
				if id, err := api.ParseNodeID(m.Keys[0]); err != nil {
					fail("metadata.keys: %v", err)
				} else {
					w.Keys = []string{id.String()}
				}
			default:
				if id, err := api.ParseCB58ID(m.Keys[0]); err != nil {
					fail("metadata.keys: %v", err)
				} else {
					w.Keys = []string{id.String()}
				}
			}
			if m.SubEvents == nil || m.SubEvents.ValidatorActivitySubEvents == nil {
				fail("metadata.subEvents.validatorActivitySubEvents is required: some of %s", strings.Join(ValidatorSubEvents, ", "))
			} else {
				m.SubEvents.ValidatorActivitySubEvents, errs = enumSet("metadata.subEvents.validatorActivitySubEvents", m.SubEvents.ValidatorActivitySubEvents, ValidatorSubEvents, errs)
			}
			if len(m.NodeIDs) > MaxFilterIDs || len(m.SubnetIDs) > MaxFilterIDs {
				fail("metadata.nodeIds and metadata.subnetIds hold at most %d ids each", MaxFilterIDs)
			} else {
				for i, s := range m.NodeIDs {
					if id, err := api.ParseNodeID(s); err != nil {
						fail("metadata.nodeIds: %v", err)
					} else {
						m.NodeIDs[i] = id.String()
					}
				}
				for i, s := range m.SubnetIDs {
					if id, err := api.ParseCB58ID(s); err != nil {
						fail("metadata.subnetIds: %v", err)
					} else {
						m.SubnetIDs[i] = id.String()
					}
				}
			}
			if m.L1ValidatorFeeBalanceThreshold != "" && !isAmount(m.L1ValidatorFeeBalanceThreshold) {
				fail("metadata.l1ValidatorFeeBalanceThreshold must be a whole number of nAVAX, got %s", quote(m.L1ValidatorFeeBalanceThreshold))
			}
			m.EventSignatures, errs = eventSignatures(m.EventSignatures, errs)
			m.Keys = nil
			w.Metadata, _ = json.Marshal(m)
		}
	}
	if len(errs) > 0 {
		return nil, api.BadRequest(errs...)
	}
	return w, nil
}

// Validate checks a PATCH against the webhook it changes.
func (req *UpdateRequest) Validate(w *Webhook, p URLPolicy) error {
	var errs []string
	if req.URL != nil {
		if err := p.Check(*req.URL); err != nil {
			errs = append(errs, err.Error())
		}
	}
	fail := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if req.Name != nil {
		checkText(fail, "name", *req.Name, MaxNameLength)
	}
	if req.Description != nil {
		checkText(fail, "description", *req.Description, MaxDescription)
	}
	if req.Status != nil && *req.Status != StatusActive && *req.Status != StatusInactive {
		fail("status must be active or inactive, got %s", quote(*req.Status))
	}
	if w.EventType != EventAddressActivity && (req.IncludeInternalTxs != nil || req.IncludeLogs != nil) {
		fail("includeInternalTxs and includeLogs are fields of address_activity webhooks only (this one is %s)", w.EventType)
	}
	if len(errs) > 0 {
		return api.BadRequest(errs...)
	}
	return nil
}

// Validate checks an addresses change of an EVM webhook.
func (req *AddressesRequest) Validate() ([]string, error) {
	if req.Addresses == nil {
		return nil, api.BadRequest("addresses is required")
	}
	out, errs := evmAddresses("addresses", req.Addresses, nil)
	if len(errs) > 0 {
		return nil, api.BadRequest(errs...)
	}
	if len(out) == 0 {
		return nil, api.BadRequest("addresses must name at least one address")
	}
	return out, nil
}

func decodeMetadata(raw json.RawMessage, v any) error {
	if err := api.DecodeJSON(raw, v); err != nil {
		var e *api.Error
		if errors.As(err, &e) {
			msgs := make([]string, len(e.Messages))
			for i, m := range e.Messages {
				msgs[i] = "metadata: " + strings.Replace(m, "the request body", "metadata", 1)
			}
			return api.BadRequest(msgs...)
		}
		return err
	}
	return nil
}

func checkNetwork(fail func(string, ...any), n *api.Network, network *string, w *Webhook) {
	if network == nil || *network == "" {
		fail("network is required: mainnet or fuji")
		return
	}
	if *network != "mainnet" && *network != "fuji" {
		fail("network must be mainnet or fuji, got %s", quote(*network))
		return
	}
	if err := n.CheckNetwork(*network); err != nil {
		fail("network %s is not the network this server indexes (%s)", *network, n.Name)
		return
	}
	w.Network = *network
}

func checkText(fail func(string, ...any), name, s string, max int) {
	if !utf8.ValidString(s) {
		fail("%s is not valid UTF-8", name)
	} else if utf8.RuneCountInString(s) > max {
		fail("%s is longer than %d characters", name, max)
	}
}

// evmAddresses normalises addresses to lower-case 0x hex, deduplicated in
// order.
func evmAddresses(field string, in []string, errs []string) ([]string, []string) {
	if len(in) > MaxKeysPerRequest {
		return nil, append(errs, fmt.Sprintf("%s holds %d addresses: at most %d per request", field, len(in), MaxKeysPerRequest))
	}
	out := make([]string, 0, len(in))
	seen := map[string]bool{}
	for _, s := range in {
		a, err := api.ParseEVMAddress(s)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", field, err))
			continue
		}
		k := strings.ToLower(a.Hex())
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out, errs
}

// primaryAddresses normalises bech32 addresses of this network to their
// form without chain prefix, deduplicated in order.
func primaryAddresses(hrp, field string, in []string, errs []string) ([]string, []string) {
	if len(in) > MaxKeysPerRequest {
		return nil, append(errs, fmt.Sprintf("%s holds %d addresses: at most %d per request", field, len(in), MaxKeysPerRequest))
	}
	out := make([]string, 0, len(in))
	seen := map[string]bool{}
	for _, s := range in {
		_, b, err := api.ParseBech32Address(hrp, s)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", field, err))
			continue
		}
		k, err := address.FormatBech32(hrp, b[:])
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", field, err))
			continue
		}
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out, errs
}

// eventSignatures normalises topic-0 hashes (lower-case 0x hex).
func eventSignatures(in []string, errs []string) ([]string, []string) {
	if len(in) > MaxEventSignatures {
		return nil, append(errs, fmt.Sprintf("metadata.eventSignatures holds at most %d signatures", MaxEventSignatures))
	}
	var out []string
	for _, s := range in {
		h, err := api.ParseHash(s)
		if err != nil {
			errs = append(errs, fmt.Sprintf("metadata.eventSignatures: %v", err))
			continue
		}
		if k := strings.ToLower(h.Hex()); !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out, errs
}

func enumSet(field string, in, allowed []string, errs []string) ([]string, []string) {
	if len(in) == 0 {
		return nil, append(errs, fmt.Sprintf("%s must name at least one of %s", field, strings.Join(allowed, ", ")))
	}
	var out []string
	for _, s := range in {
		if !slices.Contains(allowed, s) {
			errs = append(errs, fmt.Sprintf("%s: %s is not one of %s", field, quote(s), strings.Join(allowed, ", ")))
		} else if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, errs
}

// isAmount accepts a non-negative whole number that fits 64 bits (nAVAX).
func isAmount(s string) bool {
	if s == "" || len(s) > 20 || strings.TrimLeft(s, "0123456789") != "" {
		return false
	}
	v, ok := new(big.Int).SetString(s, 10)
	return ok && v.IsUint64()
}

func deref[T any](p *T) T {
	if p == nil {
		var z T
		return z
	}
	return *p
}

func quote(s string) string {
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return fmt.Sprintf("%q", s)
}
