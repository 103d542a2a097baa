// Package source holds the JSON-RPC clients the ingester reads chains with:
// Avalanche for an avalanchego node (info, platform, avm, avax APIs) and EVM
// for any EVM JSON-RPC endpoint (C-chain, L1s). Both retry transient failures
// with the shared Retry policy and return the node's JSON-RPC errors as
// *RPCError, so callers can tell "not found" or "above the tip" from a
// transport failure.
package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// RPCError is a JSON-RPC error object answered by the node. It is a
// definitive answer and is never retried.
type RPCError struct {
	Code    int
	Message string
	// Data is the error's "data" member; nil when absent or null.
	Data json.RawMessage
}

func (e *RPCError) Error() string {
	if len(e.Data) > 0 {
		return fmt.Sprintf("json-rpc error %d: %s (data %s)", e.Code, e.Message, e.Data)
	}
	return fmt.Sprintf("json-rpc error %d: %s", e.Code, e.Message)
}

// HTTPError is a non-2xx HTTP answer. 408, 425, 429 and 5xx are retried.
type HTTPError struct {
	StatusCode int
	// Body is the start of the answer, when the transport kept it.
	Body string
}

func (e *HTTPError) Error() string {
	if e.Body != "" {
		return fmt.Sprintf("http status %d: %s", e.StatusCode, e.Body)
	}
	return fmt.Sprintf("http status %d", e.StatusCode)
}

var (
	// ErrMalformed marks an answer that is not what the protocol promises
	// (bad JSON, missing result, bad checksum). Retried.
	ErrMalformed = errors.New("malformed answer")
	// ErrInconsistent marks a well-formed answer that does not fit the
	// question (another height, receipts not matching the block's txs, an
	// ID not matching the bytes). Retried: load-balanced endpoints answer
	// from nodes at different heights.
	ErrInconsistent = errors.New("inconsistent answer")
	// ErrNotFound marks an answer of "no such thing" given as a null result.
	// Use IsNotFound, which also recognises the nodes' "not found" errors.
	ErrNotFound = errors.New("not found")
)

// IsNotFound reports whether err says the thing asked for does not exist
// (yet): a null EVM block or receipts, avalanchego's "not found" errors (e.g.
// a P/X height above the tip), coreth's "cannot query unfinalized data" for
// an EVM block above the tip.
func IsNotFound(err error) bool {
	if errors.Is(err, ErrNotFound) {
		return true
	}
	var re *RPCError
	if errors.As(err, &re) {
		m := strings.ToLower(re.Message)
		return strings.Contains(m, "not found") || strings.Contains(m, "could not find") ||
			strings.Contains(m, "cannot query unfinalized data")
	}
	return false
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks err as not worth retrying.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// IsRetryable is the default retry classification: transport failures,
// HTTP 408/425/429/5xx, malformed and inconsistent answers and attempt
// timeouts are retried; JSON-RPC errors, other HTTP statuses, cancellation
// and Permanent errors are not.
func IsRetryable(err error) bool {
	var (
		perm *permanentError
		re   *RPCError
		he   *HTTPError
	)
	switch {
	case err == nil:
		return false
	case errors.As(err, &perm), errors.As(err, &re):
		return false
	case errors.As(err, &he):
		return retryableStatus(he.StatusCode)
	case errors.Is(err, context.Canceled):
		return false
	default:
		return true
	}
}

func retryableStatus(code int) bool {
	switch {
	case code == 408 || code == 425 || code == 429:
		return true
	case code >= 500:
		return true
	default:
		return false
	}
}
