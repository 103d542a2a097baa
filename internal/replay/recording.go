// Package replay serves a recording of a real avalanchego node (see
// testdata/devnet-a/README.md) as an avalanchego-compatible JSON-RPC node, so
// clients and the ingester can be tested against real answers without a
// running network.
package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ava-labs/avalanchego/ids"
)

// maxFileSize bounds what Load reads from one recording file; recordings are
// a few MB, anything far larger is not a recording.
const maxFileSize = 1 << 30

// endpointFiles maps a recording file name to the node path it was recorded
// on; "" means each line names its own path (its "path" member).
var endpointFiles = map[string]string{
	"ext_info.jsonl":      "/ext/info",
	"ext_bc_P.jsonl":      "/ext/bc/P",
	"ext_bc_X.jsonl":      "/ext/bc/X",
	"ext_bc_C_rpc.jsonl":  "/ext/bc/C/rpc",
	"ext_bc_C_avax.jsonl": "/ext/bc/C/avax",
	// The index API (/ext/index/{P,X,C}/block, /ext/index/X/{tx,vtx}) and
	// the C-chain's debug_* answers (devnet-c).
	"ext_index.jsonl":      "",
	"ext_bc_C_debug.jsonl": "/ext/bc/C/rpc",
}

// Exchange is one recorded call and the node's answer.
type Exchange struct {
	// Endpoint is the node path the call was sent to, e.g. "/ext/bc/P".
	Endpoint string
	// File and Line locate the exchange in the recording (Line is 1-based).
	File string
	Line int
	// Method and Params are what was sent; Params is nil when absent.
	Method string
	Params json.RawMessage
	// Response is the recorded body, byte for byte.
	Response json.RawMessage
	// Node is the ID of the answering node.
	Node string
	// HTTPStatus is the recorded HTTP status (200 when not recorded).
	HTTPStatus int

	// idStart, idEnd delimit the value of the response's "id" member, so the
	// handler can echo the caller's id without re-encoding anything else.
	idStart, idEnd int
}

// ResponseWithID returns the recorded response with its "id" value replaced
// by id (which must be compact JSON). With the recorded id it returns the
// recorded bytes exactly.
func (e *Exchange) ResponseWithID(id json.RawMessage) []byte {
	out := make([]byte, 0, len(e.Response)-(e.idEnd-e.idStart)+len(id))
	out = append(out, e.Response[:e.idStart]...)
	out = append(out, id...)
	return append(out, e.Response[e.idEnd:]...)
}

// RecordedID is the "id" value of the recorded response.
func (e *Exchange) RecordedID() json.RawMessage {
	return json.RawMessage(e.Response[e.idStart:e.idEnd])
}

// Network holds the facts of network.json the handler needs.
type Network struct {
	NetworkID uint32
	// BlockchainIDs maps the aliases P, X and C to blockchain IDs.
	BlockchainIDs map[string]string
	// RecordingNode answered everything; its answers are the default when
	// several nodes answered the same call.
	RecordingNode string
}

// Recording is a loaded recording directory.
type Recording struct {
	Dir     string
	Network Network
	// Exchanges lists every recorded line, grouped by file (sorted by file
	// name), in file order.
	Exchanges []Exchange

	families map[string]*family // endpoint -> API family
	index    map[string][]int   // family name + canonical call -> exchange indexes
	// chainFiles maps the file of a further EVM chain to its node path.
	chainFiles map[string]string
}

