package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/indexer"
	"github.com/ava-labs/avalanchego/utils/formatting"
)

// indexPaths are the node's index API endpoints (avalanchego --index-enabled):
// accepted blocks of P, X and C, and the X-chain's pre-linearization
// transactions and vertices.
var indexPaths = []string{"/ext/index/P/block", "/ext/index/X/block", "/ext/index/C/block", "/ext/index/X/tx", "/ext/index/X/vtx"}

// newIndexFamily is one index endpoint. The service type of avalanchego's
// indexer is unexported, so its methods are listed here with their exported
// argument types.
func newIndexFamily(path string) *family {
	return &family{name: "index:" + path, kind: avalancheFamily, service: "index", methods: map[string]reflect.Type{
		"GetLastAccepted":     reflect.TypeOf(indexer.GetLastAcceptedArgs{}),
		"GetContainerByIndex": reflect.TypeOf(indexer.GetContainerByIndexArgs{}),
		"GetContainerRange":   reflect.TypeOf(indexer.GetContainerRangeArgs{}),
		"GetIndex":            reflect.TypeOf(indexer.GetIndexArgs{}),
		"IsAccepted":          reflect.TypeOf(indexer.IsAcceptedArgs{}),
		"GetContainerByID":    reflect.TypeOf(indexer.GetContainerByIDArgs{}),
	}}
}

// indexModel holds the containers a recording shows of one index, so that
// calls the recorder did not make (another range, another position) are
// answered from the node's own recorded containers, with the node's error
// messages (indexer/index.go) where the index has nothing. Only the hex
// encoding the recorder used can be answered.
type indexModel struct {
	containers map[uint64]json.RawMessage // position -> the recorded FormattedContainer object
	byID       map[ids.ID]uint64
	last       uint64 // last accepted position, when known
	lastKnown  bool
	empty      bool // the node answered "no containers have been accepted"
}

// buildIndexModel reads every recorded container of one endpoint.
func buildIndexModel(rec *Recording, path string) *indexModel {
	m := &indexModel{containers: map[uint64]json.RawMessage{}, byID: map[ids.ID]uint64{}}
	for i := range rec.Exchanges {
		e := &rec.Exchanges[i]
		if e.Endpoint != path {
			continue
		}
		var resp struct {
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(e.Response, &resp) != nil {
			continue
		}
		if resp.Error != nil {
			if e.Method == "index.getLastAccepted" && resp.Error.Message == "no containers have been accepted" {
				m.empty = true
			}
			continue
		}
		var objs []json.RawMessage
		switch e.Method {
		case "index.getContainerRange":
			var r struct {
				Containers []json.RawMessage `json:"containers"`
			}
			if json.Unmarshal(resp.Result, &r) != nil {
				continue
			}
			objs = r.Containers
		case "index.getLastAccepted", "index.getContainerByIndex", "index.getContainerByID":
			objs = []json.RawMessage{resp.Result}
		}
		for _, o := range objs {
			var fc indexer.FormattedContainer
			if json.Unmarshal(o, &fc) != nil || fc.Encoding != formatting.Hex {
				continue
			}
			pos := uint64(fc.Index)
			m.containers[pos] = o
			m.byID[fc.ID] = pos
			if e.Method == "index.getLastAccepted" {
				m.last, m.lastKnown = pos, true
			}
		}
	}
	return m
}

// complete says the recording shows every container of the index, so an ID
// it does not show was not accepted.
func (m *indexModel) complete() bool {
	return m.empty || m.lastKnown && uint64(len(m.containers)) == m.last+1
}

// answer returns the node's answer to a call with decoded args (a pointer to
// one of the indexer's argument types), or ok false when the recording cannot
// tell it.
func (m *indexModel) answer(args any) (result any, errMsg string, ok bool) {
	if !m.lastKnown && !m.empty {
		return nil, "", false
	}
	hexOnly := func(enc formatting.Encoding) bool { return enc == formatting.Hex }
	at := func(pos uint64) (json.RawMessage, string, bool) {
		if m.empty || pos > m.last {
			return nil, fmt.Sprintf("no container at index %d", pos), true
		}
		c, ok := m.containers[pos]
		return c, "", ok
	}
	switch a := args.(type) {
	case *indexer.GetLastAcceptedArgs:
		if !hexOnly(a.Encoding) {
			return nil, "", false
		}
		if m.empty {
			return nil, "no containers have been accepted", true
		}
		c, _, ok := at(m.last)
		return c, "", ok
	case *indexer.GetContainerByIndexArgs:
		if !hexOnly(a.Encoding) {
			return nil, "", false
		}
		c, msg, ok := at(uint64(a.Index))
		return c, msg, ok
	case *indexer.GetContainerRangeArgs:
		if !hexOnly(a.Encoding) {
			return nil, "", false
		}
		n := uint64(a.NumToFetch)
		switch {
		case n == 0 || n > indexer.MaxFetchedByRange:
			return nil, fmt.Sprintf("numToFetch must be in [1,%d] but is %d", indexer.MaxFetchedByRange, n), true
		case m.empty:
			return nil, "no containers have been accepted", true
		case uint64(a.StartIndex) > m.last:
			return nil, fmt.Sprintf("start index (%d) > last accepted index (%d)", a.StartIndex, m.last), true
		}
		end := min(uint64(a.StartIndex)+n-1, m.last)
		var buf bytes.Buffer
		buf.WriteString(`{"containers":[`)
		for pos := uint64(a.StartIndex); pos <= end; pos++ {
			c, ok := m.containers[pos]
			if !ok {
				return nil, "", false
			}
			if pos > uint64(a.StartIndex) {
				buf.WriteByte(',')
			}
			buf.Write(c)
		}
		buf.WriteString(`]}`)
		return json.RawMessage(buf.Bytes()), "", true
	case *indexer.GetIndexArgs:
		pos, known := m.byID[a.ID]
		switch {
		case known:
			return json.RawMessage(fmt.Sprintf(`{"index":"%d"}`, pos)), "", true
		case m.complete():
			return nil, "not found", true
		}
	case *indexer.IsAcceptedArgs:
		_, known := m.byID[a.ID]
		if known || m.complete() {
			return json.RawMessage(fmt.Sprintf(`{"isAccepted":%t}`, known)), "", true
		}
	case *indexer.GetContainerByIDArgs:
		pos, known := m.byID[a.ID]
		switch {
		case !hexOnly(a.Encoding):
		case known:
			return m.containers[pos], "", true
		case m.complete():
			return nil, "not found", true
		}
	}
	return nil, "", false
}
