// Package icm serves the data service's ICM (Teleporter) message endpoints:
// one message by ID, the listing with chain and address filters, and the
// listing by address, newest first with keyset page tokens.
package icm

import (
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/libevm/common"

	"github.com/permafrost-dev/permafrost/internal/api"
	decode "github.com/permafrost-dev/permafrost/internal/decode/icm"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// Deps is what the handlers need.
type Deps struct {
	DB      *store.DB
	Network *api.Network
	Pager   *api.Pager
	Log     *slog.Logger
}

// Register adds the ICM routes to mux.
func Register(mux *api.Mux, d Deps) {
	h := &handlers{d: d}
	mux.Handle("GET /v1/icm/messages", api.MessageString, h.list)
	mux.Handle("GET /v1/icm/messages/{messageId}", api.MessageString, h.get)
	mux.Handle("GET /v1/icm/addresses/{address}/messages", api.MessageString, h.byAddress)
	// The older Teleporter routes, which the official SDK still calls
	// (data.teleporter.*): the same operations.
	mux.Handle("GET /v1/teleporter/messages", api.MessageString, h.list)
	mux.Handle("GET /v1/teleporter/messages/{messageId}", api.MessageString, h.get)
	mux.Handle("GET /v1/teleporter/addresses/{address}/messages", api.MessageString, h.byAddress)
}

type handlers struct{ d Deps }

// Message is the response shape of every status (PendingIcmMessage,
// DeliveredIcmMessage, DeliveredSourceNotIndexedIcmMessage): the side that is
// not indexed is absent, as are the values the index cannot know (the EVM
// chain id of a chain not indexed here, token metadata not fetched, prices).
type Message struct {
	MessageID               string                  `json:"messageId"`
	IcmContractAddress      string                  `json:"icmContractAddress"`
	SourceBlockchainID      string                  `json:"sourceBlockchainId"`
	DestinationBlockchainID string                  `json:"destinationBlockchainId"`
	SourceEvmChainID        string                  `json:"sourceEvmChainId,omitempty"`
	DestinationEvmChainID   string                  `json:"destinationEvmChainId,omitempty"`
	MessageNonce            string                  `json:"messageNonce"`
	From                    string                  `json:"from"`
	To                      string                  `json:"to"`
	Data                    string                  `json:"data"`
	MessageExecuted         bool                    `json:"messageExecuted"`
	Receipts                []Receipt               `json:"receipts"`
	ReceiptDelivered        bool                    `json:"receiptDelivered"`
	RewardDetails           *RewardDetails          `json:"rewardDetails,omitempty"`
	SourceTransaction       *SourceTransaction      `json:"sourceTransaction,omitempty"`
	DestinationTransaction  *DestinationTransaction `json:"destinationTransaction,omitempty"`
	Status                  string                  `json:"status"`
}

// Receipt is IcmReceipt.
type Receipt struct {
	ReceivedMessageNonce string `json:"receivedMessageNonce"`
	RelayerRewardAddress string `json:"relayerRewardAddress"`
}

// RewardDetails is IcmRewardDetails: the fee token and the fee amount (its
// running total). name, symbol and decimals come from the EVM indexer's token
// metadata when known; logoUri and price have no source here.
type RewardDetails struct {
	Address  string  `json:"address"`
	Name     *string `json:"name,omitempty"`
	Symbol   *string `json:"symbol,omitempty"`
	Decimals *int    `json:"decimals,omitempty"`
	ErcType  string  `json:"ercType"`
	Value    string  `json:"value"`
}

// SourceTransaction is IcmSourceTransaction; gasSpent is the transaction's gas used.
type SourceTransaction struct {
	TxHash    string `json:"txHash"`
	Timestamp int64  `json:"timestamp"`
	GasSpent  string `json:"gasSpent"`
}

// DestinationTransaction is IcmDestinationTransaction.
type DestinationTransaction struct {
	TxHash           string `json:"txHash"`
	Timestamp        int64  `json:"timestamp"`
	GasSpent         string `json:"gasSpent"`
	RewardRedeemer   string `json:"rewardRedeemer"`
	DelivererAddress string `json:"delivererAddress"`
}

// ListResponse is ListIcmMessagesResponse.
type ListResponse struct {
	NextPageToken string    `json:"nextPageToken,omitempty"`
	Messages      []Message `json:"messages"`
}

func toMessage(r *decode.Record) Message {
	m := Message{
		MessageID:               hex.EncodeToString(r.MessageID[:]),
		IcmContractAddress:      r.Contract.Hex(),
		SourceBlockchainID:      r.SourceBlockchainID.String(),
		DestinationBlockchainID: r.DestinationBlockchainID.String(),
		SourceEvmChainID:        r.SourceEVMChainID,
		DestinationEvmChainID:   r.DestinationEVMChainID,
		MessageNonce:            r.Nonce,
		From:                    r.From.Hex(),
		To:                      r.To.Hex(),
		Data:                    "0x" + hex.EncodeToString(r.Data),
		MessageExecuted:         r.Executed,
		Receipts:                make([]Receipt, len(r.Receipts)),
		ReceiptDelivered:        r.ReceiptDelivered,
		Status:                  r.Status(),
	}
	for i, rc := range r.Receipts {
		m.Receipts[i] = Receipt{ReceivedMessageNonce: rc.ReceivedMessageNonce, RelayerRewardAddress: rc.RelayerRewardAddress.Hex()}
	}
	if f := r.Fee; f != nil {
		m.RewardDetails = &RewardDetails{Address: f.Token.Hex(), Name: f.Name, Symbol: f.Symbol, Decimals: f.Decimals,
			ErcType: decode.ERC20, Value: f.Amount}
	}
	if s := r.Source; s != nil {
		m.SourceTransaction = &SourceTransaction{TxHash: s.TxHash.Hex(), Timestamp: s.Time, GasSpent: strconv.FormatInt(s.GasUsed, 10)}
	}
	if d := r.Destination; d != nil {
		m.DestinationTransaction = &DestinationTransaction{TxHash: d.TxHash.Hex(), Timestamp: d.Time,
			GasSpent: strconv.FormatInt(d.GasUsed, 10), RewardRedeemer: d.RewardRedeemer.Hex(), DelivererAddress: d.Deliverer.Hex()}
	}
	return m
}

func (h *handlers) get(r *http.Request) (any, error) {
	raw := r.PathValue("messageId")
	s := strings.TrimPrefix(strings.TrimPrefix(raw, "0x"), "0X")
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != common.HashLength {
		return nil, api.BadRequest(fmt.Sprintf("messageId must be a 32-byte hex string (64 hex digits, optional 0x prefix), got %q", short(raw)))
	}
	rec, err := decode.Get(r.Context(), h.d.DB, common.BytesToHash(b))
	if errors.Is(err, store.ErrNotFound) {
		return nil, api.NotFound("ICM message %s not found", s)
	}
	if err != nil {
		return nil, err
	}
	return toMessage(rec), nil
}

func (h *handlers) list(r *http.Request) (any, error) {
	p := api.NewParams(r)
	q := decode.Query{}
	none := false
	for _, c := range []struct {
		name string
		dst  **ids.ID
	}{
		{"sourceBlockchainId", &q.SourceBlockchainID},
		{"destinationBlockchainId", &q.DestinationBlockchainID},
		{"blockchainId", &q.AnyBlockchainID},
	} {
		id, unknown := h.chainParam(p, c.name)
		*c.dst = id
		none = none || unknown
	}
	q.From = addressParam(p, "from")
	q.To = addressParam(p, "to")
	return h.page(r, p, "icm.messages", api.FilterKey(p.Values()), q, none)
}

func (h *handlers) byAddress(r *http.Request) (any, error) {
	p := api.NewParams(r)
	raw := r.PathValue("address")
	var q decode.Query
	var key string
	if common.IsHexAddress(raw) {
		a := common.HexToAddress(raw)
		q.Address = &a
		key = "address=" + strings.ToLower(a.Hex())
	} else {
		p.Fail("address must be an EVM address (0x followed by 40 hex digits), got %q", short(raw))
	}
	return h.page(r, p, "icm.addressMessages", api.FilterKey(p.Values(), key), q, false)
}

// page applies the parameters every listing shares (network, pageSize,
// pageToken) and reads one page. none short-cuts to an empty page when a
// filter names something this index cannot hold.
func (h *handlers) page(r *http.Request, p *api.Params, route, filter string, q decode.Query, none bool) (any, error) {
	q.Limit = p.PageSize(10, 1, 100)
	if n := p.String("network"); n != "" {
		var e *api.Error
		if err := h.d.Network.CheckNetwork(n); errors.As(err, &e) {
			if e.Status == http.StatusBadRequest {
				p.Fail("%s", strings.Join(e.Messages, "; "))
			} else {
				// Another network: it has no messages in this index.
				none = true
			}
		}
	}
	if tok := p.String("pageToken"); tok != "" {
		var c decode.Cursor
		var e *api.Error
		if err := h.d.Pager.Decode(tok, route, filter, &c); errors.As(err, &e) {
			p.Fail("%s", strings.Join(e.Messages, "; "))
		} else if err != nil {
			return nil, err
		} else {
			q.After = &c
		}
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	resp := ListResponse{Messages: []Message{}}
	if none {
		return resp, nil
	}
	recs, next, err := decode.List(r.Context(), h.d.DB, q)
	if err != nil {
		return nil, err
	}
	for i := range recs {
		resp.Messages = append(resp.Messages, toMessage(&recs[i]))
	}
	if next != nil {
		resp.NextPageToken = h.d.Pager.Encode(route, filter, next)
	}
	return resp, nil
}

// chainParam resolves a blockchain filter: an indexed EVM chain by its EVM
// chain id, blockchain id or alias, or any cb58 blockchain ID (messages from
// chains that are not indexed are still known by their blockchain ID).
// unknown is true for an EVM chain id this server does not index: no
// message can be matched to it.
func (h *handlers) chainParam(p *api.Params, name string) (id *ids.ID, unknown bool) {
	v := p.String(name)
	if v == "" {
		return nil, false
	}
	if c, err := h.d.Network.EVMChain(v); err == nil {
		if got, err := ids.FromString(c.BlockchainID); err == nil {
			return &got, false
		}
	}
	if got, err := ids.FromString(v); err == nil {
		return &got, false
	}
	if isDecimal(v) {
		return nil, true
	}
	p.Fail("%s must be a cb58 blockchain id or an EVM chain id, got %q", name, short(v))
	return nil, false
}

func addressParam(p *api.Params, name string) *common.Address {
	v := p.String(name)
	if v == "" {
		return nil
	}
	if !common.IsHexAddress(v) {
		p.Fail("%s must be an EVM address (0x followed by 40 hex digits), got %q", name, short(v))
		return nil
	}
	a := common.HexToAddress(v)
	return &a
}

func isDecimal(s string) bool {
	if len(s) == 0 || len(s) > 78 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// short bounds echoed input in error messages.
func short(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}