// EVMChains lists the node paths of the further EVM chains the recording
// has (/ext/bc/<blockchainID>/rpc), beside the C-chain.
func (rec *Recording) EVMChains() []string {
	var out []string
	for _, p := range rec.chainFiles {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// evmChainFile reads the blockchain ID from a file name ext_bc_<id>_rpc.jsonl.
func evmChainFile(name string) (string, bool) {
	id, ok := strings.CutPrefix(name, "ext_bc_")
	if !ok {
		return "", false
	}
	if id, ok = strings.CutSuffix(id, "_rpc.jsonl"); !ok {
		return "", false
	}
	if _, err := ids.FromString(id); err != nil {
		return "", false
	}
	return id, true
}

// Load reads dir/network.json (optional) and dir/rpc/*.jsonl.
func Load(dir string) (*Recording, error) {
	rec := &Recording{
		Dir:        dir,
		families:   newFamilies(),
		index:      make(map[string][]int),
		chainFiles: make(map[string]string),
	}
	if err := rec.loadNetwork(filepath.Join(dir, "network.json")); err != nil {
		return nil, err
	}
	rpcDir := filepath.Join(dir, "rpc")
	entries, err := os.ReadDir(rpcDir)
	if err != nil {
		return nil, fmt.Errorf("replay: read recording: %w", err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".jsonl") {
			continue
		}
		if _, ok := endpointFiles[e.Name()]; !ok {
			// ext_bc_<blockchainID>_rpc.jsonl: another EVM chain of the node
			// (an L1 it tracks), served on /ext/bc/<blockchainID>/rpc.
			id, ok := evmChainFile(e.Name())
			if !ok {
				return nil, fmt.Errorf("replay: %s: unknown endpoint file (known: ext_info, ext_bc_P, ext_bc_X, ext_bc_C_rpc, ext_bc_C_avax, ext_index, ext_bc_C_debug, ext_bc_<blockchainID>_rpc)", filepath.Join(rpcDir, e.Name()))
			}
			path := "/ext/bc/" + id + "/rpc"
			rec.families[path] = &family{name: "evm:" + id, kind: evmFamily, evmMethods: evmMethodSet()}
			rec.chainFiles[e.Name()] = path
		}
		names = append(names, e.Name())
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("replay: %s: no recording files", rpcDir)
	}
	sort.Strings(names)
	for _, name := range names {
		endpoint, ok := endpointFiles[name]
		if !ok {
			endpoint = rec.chainFiles[name]
		}
		if err := rec.loadFile(filepath.Join(rpcDir, name), endpoint); err != nil {
			return nil, err
		}
	}
	if rec.Network.RecordingNode == "" && len(rec.Exchanges) > 0 {
		rec.Network.RecordingNode = rec.Exchanges[0].Node
	}
	for i := range rec.Exchanges {
		e := &rec.Exchanges[i]
		f := rec.families[e.Endpoint]
		k := f.key(e.Method, e.Params)
		rec.index[k] = append(rec.index[k], i)
	}
	for _, p := range indexPaths {
		if m := buildIndexModel(rec, p); m.lastKnown || m.empty || len(m.containers) > 0 {
			rec.families[p].index = m
		}
	}
	for _, e := range rec.Exchanges {
		if e.Endpoint == "/ext/bc/C/rpc" && strings.HasPrefix(e.Method, "debug_") {
			for _, m := range debugTracerMethods {
				rec.families[e.Endpoint].evmMethods[m] = true
			}
			break
		}
	}
	return rec, nil
}

func (rec *Recording) loadNetwork(path string) error {
	b, err := readFileLimited(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	var n struct {
		NetworkID     uint32            `json:"networkID"`
		BlockchainIDs map[string]string `json:"blockchainIDs"`
		RecordingNode string            `json:"recordingNode"`
	}
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("replay: %s: %w", path, err)
	}
	for alias, id := range n.BlockchainIDs {
		if alias != "P" && alias != "X" && alias != "C" {
			return fmt.Errorf("replay: %s: blockchainIDs: unknown alias %q", path, alias)
		}
		if id == "" || strings.ContainsAny(id, "/?#") {
			return fmt.Errorf("replay: %s: blockchainIDs: bad ID %q for %s", path, id, alias)
		}
	}
	rec.Network = Network{NetworkID: n.NetworkID, BlockchainIDs: n.BlockchainIDs, RecordingNode: n.RecordingNode}
	return nil
}

func readFileLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(b) > maxFileSize {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxFileSize)
	}
	return b, nil
}

type recordLine struct {
	Path       string          `json:"path"`
	Method     string          `json:"method"`
	Params     json.RawMessage `json:"params"`
	Response   json.RawMessage `json:"response"`
	Node       string          `json:"node"`
	HTTPStatus int             `json:"httpStatus"`
}

func (rec *Recording) loadFile(path, endpoint string) error {
	b, err := readFileLimited(path)
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	file := filepath.Base(path)
	for i, line := range bytes.Split(b, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		e, linePath, err := parseLine(line)
		if err != nil {
			return fmt.Errorf("replay: %s:%d: %w", path, i+1, err)
		}
		switch {
		case endpoint == "" && rec.families[linePath] == nil:
			return fmt.Errorf("replay: %s:%d: unknown path %q", path, i+1, linePath)
		case endpoint == "":
			e.Endpoint = linePath
		case linePath != "" && linePath != endpoint:
			return fmt.Errorf("replay: %s:%d: path %q in a file of %s", path, i+1, linePath, endpoint)
		default:
			e.Endpoint = endpoint
		}
		e.File, e.Line = file, i+1
		rec.Exchanges = append(rec.Exchanges, e)
	}
	return nil
}

func parseLine(line []byte) (Exchange, string, error) {
	var l recordLine
	if err := json.Unmarshal(line, &l); err != nil {
		return Exchange{}, "", err
	}
	if l.Method == "" {
		return Exchange{}, "", errors.New("missing method")
	}
	if bytes.Equal(l.Params, []byte("null")) {
		l.Params = nil
	}
	switch {
	case l.HTTPStatus == 0:
		l.HTTPStatus = 200
	case l.HTTPStatus < 100 || l.HTTPStatus > 599:
		return Exchange{}, "", fmt.Errorf("bad httpStatus %d", l.HTTPStatus)
	}
	start, end, err := findID(l.Response)
	if err != nil {
		return Exchange{}, "", fmt.Errorf("response: %w", err)
	}
	return Exchange{
		Method:     l.Method,
		Params:     l.Params,
		Response:   l.Response,
		Node:       l.Node,
		HTTPStatus: l.HTTPStatus,
		idStart:    start,
		idEnd:      end,
	}, l.Path, nil
}

// findID returns the byte range of the value of the top-level "id" member of
// the JSON object resp.
func findID(resp []byte) (int, int, error) {
	dec := json.NewDecoder(bytes.NewReader(resp))
	tok, err := dec.Token()
	if err != nil {
		return 0, 0, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return 0, 0, errors.New("not a JSON object")
	}
	start, end, found := 0, 0, false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return 0, 0, err
		}
		key, ok := tok.(string)
		if !ok {
			return 0, 0, errors.New("malformed object")
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return 0, 0, err
		}
		if key != "id" {
			continue
		}
		if found {
			return 0, 0, errors.New(`duplicate "id"`)
		}
		end = int(dec.InputOffset())
		start = end - len(raw)
		if start < 0 || !bytes.Equal(resp[start:end], raw) {
			return 0, 0, errors.New(`cannot locate "id"`)
		}
		found = true
	}
	if _, err := dec.Token(); err != nil {
		return 0, 0, err
	}
	if dec.More() {
		return 0, 0, errors.New("trailing data")
	}
	if !found {
		return 0, 0, errors.New(`no "id" member`)
	}
	return start, end, nil
}
