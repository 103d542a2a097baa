// Package webhooks holds the webhooks of the data service: their
// registrations (one API key's webhooks, what each watches, the key's
// signing secret), validated as the published document defines the
// requests (its Webhooks tag and the *ActivityRequest schemas).
//
// Limits the document leaves to "the Data API plan", written once here and
// in docs/operations.md: MaxKeysPerRequest keys per create or addresses
// change, MaxKeysPerWebhook keys per webhook, MaxWebhooksPerOwner webhooks
// per API key.
package webhooks

import (
	"encoding/json"
	"errors"
)

// Event types (the eventType enum of the three request schemas).
const (
	EventAddressActivity        = "address_activity"
	EventPrimaryAddressActivity = "primary_network_address_activity"
	EventValidatorActivity      = "validator_activity"
)

// Statuses (WebhookStatusType).
const (
	StatusActive   = "active"
	StatusInactive = "inactive"
)

// Limits.
const (
	MaxKeysPerRequest   = 1000
	MaxKeysPerWebhook   = 100000
	MaxWebhooksPerOwner = 10000
	MaxNameLength       = 256
	MaxDescription      = 2048
	MaxURLLength        = 2048
	MaxEventSignatures  = 100
	MaxFilterIDs        = 100
)

// Sub-event enums.
var (
	// PrimarySubEvents is PrimaryNetworkAddressActivitySubEventType.
	PrimarySubEvents = []string{"balance_change", "balance_threshold", "reward_distribution"}
	// ValidatorSubEvents is ValidatorActivitySubEvents' item enum.
	ValidatorSubEvents = []string{"validator_stake", "delegator_stake", "reward_distribution",
		"l1_validator_balance_increased", "l1_validator_disabled", "l1_validator_removed", "l1_validator_balance_threshold"}
	// BalanceTypes is CommonBalanceType.
	BalanceTypes = []string{"unlockedUnstaked", "unlockedStaked", "lockedPlatform", "lockedStakeable", "lockedStaked",
		"pendingStaked", "unlocked", "locked", "atomicMemoryUnlocked", "atomicMemoryLocked"}
)

// ErrNotFound is a webhook that does not exist or belongs to another key.
var ErrNotFound = errors.New("webhook not found")

// Webhook is one stored registration. Keys (addresses, node or subnet ids)
// are stored apart (webhook_keys) and loaded only where a response shows
// them.
type Webhook struct {
	ID, Owner, EventType, URL, ChainID, Network, Name, Description, Status string
	// ChainKey is the indexed chain whose blocks raise the webhook's events
	// (P for validator activity); StartHeight its indexed height when the
	// webhook was created: events come from later blocks only, so neither
	// catching up nor a reindex sends a webhook the history before it.
	ChainKey    string
	StartHeight int64
	// Metadata is the type's metadata without its keys (JSON of
	// EVMMetadata, PrimaryMetadata or ValidatorMetadata).
	Metadata           json.RawMessage
	IncludeInternalTxs bool
	IncludeLogs        bool
	CreatedAt          int64 // unix ms
	UpdatedAt          int64
	Failures           int
	InactiveReason     string
	Keys               []string
}

// EVMMetadata is AddressActivityMetadata.
type EVMMetadata struct {
	EventSignatures []string `json:"eventSignatures,omitempty"`
	Addresses       []string `json:"addresses"`
}

// PrimaryMetadata is PrimaryNetworkAddressActivityMetadata.
type PrimaryMetadata struct {
	EventSignatures        []string                `json:"eventSignatures,omitempty"`
	KeyType                string                  `json:"keyType"`
	Keys                   []string                `json:"keys"`
	SubEvents              *PrimarySubEventsSet    `json:"subEvents"`
	BalanceThresholdFilter *BalanceThresholdFilter `json:"balanceThresholdFilter,omitempty"`
}

// PrimarySubEventsSet is PrimaryNetworkAddressActivitySubEvents.
type PrimarySubEventsSet struct {
	AddressActivitySubEvents []string `json:"addressActivitySubEvents"`
}

// BalanceThresholdFilter is PrimaryNetworkBalanceThresholdFilter.
type BalanceThresholdFilter struct {
	BalanceType      string `json:"balanceType"`
	BalanceThreshold string `json:"balanceThreshold"`
}

// ValidatorMetadata is ValidatorActivityMetadata.
type ValidatorMetadata struct {
	EventSignatures                []string               `json:"eventSignatures,omitempty"`
	KeyType                        string                 `json:"keyType"`
	Keys                           []string               `json:"keys"`
	SubEvents                      *ValidatorSubEventsSet `json:"subEvents"`
	NodeIDs                        []string               `json:"nodeIds,omitempty"`
	SubnetIDs                      []string               `json:"subnetIds,omitempty"`
	L1ValidatorFeeBalanceThreshold string                 `json:"l1ValidatorFeeBalanceThreshold,omitempty"`
}

// ValidatorSubEventsSet is ValidatorActivitySubEvents.
type ValidatorSubEventsSet struct {
	ValidatorActivitySubEvents []string `json:"validatorActivitySubEvents"`
}

// Response is a webhook as the API shows it: EVMAddressActivityResponse,
// PrimaryNetworkAddressActivityResponse or ValidatorActivityResponse (the
// include* flags exist on EVM webhooks only).
type Response struct {
	ID                 string `json:"id"`
	URL                string `json:"url"`
	ChainID            string `json:"chainId"`
	Status             string `json:"status"`
	CreatedAt          int64  `json:"createdAt"`
	Name               string `json:"name"`
	Description        string `json:"description"`
	EventType          string `json:"eventType"`
	Metadata           any    `json:"metadata"`
	IncludeInternalTxs *bool  `json:"includeInternalTxs,omitempty"`
	IncludeLogs        *bool  `json:"includeLogs,omitempty"`
}

// Response renders w; its Keys must be loaded.
func (w *Webhook) Response() (Response, error) {
	r := Response{ID: w.ID, URL: w.URL, ChainID: w.ChainID, Status: w.Status, CreatedAt: w.CreatedAt,
		Name: w.Name, Description: w.Description, EventType: w.EventType}
	keys := w.Keys
	if keys == nil {
		keys = []string{}
	}
	switch w.EventType {
	case EventAddressActivity:
		var m EVMMetadata
		if err := json.Unmarshal(w.Metadata, &m); err != nil {
			return Response{}, err
		}
		m.Addresses = keys
		r.Metadata = m
		r.IncludeInternalTxs, r.IncludeLogs = &w.IncludeInternalTxs, &w.IncludeLogs
	case EventPrimaryAddressActivity:
		var m PrimaryMetadata
		if err := json.Unmarshal(w.Metadata, &m); err != nil {
			return Response{}, err
		}
		m.Keys = keys
		r.Metadata = m
	default:
		var m ValidatorMetadata
		if err := json.Unmarshal(w.Metadata, &m); err != nil {
			return Response{}, err
		}
		m.Keys = keys
		r.Metadata = m
	}
	return r, nil
}

// ListResponse is ListWebhooksResponse.
type ListResponse struct {
	NextPageToken string     `json:"nextPageToken,omitempty"`
	Webhooks      []Response `json:"webhooks"`
}

// AddressesResponse is ListWebhookAddressesResponse.
type AddressesResponse struct {
	NextPageToken  string   `json:"nextPageToken,omitempty"`
	Addresses      []string `json:"addresses"`
	TotalAddresses int64    `json:"totalAddresses"`
}

// SecretResponse is SharedSecretsResponse.
type SecretResponse struct {
	Secret string `json:"secret"`
}
