package warp

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp"
)

const (
	// DefaultQuorumPercentage is used when the request gives none (or 0).
	DefaultQuorumPercentage = 67

	// MaxRequestBodyBytes bounds the JSON body DecodeRequest reads. A Warp
	// message has to fit in one p2p message (2 MiB) and travels hex-encoded.
	MaxRequestBodyBytes = 4 << 20

	// maxPayloadBytes bounds message + justification: both go into one
	// AppRequest, which the peers cap at 2 MiB.
	maxPayloadBytes = 1 << 20
)

// Request is the body of POST .../aggregateSignatures (spec 4.2). Numbers are
// kept raw so that validation can tell 67, 67.5, "67" and null apart.
type Request struct {
	// NetworkID is the network of the {network} path element, resolved by the
	// HTTP layer; 0 skips the check.
	NetworkID uint32 `json:"-"`

	Message                string          `json:"message"`
	Justification          string          `json:"justification"`
	SigningSubnetID        string          `json:"signingSubnetId"`
	QuorumPercentage       json.RawMessage `json:"quorumPercentage"`
	QuorumPercentageBuffer json.RawMessage `json:"quorumPercentageBuffer"`
	PChainHeight           json.RawMessage `json:"pChainHeight"`
}

// DecodeRequest reads a JSON request body (at most MaxRequestBodyBytes).
// Malformed bodies give a *RequestError.
func DecodeRequest(r io.Reader) (Request, error) {
	body, err := io.ReadAll(io.LimitReader(r, MaxRequestBodyBytes+1))
	if err != nil {
		return Request{}, fmt.Errorf("read request body: %w", err)
	}
	if len(body) > MaxRequestBodyBytes {
		return Request{}, badRequest("request body is larger than %d bytes", MaxRequestBodyBytes)
	}
	var req Request
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&req); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return Request{}, badRequest("field %s must be a %s", typeErr.Field, typeErr.Type)
		}
		return Request{}, badRequest("request body is not a valid JSON object: %v", err)
	}
	if dec.More() {
		return Request{}, badRequest("request body has data after the JSON object")
	}
	return req, nil
}

// parsedRequest is a Request after validation.
type parsedRequest struct {
	// msg is nil when only a justification was given.
	msg              *warp.UnsignedMessage
	justification    []byte
	signingSubnet    ids.ID
	hasSigningSubnet bool
	quorum, buffer   uint64
	pChainHeight     uint64 // 0 = proposed height
}

func parseRequest(req Request) (parsedRequest, error) {
	var p parsedRequest
	msgBytes, err := parseHex("message", req.Message)
	if err != nil {
		return p, err
	}
	if p.justification, err = parseHex("justification", req.Justification); err != nil {
		return p, err
	}
	if len(msgBytes) == 0 && len(p.justification) == 0 {
		return p, badRequest("one of message or justification is required")
	}
	if len(msgBytes)+len(p.justification) > maxPayloadBytes {
		return p, badRequest("message and justification together exceed %d bytes", maxPayloadBytes)
	}
	if len(msgBytes) > 0 {
		if p.msg, err = warp.ParseUnsignedMessage(msgBytes); err != nil {
			return p, badRequest("message is not an unsigned Warp message: %v", err)
		}
	}
	if strings.TrimSpace(req.SigningSubnetID) != "" {
		if p.signingSubnet, err = parseID(req.SigningSubnetID); err != nil {
			return p, badRequest("signingSubnetId: %v", err)
		}
		p.hasSigningSubnet = true
	}

	quorum, ok, err := parseJSONUint("quorumPercentage", req.QuorumPercentage, 100)
	if err != nil {
		return p, err
	}
	// 0 means "not given", as in the ACP-118 reference aggregator: a zero
	// quorum would make an empty signature "valid".
	if !ok || quorum == 0 {
		quorum = DefaultQuorumPercentage
	}
	buffer, _, err := parseJSONUint("quorumPercentageBuffer", req.QuorumPercentageBuffer, 100)
	if err != nil {
		return p, err
	}
	if quorum+buffer > 100 {
		return p, badRequest("quorumPercentage + quorumPercentageBuffer must be at most 100, got %d + %d", quorum, buffer)
	}
	p.quorum, p.buffer = quorum, buffer
	if p.pChainHeight, _, err = parseJSONUint("pChainHeight", req.PChainHeight, 1<<63-1); err != nil {
		return p, err
	}
	return p, nil
}

// parseHex decodes hex with an optional 0x prefix; "" gives nil.
func parseHex(field, s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if len(s) >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		s = s[2:]
	}
	if s == "" {
		return nil, nil
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, badRequest("%s is not valid hex: %v", field, err)
	}
	return b, nil
}

// parseID reads a 32-byte id given as cb58 (with checksum, as avalanchego
// prints ids) or as hex (64 digits, optional 0x).
func parseID(s string) (ids.ID, error) {
	s = strings.TrimSpace(s)
	hexDigits := strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	if len(hexDigits) == 2*ids.IDLen && isHex(hexDigits) {
		b, err := hex.DecodeString(hexDigits)
		if err != nil {
			return ids.Empty, err
		}
		return ids.ToID(b)
	}
	if len(s) != len(hexDigits) {
		return ids.Empty, fmt.Errorf("%q is not a 32-byte hex id", s)
	}
	id, err := ids.FromString(s)
	if err != nil {
		return ids.Empty, fmt.Errorf("%q is neither a cb58 nor a hex id", s)
	}
	return id, nil
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// jsonInteger matches JSON numbers that are whole: digits with an optional
// all-zero fraction. Exponent forms are rejected rather than evaluated, so a
// hostile 1e999999999 costs nothing.
var jsonInteger = regexp.MustCompile(`^(0|[1-9][0-9]*)(\.0+)?$`)

// parseJSONUint validates an optional JSON number that must be an integer in
// [0, max]. It reports whether a value (not null) was present.
func parseJSONUint(field string, raw json.RawMessage, max uint64) (uint64, bool, error) {
	tok := strings.TrimSpace(string(raw))
	if tok == "" || tok == "null" {
		return 0, false, nil
	}
	if tok[0] == '"' || !json.Valid([]byte(tok)) || !strings.ContainsAny(tok[:1], "-0123456789") {
		return 0, false, badRequest("%s must be a number", field)
	}
	if tok[0] == '-' {
		return 0, false, badRequest("%s must be an integer between 0 and %d", field, max)
	}
	m := jsonInteger.FindStringSubmatch(tok)
	if m == nil {
		return 0, false, badRequest("%s must be an integer, got %s", field, tok)
	}
	v, err := strconv.ParseUint(m[1], 10, 64)
	if err != nil || v > max {
		return 0, false, badRequest("%s must be an integer between 0 and %d, got %s", field, max, m[1])
	}
	return v, true, nil
}
