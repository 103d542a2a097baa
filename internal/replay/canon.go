package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Canonical forms: two calls with the same key are answered by the node
// identically, so one recorded answer serves both.

// key returns the index key of a call of f.
func (f *family) key(method string, params json.RawMessage) string {
	return f.name + "\x00" + method + "\x00" + f.canonical(method, params)
}

func (f *family) canonical(method string, params json.RawMessage) string {
	if f.kind == evmFamily {
		return "e:" + canonEVM(method, params)
	}
	if t := f.argsType(method); t != nil {
		// What the node compares is the decoded Go argument value: decode
		// exactly as gorilla does and re-encode. This equates {"height":1} and
		// {"height":"1"} (json.Uint64), [{...}] and {...}, absent and default
		// fields, key case, and drops fields the node ignores.
		if b, err := typedCanonical(params, t); err == nil {
			return "t:" + string(b)
		}
	}
	return "g:" + canonAvalancheGeneric(params)
}

// argsType returns the argument type of method on f, or nil when the node
// would not dispatch it or the type is not known.
func (f *family) argsType(method string) reflect.Type {
	m, err := avalancheMethodName(method)
	if err != nil {
		return nil
	}
	t, errMsg := f.lookup(m)
	if errMsg != "" {
		return nil
	}
	return t
}

var errUppercaseMethod = errors.New("method must start with a non-uppercase letter")

// avalancheMethodName mirrors avalanchego's utils/json codec: the first letter
// of the function part is capitalised; an already-capitalised one is refused.
func avalancheMethodName(method string) (string, error) {
	parts := strings.SplitN(method, ".", 2)
	if len(parts) != 2 {
		return method, nil
	}
	class, function := parts[0], parts[1]
	r, n := utf8.DecodeRuneInString(function)
	if r == utf8.RuneError {
		return method, nil
	}
	if unicode.IsUpper(r) {
		return method, errUppercaseMethod
	}
	return class + "." + string(unicode.ToUpper(r)) + function[n:], nil
}

// lookup mirrors gorilla/rpc's serviceMap.get on a capitalised method name. It
// returns the node's error message when the method would not be dispatched.
func (f *family) lookup(method string) (reflect.Type, string) {
	parts := strings.Split(method, ".")
	if len(parts) != 2 {
		return nil, fmt.Sprintf("rpc: service/method request ill-formed: %q", method)
	}
	if parts[0] != f.service {
		return nil, fmt.Sprintf("rpc: can't find service %q", method)
	}
	t, ok := f.methods[parts[1]]
	if !ok {
		return nil, fmt.Sprintf("rpc: can't find method %q", method)
	}
	return t, ""
}

// decodeGorillaArgs decodes params into a new value of type t the way
// gorilla/rpc json2 ReadRequest does: as an object, else as an array whose
// first element is the object; absent or null params leave the zero value.
func decodeGorillaArgs(params json.RawMessage, t reflect.Type) (v reflect.Value, err error) {
	defer func() {
		// Third-party UnmarshalJSON methods see hostile input here.
		if r := recover(); r != nil {
			err = fmt.Errorf("decoding arguments panicked: %v", r)
		}
	}()
	v = reflect.New(t)
	if len(params) == 0 || bytes.Equal(params, []byte("null")) {
		return v, nil
	}
	if err := json.Unmarshal(params, v.Interface()); err != nil {
		arr := [1]any{v.Interface()}
		if err := json.Unmarshal(params, &arr); err != nil {
			return reflect.Value{}, err
		}
	}
	return v, nil
}

func typedCanonical(params json.RawMessage, t reflect.Type) (b []byte, err error) {
	v, err := decodeGorillaArgs(params, t)
	if err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("encoding arguments panicked: %v", r)
		}
	}()
	return json.Marshal(v.Interface())
}

// decodeValue decodes one JSON value keeping numbers' text.
func decodeValue(raw json.RawMessage) (any, bool) {
	if len(raw) == 0 {
		return nil, true
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if dec.More() {
		return nil, false
	}
	return v, true
}

func marshalCanon(v any) string {
	// Maps marshal with sorted keys; json.Number keeps its text.
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("unencodable:%v", v)
	}
	return string(b)
}

