// Package api holds what every HTTP interface shares: the one function that
// writes every response and error (ErrorBody), query-parameter parsing with
// accumulated errors, page tokens, and the server with its middleware.
package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
)

// Error is an API error: an HTTP status and one message per problem found.
type Error struct {
	Status   int
	Messages []string
	// Headers are added to the response (e.g. retry-after on 429).
	Headers http.Header
}

func (e *Error) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Status, http.StatusText(e.Status), strings.Join(e.Messages, "; "))
}

// Errorf builds an Error with one formatted message.
func Errorf(status int, format string, args ...any) *Error {
	return &Error{Status: status, Messages: []string{fmt.Sprintf(format, args...)}}
}

// BadRequest is a 400 with the given messages.
func BadRequest(msgs ...string) *Error { return &Error{Status: http.StatusBadRequest, Messages: msgs} }

// NotFound is a 404 with one message.
func NotFound(format string, args ...any) *Error { return Errorf(http.StatusNotFound, format, args...) }

// Created wraps a value answered with 201 Created.
type Created struct{ Value any }

// Handler returns the response value, or an error (an *Error for client errors;
// anything else becomes a 500 whose details go to the log, not the client).
type Handler func(r *http.Request) (any, error)

// ErrorStyle chooses how ErrorBody.message is shaped.
type ErrorStyle int

const (
	// MessageString: {"message": "a; b"} (data service).
	MessageString ErrorStyle = iota
	// MessageArray: {"message": ["a", "b"]} (metrics service).
	MessageArray
)

// Wrap turns a Handler into an http.HandlerFunc writing JSON or an ErrorBody.
func Wrap(style ErrorStyle, log *slog.Logger, h Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := h(r)
		if err != nil {
			WriteError(w, r, style, log, err)
			return
		}
		status := http.StatusOK
		if c, ok := v.(Created); ok {
			status, v = http.StatusCreated, c.Value
		}
		WriteJSON(w, status, v)
	}
}

// WriteJSON writes v as a JSON response.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(errorBody(http.StatusInternalServerError, MessageString, []string{"could not encode the response"}))
		status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	w.Write(b)  //nolint:errcheck // the client went away
	w.Write(nl) //nolint:errcheck
}

var nl = []byte("\n")

// WriteError writes err as an ErrorBody. Errors that are not *Error are
// internal: logged with the request id, answered as a generic 500.
func WriteError(w http.ResponseWriter, r *http.Request, style ErrorStyle, log *slog.Logger, err error) {
	var e *Error
	if !errors.As(err, &e) {
		id := RequestID(r)
		if log != nil {
			log.Error("request failed", "request_id", id, "method", r.Method, "path", r.URL.Path, "err", err)
		}
		e = Errorf(http.StatusInternalServerError, "internal error (request id %s)", id)
	}
	for k, vs := range e.Headers {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	WriteJSON(w, e.Status, errorBody(e.Status, style, e.Messages))
}

func errorBody(status int, style ErrorStyle, msgs []string) map[string]any {
	var msg any = strings.Join(msgs, "; ")
	if style == MessageArray {
		if msgs == nil {
			msgs = []string{}
		}
		msg = msgs
	}
	return map[string]any{"message": msg, "statusCode": status, "error": http.StatusText(status)}
}
