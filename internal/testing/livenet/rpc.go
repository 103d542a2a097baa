package livenet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

var rpcID atomic.Int64

// rpcHTTP is shared by all JSON-RPC calls; nodes run on loopback only.
var rpcHTTP = &http.Client{Timeout: 30 * time.Second}

// RPCError is a JSON-RPC error answer.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("rpc error %d: %s", e.Code, e.Message) }

// rpcCall makes one JSON-RPC 2.0 call and decodes the result into out (if
// not nil). params is sent as is (an object for Avalanche APIs, an array
// for eth_*).
func rpcCall(ctx context.Context, url, method string, params any, out any) error {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": rpcID.Add(1), "method": method, "params": params})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := rpcHTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var env struct {
		Result json.RawMessage `json:"result"`
		Error  *RPCError       `json:"error"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return fmt.Errorf("%s %s: HTTP %d: %s", url, method, resp.StatusCode, truncate(string(raw), 300))
	}
	if env.Error != nil {
		return fmt.Errorf("%s %s: %w", url, method, env.Error)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(env.Result, out)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