// canonAvalancheGeneric canonicalises avalanche API params whose Go type is
// not known, following encoding/json's rules as the node applies them:
// absent/null/[] params are {}, [obj, ...] is obj, keys match
// case-insensitively, a null member is as good as an absent one, and numeric
// fields (json.Uint64 and friends) take 7 and "7" alike.
func canonAvalancheGeneric(params json.RawMessage) string {
	v, ok := decodeValue(params)
	if !ok {
		return "raw:" + string(params)
	}
	switch t := v.(type) {
	case nil:
		v = map[string]any{}
	case []any:
		switch {
		case len(t) == 0 || t[0] == nil:
			v = map[string]any{}
		default:
			if m, ok := t[0].(map[string]any); ok {
				v = m
			}
		}
	}
	return marshalCanon(normAvalanche(v))
}

func normAvalanche(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			if x == nil {
				continue
			}
			out[strings.ToLower(k)] = normAvalanche(x)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = normAvalanche(x)
		}
		return out
	case string:
		if u, err := strconv.ParseUint(t, 10, 64); err == nil {
			return json.Number(strconv.FormatUint(u, 10))
		}
		return t
	case json.Number:
		if u, err := strconv.ParseUint(string(t), 10, 64); err == nil {
			return json.Number(strconv.FormatUint(u, 10))
		}
		return t
	default:
		return v
	}
}

// evmBlockParam gives, per EVM method, the position of its block number (or
// block number-or-hash) argument.
var evmBlockParam = map[string]int{
	"eth_getBlockByNumber":                       0,
	"eth_getBlockReceipts":                       0,
	"eth_getBlockTransactionCountByNumber":       0,
	"eth_getUncleCountByBlockNumber":             0,
	"eth_getTransactionByBlockNumberAndIndex":    0,
	"eth_getRawTransactionByBlockNumberAndIndex": 0,
	"eth_getUncleByBlockNumberAndIndex":          0,
	"eth_getHeaderByNumber":                      0,
	"eth_getBalance":                             1,
	"eth_getTransactionCount":                    1,
	"eth_getCode":                                1,
	"eth_call":                                   1,
	"eth_estimateGas":                            1,
	"eth_createAccessList":                       1,
	"eth_feeHistory":                             1,
	"eth_getStorageAt":                           2,
	"eth_getProof":                               2,
}

// canonEVM canonicalises EVM params: absent/null params are [], 0x-hex
// strings compare case-insensitively (addresses, hashes, data), object keys
// case-insensitively with null members dropped, and block numbers by value
// ("0x05" = "0x5"; {"blockNumber":"0x5"} = "0x5").
func canonEVM(method string, params json.RawMessage) string {
	v, ok := decodeValue(params)
	if !ok {
		return "raw:" + string(params)
	}
	if v == nil {
		v = []any{}
	}
	arr, isArr := v.([]any)
	if !isArr {
		return "nonarray:" + marshalCanon(normEVM(v))
	}
	for i := range arr {
		arr[i] = normEVM(arr[i])
	}
	if pos, ok := evmBlockParam[method]; ok && pos < len(arr) {
		arr[pos] = normBlockParam(arr[pos])
	}
	if method == "eth_getLogs" && len(arr) > 0 {
		if m, ok := arr[0].(map[string]any); ok {
			for _, k := range []string{"fromblock", "toblock"} {
				if x, ok := m[k]; ok {
					m[k] = normBlockParam(x)
				}
			}
		}
	}
	return marshalCanon(arr)
}

func normEVM(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			if x == nil {
				continue
			}
			out[strings.ToLower(k)] = normEVM(x)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = normEVM(x)
		}
		return out
	case string:
		if isHex(t) {
			return strings.ToLower(t)
		}
		return t
	default:
		return v
	}
}

func isHex(s string) bool {
	if len(s) < 2 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') {
		return false
	}
	for i := 2; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// normBlockParam normalises an already normEVM'd block number or
// block-number-or-hash argument.
func normBlockParam(v any) any {
	switch t := v.(type) {
	case string:
		if isHex(t) && len(t) > 2 {
			digits := strings.TrimLeft(t[2:], "0")
			if digits == "" {
				digits = "0"
			}
			return "0x" + digits
		}
		return t
	case map[string]any:
		if rc, ok := t["requirecanonical"]; ok && rc != false {
			return t
		}
		n, hasN := t["blocknumber"]
		h, hasH := t["blockhash"]
		extra := len(t)
		if _, ok := t["requirecanonical"]; ok {
			extra--
		}
		switch {
		case hasN && !hasH && extra == 1:
			return normBlockParam(n)
		case hasH && !hasN && extra == 1:
			return h
		}
		return t
	default:
		return v
	}
}
