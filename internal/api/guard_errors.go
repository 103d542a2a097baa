package api

import (
	"fmt"
	"net/http"
)

// ErrUpstream is a 502: the node (or another upstream) answered a request
// the index could not serve itself with an error or an invalid answer.
// Return it wrapped with the cause, which goes to the log, not the client:
//
//	return nil, api.Upstream(fmt.Errorf("eth_getBalance %s: %w", addr, err))
//
// errors.Is(err, api.ErrUpstream) reports such errors.
var ErrUpstream = &Error{Status: http.StatusBadGateway, Messages: []string{"the upstream node gave an invalid answer; try again later"}}

// Upstream marks cause as an upstream failure (a 502 carrying ErrUpstream's
// message; the cause is logged with the request id by guarded routes).
func Upstream(cause error) error {
	if cause == nil {
		return ErrUpstream
	}
	return fmt.Errorf("%w: %w", ErrUpstream, cause)
}

// Unavailable is a 503 with msg: the index cannot answer for now (a chain
// lagging behind its node, the store unreachable, a timeout).
func Unavailable(msg string) *Error {
	return &Error{Status: http.StatusServiceUnavailable, Messages: []string{msg}}
}

// Invalid is a 400 naming the parameter whose value a parser refused:
// api.Invalid("address", err) -> "address: <why>".
func Invalid(param string, err error) *Error {
	return BadRequest(param + ": " + err.Error())
}
