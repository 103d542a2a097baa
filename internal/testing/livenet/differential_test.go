package livenet

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/indexer"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/formatting"
	"github.com/ava-labs/avalanchego/utils/hashing"
	"github.com/ava-labs/avalanchego/vms/proposervm/block"
	"github.com/ava-labs/libevm/common"
	"github.com/ava-labs/libevm/common/hexutil"
)

// nodeLocal are the members of a node's answer that describe the node, not
// the chain: Permafrost cannot know them from the index (docs/operations.md).
var nodeLocal = map[string]bool{"uptime": true, "connected": true}

// diffReport counts compared items per kind and collects differences.
type diffReport struct {
	mu       sync.Mutex
	compared map[string]int
	diffs    map[string][]string
	notDone  []string
	// known are differences the suite found that are not fixed yet.
	known []knownFinding
}

// knownFinding is a difference the suite found and the project has not fixed
// yet: it is printed as a KNOWN FINDING with its reason, but does not fail
// the suite, so that every other difference still does. Each one matches
// exactly what it covers (a kind of item and a text in the difference, or a
// table and a text in its differing rows); fixing the cause makes the finding
// disappear from the report, and it should then be removed here.
type knownFinding struct {
	kind     string // an item kind, or "table:NAME" for the database comparison
	contains string // lowercase text every matched difference contains
	why      string
}

func (k knownFinding) matches(kind, diff string) bool {
	return strings.Contains(kind, k.kind) && k.contains != "" && strings.Contains(strings.ToLower(diff), k.contains)
}

func knownAs(known []knownFinding, kind, diff string) (string, bool) {
	for _, k := range known {
		if k.matches(kind, diff) {
			return k.why, true
		}
	}
	return "", false
}

func newDiffReport(known []knownFinding) *diffReport {
	return &diffReport{compared: map[string]int{}, diffs: map[string][]string{}, known: known}
}

// check records one compared item of kind; where names it, d lists its
// differences (none: equal).
func (r *diffReport) check(kind, where string, d []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.compared[kind]++
	for _, x := range d {
		r.diffs[kind] = append(r.diffs[kind], where+": "+x)
	}
}

func (r *diffReport) notCompared(what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notDone = append(r.notDone, what)
}

func (r *diffReport) total() (items, diffs int) {
	for k, n := range r.compared {
		items += n
		diffs += len(r.diffs[k])
	}
	return items, diffs
}

// log prints the report and fails the test on any difference.
func (r *diffReport) log(t *testing.T) {
	kinds := make([]string, 0, len(r.compared))
	for k := range r.compared {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	items, diffs := r.total()
	t.Logf("differential report: %d items compared, %d differences", items, diffs)
	for _, k := range kinds {
		t.Logf("  %-48s compared %5d  differences %d", k, r.compared[k], len(r.diffs[k]))
	}
	for _, w := range r.notDone {
		t.Logf("  not compared: %s", w)
	}
	for _, k := range kinds {
		failing := 0
		for _, x := range r.diffs[k] {
			if why, ok := knownAs(r.known, k, x); ok {
				t.Logf("KNOWN FINDING (%s): %s: %s", why, k, x)
				continue
			}
			if failing++; failing <= 20 {
				t.Errorf("%s: %s", k, x)
			}
		}
		if failing > 20 {
			t.Errorf("%s: ... %d more differences", k, failing-20)
		}
	}
}

// jsonDiff compares two JSON documents member by member (numbers as
// written), ignoring node-local members; each difference is a path with
// both values.
func jsonDiff(got, want []byte) []string {
	var g, w any
	dg := json.NewDecoder(bytes.NewReader(got))
	dg.UseNumber()
	dw := json.NewDecoder(bytes.NewReader(want))
	dw.UseNumber()
	if err := dg.Decode(&g); err != nil && len(bytes.TrimSpace(got)) > 0 {
		return []string{fmt.Sprintf("permafrost answer is not JSON: %s", truncate(string(got), 200))}
	}
	if err := dw.Decode(&w); err != nil && len(bytes.TrimSpace(want)) > 0 {
		return []string{fmt.Sprintf("node answer is not JSON: %s", truncate(string(want), 200))}
	}
	var out []string
	diffValue("$", g, w, &out)
	return out
}

func diffValue(path string, g, w any, out *[]string) {
	switch wv := w.(type) {
	case map[string]any:
		gv, ok := g.(map[string]any)
		if !ok {
			*out = append(*out, fmt.Sprintf("%s: permafrost %s, node %s", path, short(g), short(w)))
			return
		}
		keys := map[string]bool{}
		for k := range wv {
			keys[k] = true
		}
		for k := range gv {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			if nodeLocal[k] {
				continue
			}
			gx, gok := gv[k]
			wx, wok := wv[k]
			switch {
			case !gok:
				*out = append(*out, fmt.Sprintf("%s.%s: missing in permafrost's answer (node %s)", path, k, short(wx)))
			case !wok:
				*out = append(*out, fmt.Sprintf("%s.%s: not in the node's answer (permafrost %s)", path, k, short(gx)))
			default:
				diffValue(path+"."+k, gx, wx, out)
			}
		}
	case []any:
		gv, ok := g.([]any)
		if !ok || len(gv) != len(wv) {
			*out = append(*out, fmt.Sprintf("%s: permafrost %s, node %s", path, short(g), short(w)))
			return
		}
		for i := range wv {
			diffValue(fmt.Sprintf("%s[%d]", path, i), gv[i], wv[i], out)
		}
	default:
		if !reflect.DeepEqual(g, w) {
			*out = append(*out, fmt.Sprintf("%s: permafrost %s, node %s", path, short(g), short(w)))
		}
	}
}

func short(v any) string {
	b, _ := json.Marshal(v)
	return truncate(string(b), 160)
}

// sortArray sorts the JSON array at member key of obj by the string of
// the members named in by, so that answers whose order is the node's
// storage order (not part of the API) compare as sets.
func sortArray(raw json.RawMessage, key string, by ...string) json.RawMessage {
	var obj map[string]any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&obj) != nil {
		return raw
	}
	arr, ok := obj[key].([]any)
	if !ok {
		return raw
	}
	sk := func(v any) string {
		if m, ok := v.(map[string]any); ok {
			var s []string
			for _, b := range by {
				s = append(s, fmt.Sprint(m[b]))
			}
			return strings.Join(s, "|")
		}
		return fmt.Sprint(v)
	}
	sort.SliceStable(arr, func(i, j int) bool { return sk(arr[i]) < sk(arr[j]) })
	b, _ := json.Marshal(obj)
	return b
}

// comparer holds what the differential checks read.
type comparer struct {
	t    *testing.T
	n    *Network
	res  *WorkloadResult
	pf   string // Permafrost base URL
	node string // the node Permafrost follows
	tips map[string]uint64
	rep  *diffReport
	// potential: the node's potential reward of the workload's stakers,
	// read while they validated (for their txs' estimatedReward).
	potential  map[string]string
	blockTimes map[string]string // P block time by block ID
}

// compareRPC calls method on the node and on Permafrost and records the
// difference of the two envelopes' result and error members.
func (c *comparer) compareRPC(ctx context.Context, kind, path, method string, params any, norm func(json.RawMessage) json.RawMessage) json.RawMessage {
	where := fmt.Sprintf("%s %s", method, short(params))
	nr, ne, err := rpcRaw(ctx, c.node+path, method, params)
	if err != nil {
		c.rep.check(kind, where, []string{"node: " + err.Error()})
		return nil
	}
	gr, ge, err := rpcRaw(ctx, c.pf+path, method, params)
	if err != nil {
		c.rep.check(kind, where, []string{"permafrost: " + err.Error()})
		return nr
	}
	if norm != nil {
		nr, gr = norm(nr), norm(gr)
	}
	var d []string
	if len(ne) > 0 || len(ge) > 0 {
		d = append(d, prefix("error", jsonDiff(orNull(ge), orNull(ne)))...)
	}
	d = append(d, jsonDiff(orNull(gr), orNull(nr))...)
	c.rep.check(kind, where, d)
	return nr
}

func orNull(b json.RawMessage) []byte {
	if len(b) == 0 {
		return []byte("null")
	}
	return b
}

func prefix(p string, d []string) []string {
	for i := range d {
		d[i] = p + " " + d[i]
	}
	return d
}

// pAddresses and xAddresses: every key of the workload and every address
// in the tx log, as P-/X- bech32.
func (c *comparer) bechAddresses(chain string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(a string) {
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	for _, k := range c.n.Keys.All {
		add(k.Bech32(chain, c.n.NetworkID))
	}
	for _, r := range c.n.Log.Records() {
		for _, a := range r.Addresses {
			if i := strings.IndexByte(a, '-'); i > 0 && !strings.HasPrefix(a, "0x") {
				add(chain + a[i:])
			}
		}
	}
	sort.Strings(out)
	return out
}

// evmAddresses: every key's EVM address and every 0x address of chain's
// txs (senders, recipients, contracts).
func (c *comparer) evmAddresses(chain string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(a string) {
		a = strings.ToLower(a)
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	for _, k := range c.n.Keys.All {
		add(k.EthAddress().Hex())
	}
	for _, r := range c.n.Log.Records() {
		if r.Chain != chain {
			continue
		}
		for _, a := range r.Addresses {
			if strings.HasPrefix(a, "0x") && len(a) == 42 {
				add(a)
			}
		}
	}
	contracts := c.res.CContracts
	if chain == ChainL1 {
		contracts = c.res.L1Contracts
	}
	for _, a := range contracts {
		add(a.Hex())
	}
	sort.Strings(out)
	return out
}

// platformRPC compares the platform.* methods Permafrost serves with the
// node's answers: every block (by height and by ID, hex and JSON), the
// balance of every address, the validators of every subnet, blockchains,
// their status and the supply.
func (c *comparer) platformRPC(ctx context.Context) {
	const path = "/ext/bc/P"
	for h := uint64(0); h <= c.tips[ChainP]; h++ {
		for _, enc := range []string{"hex", "json"} {
			r := c.compareRPC(ctx, "P platform.getBlockByHeight", path, "platform.getBlockByHeight", map[string]any{"height": strconv.FormatUint(h, 10), "encoding": enc}, nil)
			if enc != "json" || r == nil {
				continue
			}
			var b struct {
				Block struct {
					ID string `json:"id"`
				} `json:"block"`
			}
			if json.Unmarshal(r, &b) == nil && b.Block.ID != "" {
				c.compareRPC(ctx, "P platform.getBlock", path, "platform.getBlock", map[string]any{"blockID": b.Block.ID, "encoding": "json"}, nil)
			}
		}
	}
	// One past the tip: both answer an error.
	c.compareRPC(ctx, "P platform.getBlockByHeight", path, "platform.getBlockByHeight", map[string]any{"height": strconv.FormatUint(c.tips[ChainP]+1, 10), "encoding": "hex"}, nil)

	sortUTXOIDs := func(r json.RawMessage) json.RawMessage { return sortArray(r, "utxoIDs", "txID", "outputIndex") }
	addrs := c.bechAddresses("P")
	for _, a := range addrs {
		c.compareRPC(ctx, "P platform.getBalance", path, "platform.getBalance", map[string]any{"addresses": []string{a}}, sortUTXOIDs)
	}
	c.compareRPC(ctx, "P platform.getBalance", path, "platform.getBalance", map[string]any{"addresses": addrs}, sortUTXOIDs)

	subnets := []ids.ID{constants.PrimaryNetworkID, c.n.L1.SubnetID}
	for _, name := range []string{"A", "B"} {
		if s, ok := c.res.Subnets[name]; ok {
			subnets = append(subnets, s)
		}
	}
	sortValidators := func(r json.RawMessage) json.RawMessage {
		return sortArray(r, "validators", "nodeID", "txID", "validationID")
	}
	for _, s := range subnets {
		c.compareRPC(ctx, "P platform.getCurrentValidators", path, "platform.getCurrentValidators", map[string]any{"subnetID": s.String()}, sortValidators)
		c.compareRPC(ctx, "P platform.getCurrentSupply", path, "platform.getCurrentSupply", map[string]any{"subnetID": s.String()}, nil)
	}
	c.compareRPC(ctx, "P platform.getCurrentValidators", path, "platform.getCurrentValidators", map[string]any{}, sortValidators)

	chains := c.compareRPC(ctx, "P platform.getBlockchains", path, "platform.getBlockchains", map[string]any{}, func(r json.RawMessage) json.RawMessage {
		return sortArray(r, "blockchains", "id")
	})
	var bc struct {
		Blockchains []struct {
			ID string `json:"id"`
		} `json:"blockchains"`
	}
	_ = json.Unmarshal(chains, &bc)
	for _, b := range bc.Blockchains {
		c.compareRPC(ctx, "P platform.getBlockchainStatus", path, "platform.getBlockchainStatus", map[string]any{"blockchainID": b.ID}, nil)
	}
}

// indexContainers reads every container of chain's block index from the node.
func (c *comparer) indexContainers(ctx context.Context, chain string) ([]indexer.FormattedContainer, error) {
	var out []indexer.FormattedContainer
	for start := uint64(0); ; {
		var r indexer.GetContainerRangeResponse
		err := rpcCall(ctx, c.node+"/ext/index/"+chain+"/block", "index.getContainerRange",
			map[string]any{"startIndex": start, "numToFetch": 1024, "encoding": "hex"}, &r)
		if err != nil {
			return out, err
		}
		out = append(out, r.Containers...)
		if len(r.Containers) < 1024 {
			return out, nil
		}
		start += 1024
	}
}

// proposer is a block's proposerDetails as served (and as the node's index
// container implies).
type proposer struct {
	ID      string `json:"proposerId"`
	Parent  string `json:"proposerParentId"`
	Node    string `json:"proposerNodeId,omitempty"`
	PHeight int64  `json:"proposerPChainHeight"`
	Time    int64  `json:"proposerTimestamp"`
}

// servedBlock is one block of the data service's /blocks.
type servedBlock struct {
	BlockNumber     string    `json:"blockNumber"`
	BlockHash       string    `json:"blockHash"`
	ParentHash      string    `json:"parentHash"`
	BlockTimestamp  int64     `json:"blockTimestamp"`
	TxCount         int64     `json:"txCount"`
	Transactions    []string  `json:"transactions"`
	ProposerDetails *proposer `json:"proposerDetails"`
}

// servedBlocks lists every block of the P- or X-chain from the data service.
func (c *comparer) servedBlocks(ctx context.Context, chain string) (map[uint64]servedBlock, error) {
	base := c.pf + "/v1/networks/testnet/blockchains/" + map[string]string{"P": "p-chain", "X": "x-chain"}[chain] + "/blocks?pageSize=100"
	out := map[uint64]servedBlock{}
	for next := base; next != ""; {
		code, body, err := httpGet(ctx, next)
		if err != nil {
			return nil, err
		}
		if code != 200 {
			return nil, fmt.Errorf("GET %s: HTTP %d: %s", next, code, truncate(string(body), 300))
		}
		var page struct {
			Blocks        []servedBlock `json:"blocks"`
			NextPageToken string        `json:"nextPageToken"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return nil, err
		}
		for _, b := range page.Blocks {
			out[parseUint(b.BlockNumber)] = b
		}
		next = ""
		if page.NextPageToken != "" {
			next = base + "&pageToken=" + url.QueryEscape(page.NextPageToken)
		}
	}
	return out, nil
}

// nodeBlock is a P or X block as the node's getBlockByHeight (JSON) shows it.
type nodeBlock struct {
	ID       string `json:"id"`
	ParentID string `json:"parentID"`
	Parent   string `json:"parent"` // X-chain blocks name it so
	Time     int64  `json:"time"`
	Txs      []struct {
		ID string `json:"id"`
	} `json:"txs"`
	Tx *struct {
		ID string `json:"id"`
	} `json:"tx"` // proposal and atomic blocks carry one tx
}

func (c *comparer) nodeBlockAt(ctx context.Context, chain string, h uint64) (*nodeBlock, error) {
	path, method := "/ext/bc/P", "platform.getBlockByHeight"
	if chain == ChainX {
		path, method = "/ext/bc/X", "avm.getBlockByHeight"
	}
	var r struct {
		Block nodeBlock `json:"block"`
	}
	if err := rpcCall(ctx, c.node+path, method, map[string]any{"height": strconv.FormatUint(h, 10), "encoding": "json"}, &r); err != nil {
		return nil, err
	}
	return &r.Block, nil
}

// blocksAndWrappers compares every P and X block of the data service with
// the node's block (ID, parent, time, txs) and, for its proposerDetails,
// with the proposervm wrapper the node's index API holds for that height.
func (c *comparer) blocksAndWrappers(ctx context.Context) {
	for _, chain := range []string{ChainP, ChainX} {
		kind := chain + " data /blocks"
		served, err := c.servedBlocks(ctx, chain)
		if err != nil {
			c.rep.check(kind, "listing", []string{err.Error()})
			continue
		}
		containers, err := c.indexContainers(ctx, chain)
		if err != nil {
			c.rep.check(kind, "node index", []string{err.Error()})
			continue
		}
		wrappers := map[uint64]proposer{}
		inner := map[uint64]string{}
		for _, fc := range containers {
			b, err := formatting.Decode(fc.Encoding, fc.Bytes)
			if err != nil {
				c.rep.check(kind, fmt.Sprintf("index %d", fc.Index), []string{err.Error()})
				continue
			}
			blk, err := block.ParseWithoutVerification(b)
			if err != nil {
				c.rep.check(kind, fmt.Sprintf("index %d", fc.Index), []string{err.Error()})
				continue
			}
			w := proposer{ID: blk.ID().String(), Parent: blk.ParentID().String()}
			if sb, ok := blk.(block.SignedBlock); ok {
				if sb.Proposer() != ids.EmptyNodeID {
					w.Node = sb.Proposer().String()
				}
				w.PHeight, w.Time = int64(sb.PChainHeight()), sb.Timestamp().Unix()
			}
			h := uint64(fc.Index) + 1 // the index starts after genesis
			wrappers[h] = w
			inner[h] = ids.ID(hashing.ComputeHash256Array(blk.Block())).String()
		}
		if uint64(len(containers)) != c.tips[chain] {
			c.rep.check(kind, "node index", []string{fmt.Sprintf("%d containers for tip %d", len(containers), c.tips[chain])})
		}
		if uint64(len(served)) != c.tips[chain]+1 {
			c.rep.check(kind, "listing", []string{fmt.Sprintf("%d blocks served, node has %d (heights 0..%d)", len(served), c.tips[chain]+1, c.tips[chain])})
		}
		for h := uint64(0); h <= c.tips[chain]; h++ {
			where := fmt.Sprintf("height %d", h)
			nb, err := c.nodeBlockAt(ctx, chain, h)
			if err != nil {
				c.rep.check(kind, where, []string{"node: " + err.Error()})
				continue
			}
			sb, ok := served[h]
			if !ok {
				c.rep.check(kind, where, []string{"not served"})
				continue
			}
			var d []string
			eq := func(what string, got, want any) {
				if !reflect.DeepEqual(got, want) {
					d = append(d, fmt.Sprintf("%s: permafrost %v, node %v", what, got, want))
				}
			}
			eq("blockHash", sb.BlockHash, nb.ID)
			parent := nb.ParentID
			if parent == "" {
				parent = nb.Parent
			}
			eq("parentHash", sb.ParentHash, parent)
			if h > 0 {
				eq("blockTimestamp", sb.BlockTimestamp, nb.Time)
			}
			txs := []string{}
			for _, tx := range nb.Txs {
				txs = append(txs, tx.ID)
			}
			if nb.Tx != nil {
				txs = append(txs, nb.Tx.ID)
			}
			got := append([]string{}, sb.Transactions...)
			sort.Strings(txs)
			sort.Strings(got)
			eq("transactions", got, txs)
			eq("txCount", sb.TxCount, int64(len(txs)))
			if h > 0 {
				eq("index container's inner block", inner[h], nb.ID)
				w := wrappers[h]
				if sb.ProposerDetails == nil {
					d = append(d, fmt.Sprintf("proposerDetails: none served, node's index wrapper %+v", w))
				} else {
					eq("proposerDetails", *sb.ProposerDetails, w)
				}
			}
			c.rep.check(kind, where, d)
		}
	}
}

// utxos compares, address by address, the UTXO set of the node
// (platform.getUTXOs / avm.getUTXOs) with the data service's unspent UTXOs
// of that address, by their bytes.
func (c *comparer) utxos(ctx context.Context) {
	for _, chain := range []string{ChainP, ChainX} {
		kind := chain + " UTXOs (data /utxos vs " + map[string]string{"P": "platform", "X": "avm"}[chain] + ".getUTXOs incl. atomic)"
		path, method := "/ext/bc/P", "platform.getUTXOs"
		if chain == ChainX {
			path, method = "/ext/bc/X", "avm.getUTXOs"
		}
		for _, a := range c.bechAddresses(chain) {
			var nr struct {
				UTXOs []string `json:"utxos"`
			}
			if err := rpcCall(ctx, c.node+path, method, map[string]any{"addresses": []string{a}, "limit": 1024, "encoding": "hex"}, &nr); err != nil {
				c.rep.check(kind, a, []string{"node: " + err.Error()})
				continue
			}
			// The data service lists, with a chain's own UTXOs, those
			// exported to it and not imported yet (in the node's shared
			// memory: getUTXOs with sourceChain).
			for _, src := range []string{"P", "X", "C"} {
				if src == chain {
					continue
				}
				var ar struct {
					UTXOs []string `json:"utxos"`
				}
				if err := rpcCall(ctx, c.node+path, method, map[string]any{"addresses": []string{a}, "sourceChain": src, "limit": 1024, "encoding": "hex"}, &ar); err != nil {
					c.rep.check(kind, a, []string{"node (sourceChain " + src + "): " + err.Error()})
					continue
				}
				nr.UTXOs = append(nr.UTXOs, ar.UTXOs...)
			}
			want := map[string]bool{}
			for _, u := range nr.UTXOs {
				b, err := formatting.Decode(formatting.Hex, u)
				if err != nil {
					c.rep.check(kind, a, []string{"node utxo: " + err.Error()})
					continue
				}
				want[hex.EncodeToString(b)] = true
			}
			got := map[string]bool{}
			base := c.pf + "/v1/networks/testnet/blockchains/" + map[string]string{"P": "p-chain", "X": "x-chain"}[chain] + "/utxos?pageSize=100&addresses=" + url.QueryEscape(a)
			var d []string
			for next := base; next != ""; {
				code, body, err := httpGet(ctx, next)
				if err != nil || code != 200 {
					d = append(d, fmt.Sprintf("GET %s: %d %v %s", next, code, err, truncate(string(body), 200)))
					break
				}
				var page struct {
					Utxos []struct {
						UtxoBytes string `json:"utxoBytes"`
						UtxoID    string `json:"utxoId"`
						Staked    bool   `json:"staked"`
					} `json:"utxos"`
					NextPageToken string `json:"nextPageToken"`
				}
				if err := json.Unmarshal(body, &page); err != nil {
					d = append(d, err.Error())
					break
				}
				for _, u := range page.Utxos {
					if u.Staked {
						continue // locked in a staker, not in the node's UTXO set until it ends
					}
					if u.UtxoBytes == "" {
						d = append(d, fmt.Sprintf("utxo %s: no utxoBytes", u.UtxoID))
						continue
					}
					got[strings.TrimPrefix(strings.ToLower(u.UtxoBytes), "0x")] = true
				}
				next = ""
				if page.NextPageToken != "" {
					next = base + "&pageToken=" + url.QueryEscape(page.NextPageToken)
				}
			}
			for u := range want {
				if !got[u] {
					d = append(d, "node's UTXO not served: "+truncate(u, 120))
				}
			}
			for u := range got {
				if !want[u] {
					d = append(d, "served UTXO the node does not have: "+truncate(u, 120))
				}
			}
			sort.Strings(d)
			c.rep.check(kind, a, d)
		}
	}
}

// evmChain is the node RPC URL and EVM chain ID of C or the L1.
func (c *comparer) evmChain(chain string) (rpcURL, chainID string) {
	if chain == ChainL1 {
		return c.n.L1RPCURL(), c.n.L1.EVMChainID.String()
	}
	return c.n.CRPCURL(), c.n.CEVMChainID.String()
}

// evmBalances compares eth_getBalance of every address at every height of
// C and the L1 with the data service's balances:getNative at that block.
func (c *comparer) evmBalances(ctx context.Context) {
	for _, chain := range []string{ChainC, ChainL1} {
		rpcURL, chainID := c.evmChain(chain)
		kind := chain + " native balance (getNative vs eth_getBalance)"
		for _, a := range c.evmAddresses(chain) {
			for h := uint64(0); h <= c.tips[chain]; h++ {
				where := fmt.Sprintf("%s at %d", a, h)
				var nb hexutil.Big
				if err := rpcCall(ctx, rpcURL, "eth_getBalance", []any{a, hexutil.EncodeUint64(h)}, &nb); err != nil {
					c.rep.check(kind, where, []string{"node: " + err.Error()})
					continue
				}
				code, body, err := httpGet(ctx, fmt.Sprintf("%s/v1/chains/%s/addresses/%s/balances:getNative?blockNumber=%d", c.pf, chainID, a, h))
				if err != nil || code != 200 {
					c.rep.check(kind, where, []string{fmt.Sprintf("permafrost: HTTP %d %v %s", code, err, truncate(string(body), 200))})
					continue
				}
				var g struct {
					NativeTokenBalance struct {
						Balance string `json:"balance"`
					} `json:"nativeTokenBalance"`
				}
				if err := json.Unmarshal(body, &g); err != nil {
					c.rep.check(kind, where, []string{err.Error()})
					continue
				}
				var d []string
				if want := (*big.Int)(&nb).String(); g.NativeTokenBalance.Balance != want {
					d = append(d, fmt.Sprintf("balance: permafrost %s, node %s", g.NativeTokenBalance.Balance, want))
				}
				c.rep.check(kind, where, d)
			}
		}
	}
}

// acceptance is when the node accepted each block: the index API's
// container timestamp for P, X and C (index i holds height i+1), the block
// timestamp for the L1 (no index API for it).
func (c *comparer) acceptance(ctx context.Context) map[string]map[int64]time.Time {
	out := map[string]map[int64]time.Time{}
	for _, chain := range []string{ChainP, ChainX, ChainC} {
		cs, err := c.indexContainers(ctx, chain)
		if err != nil {
			c.t.Logf("lag: %s index: %v", chain, err)
			continue
		}
		out[chain] = map[int64]time.Time{}
		for _, fc := range cs {
			out[chain][int64(fc.Index)+1] = fc.Timestamp
		}
	}
	out[ChainL1] = map[int64]time.Time{}
	for h := uint64(1); h <= c.tips[ChainL1]; h++ {
		var b struct {
			Timestamp hexutil.Uint64 `json:"timestamp"`
		}
		if err := rpcCall(ctx, c.n.L1RPCURL(), "eth_getBlockByNumber", []any{hexutil.EncodeUint64(h), false}, &b); err == nil {
			out[ChainL1][int64(h)] = time.Unix(int64(b.Timestamp), 0)
		}
	}
	return out
}

// erc20Balances compares, at every height, each address's balance of each
// ERC-20 the workload deployed on C and the L1 (balances:listErc20 at that
// block) with the contract's own balanceOf (eth_call at that block).
func (c *comparer) erc20Balances(ctx context.Context) {
	for _, chain := range []string{ChainC, ChainL1} {
		rpcURL, chainID := c.evmChain(chain)
		contracts := c.res.CContracts
		if chain == ChainL1 {
			contracts = c.res.L1Contracts
		}
		kind := chain + " ERC-20 balance (listErc20 vs balanceOf)"
		var tokens []string
		for name, a := range contracts {
			if name == "DevToken" || name == "WAVAX" || name == "FactoryChild" {
				tokens = append(tokens, strings.ToLower(a.Hex()))
			}
		}
		sort.Strings(tokens)
		if len(tokens) == 0 {
			continue
		}
		for _, a := range c.evmAddresses(chain) {
			for h := uint64(0); h <= c.tips[chain]; h++ {
				where := fmt.Sprintf("%s at %d", a, h)
				code, body, err := httpGet(ctx, fmt.Sprintf("%s/v1/chains/%s/addresses/%s/balances:listErc20?blockNumber=%d&filterSpamTokens=false&pageSize=100&contractAddresses=%s",
					c.pf, chainID, a, h, strings.Join(tokens, ",")))
				if err != nil || code != 200 {
					c.rep.check(kind, where, []string{fmt.Sprintf("permafrost: HTTP %d %v %s", code, err, truncate(string(body), 200))})
					continue
				}
				var g struct {
					Erc20TokenBalances []struct {
						Address string `json:"address"`
						Balance string `json:"balance"`
					} `json:"erc20TokenBalances"`
				}
				if err := json.Unmarshal(body, &g); err != nil {
					c.rep.check(kind, where, []string{err.Error()})
					continue
				}
				served := map[string]string{}
				for _, b := range g.Erc20TokenBalances {
					served[strings.ToLower(b.Address)] = b.Balance
				}
				var d []string
				for _, tok := range tokens {
					var out hexutil.Bytes
					data := "0x70a08231000000000000000000000000" + strings.TrimPrefix(a, "0x")
					if err := rpcCall(ctx, rpcURL, "eth_call", []any{map[string]any{"to": tok, "data": data}, hexutil.EncodeUint64(h)}, &out); err != nil {
						continue // no contract at that height yet
					}
					want := "0"
					if len(out) > 0 {
						want = new(big.Int).SetBytes(out).String()
					}
					got, ok := served[tok]
					if !ok {
						got = "0"
					}
					if got != want {
						d = append(d, fmt.Sprintf("token %s: permafrost %s, node balanceOf %s", tok, got, want))
					}
				}
				c.rep.check(kind, where, d)
			}
		}
	}
}

// evmTxs compares every EVM tx of the log (C and the L1) as the data
// service lists it among its sender's native transactions with the node's
// eth_getTransactionByHash and receipt.
func (c *comparer) evmTxs(ctx context.Context) {
	for _, r := range c.n.Log.Records() {
		if (r.Chain != ChainC && r.Chain != ChainL1) || r.Atomic {
			continue
		}
		rpcURL, chainID := c.evmChain(r.Chain)
		kind := r.Chain + " native tx (listNative vs eth_getTransactionByHash + receipt)"
		var tx struct {
			From     string         `json:"from"`
			To       *string        `json:"to"`
			Value    hexutil.Big    `json:"value"`
			Gas      hexutil.Uint64 `json:"gas"`
			Nonce    hexutil.Uint64 `json:"nonce"`
			Type     hexutil.Uint64 `json:"type"`
			GasPrice hexutil.Big    `json:"gasPrice"`
		}
		var rc struct {
			BlockHash         string         `json:"blockHash"`
			BlockNumber       hexutil.Uint64 `json:"blockNumber"`
			TransactionIndex  hexutil.Uint64 `json:"transactionIndex"`
			Status            hexutil.Uint64 `json:"status"`
			GasUsed           hexutil.Uint64 `json:"gasUsed"`
			EffectiveGasPrice hexutil.Big    `json:"effectiveGasPrice"`
			ContractAddress   *string        `json:"contractAddress"`
		}
		if err := rpcCall(ctx, rpcURL, "eth_getTransactionByHash", []any{r.TxID}, &tx); err != nil {
			c.rep.check(kind, r.TxID, []string{"node: " + err.Error()})
			continue
		}
		if err := rpcCall(ctx, rpcURL, "eth_getTransactionReceipt", []any{r.TxID}, &rc); err != nil {
			c.rep.check(kind, r.TxID, []string{"node: " + err.Error()})
			continue
		}
		want := map[string]string{
			"blockNumber": strconv.FormatUint(uint64(rc.BlockNumber), 10),
			"blockHash":   strings.ToLower(rc.BlockHash),
			"blockIndex":  strconv.FormatUint(uint64(rc.TransactionIndex), 10),
			"txStatus":    strconv.FormatUint(uint64(rc.Status), 10),
			"txType":      strconv.FormatUint(uint64(tx.Type), 10),
			"gasLimit":    strconv.FormatUint(uint64(tx.Gas), 10),
			"gasUsed":     strconv.FormatUint(uint64(rc.GasUsed), 10),
			"gasPrice":    (*big.Int)(&rc.EffectiveGasPrice).String(),
			"nonce":       strconv.FormatUint(uint64(tx.Nonce), 10),
			"from":        strings.ToLower(tx.From),
			"value":       (*big.Int)(&tx.Value).String(),
			"chainId":     chainID,
		}
		switch {
		case tx.To != nil:
			want["to"] = strings.ToLower(*tx.To)
		case rc.ContractAddress != nil:
			want["to"] = strings.ToLower(*rc.ContractAddress)
		}
		base := fmt.Sprintf("%s/v1/chains/%s/addresses/%s/transactions:listNative?pageSize=100", c.pf, chainID, strings.ToLower(tx.From))
		var found map[string]string
		var d []string
		for next := base; next != "" && found == nil; {
			code, body, err := httpGet(ctx, next)
			if err != nil || code != 200 {
				d = append(d, fmt.Sprintf("GET %s: %d %v %s", next, code, err, truncate(string(body), 200)))
				break
			}
			var page struct {
				Transactions []struct {
					BlockNumber string `json:"blockNumber"`
					BlockHash   string `json:"blockHash"`
					ChainID     string `json:"chainId"`
					BlockIndex  int64  `json:"blockIndex"`
					TxHash      string `json:"txHash"`
					TxStatus    string `json:"txStatus"`
					TxType      int64  `json:"txType"`
					GasLimit    string `json:"gasLimit"`
					GasUsed     string `json:"gasUsed"`
					GasPrice    string `json:"gasPrice"`
					Nonce       string `json:"nonce"`
					From        struct {
						Address string `json:"address"`
					} `json:"from"`
					To struct {
						Address string `json:"address"`
					} `json:"to"`
					Value string `json:"value"`
				} `json:"transactions"`
				NextPageToken string `json:"nextPageToken"`
			}
			if err := json.Unmarshal(body, &page); err != nil {
				d = append(d, err.Error())
				break
			}
			for _, t := range page.Transactions {
				if !strings.EqualFold(t.TxHash, r.TxID) {
					continue
				}
				found = map[string]string{
					"blockNumber": t.BlockNumber, "blockHash": strings.ToLower(t.BlockHash), "blockIndex": strconv.FormatInt(t.BlockIndex, 10),
					"txStatus": t.TxStatus, "txType": strconv.FormatInt(t.TxType, 10), "gasLimit": t.GasLimit, "gasUsed": t.GasUsed,
					"gasPrice": t.GasPrice, "nonce": t.Nonce, "from": strings.ToLower(t.From.Address), "value": t.Value, "chainId": t.ChainID,
				}
				if t.To.Address != "" || want["to"] != "" {
					found["to"] = strings.ToLower(t.To.Address)
				}
			}
			next = ""
			if page.NextPageToken != "" {
				next = base + "&pageToken=" + url.QueryEscape(page.NextPageToken)
			}
		}
		if found == nil && len(d) == 0 {
			d = append(d, "not among its sender's native transactions")
		}
		if found != nil {
			keys := make([]string, 0, len(want))
			for k := range want {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if found[k] != want[k] {
					d = append(d, fmt.Sprintf("%s: permafrost %q, node %q", k, found[k], want[k]))
				}
			}
		}
		c.rep.check(kind, r.TxID, d)
	}
}

// nftBalances compares, at the tip, each address's ERC-721 tokens
// (balances:listErc721) with ownerOf and its ERC-1155 balances
// (balances:listErc1155) with balanceOf, for token IDs 0..15 of the
// workload's DevNFT and DevMulti on the C-chain (the workload mints small
// IDs; a minted ID beyond them would show as served but not compared).
func (c *comparer) nftBalances(ctx context.Context) {
	nft, multi := c.res.CContracts["DevNFT"], c.res.CContracts["DevMulti"]
	if nft == (common.Address{}) || multi == (common.Address{}) {
		c.rep.notCompared("ERC-721/1155 balances: the workload deployed no DevNFT/DevMulti")
		return
	}
	nftAddr, multiAddr := strings.ToLower(nft.Hex()), strings.ToLower(multi.Hex())
	tip := hexutil.EncodeUint64(c.tips[ChainC])
	word := func(v uint64) string { return fmt.Sprintf("%064x", v) }
	owners := map[string]string{} // token ID -> owner, per ownerOf
	for id := uint64(0); id < 16; id++ {
		var out hexutil.Bytes
		if err := rpcCall(ctx, c.n.CRPCURL(), "eth_call", []any{map[string]any{"to": nftAddr, "data": "0x6352211e" + word(id)}, tip}, &out); err != nil {
			continue // no such token (never minted, or burned)
		}
		if len(out) == 32 {
			owners[strconv.FormatUint(id, 10)] = "0x" + hex.EncodeToString(out[12:])
		}
	}
	cid := c.n.CEVMChainID.String()
	for _, a := range c.evmAddresses(ChainC) {
		// ERC-721
		var d []string
		code, body, err := httpGet(ctx, fmt.Sprintf("%s/v1/chains/%s/addresses/%s/balances:listErc721?pageSize=100&contractAddress=%s", c.pf, cid, a, nftAddr))
		var g721 struct {
			Erc721TokenBalances []struct {
				TokenID string `json:"tokenId"`
			} `json:"erc721TokenBalances"`
		}
		if err != nil || code != 200 || json.Unmarshal(body, &g721) != nil {
			d = append(d, fmt.Sprintf("permafrost listErc721: HTTP %d %v %s", code, err, truncate(string(body), 200)))
		} else {
			got := map[string]bool{}
			for _, t := range g721.Erc721TokenBalances {
				got[t.TokenID] = true
			}
			for id, o := range owners {
				if (o == a) != got[id] {
					d = append(d, fmt.Sprintf("token %s: served for %s %v, node ownerOf %s", id, a, got[id], o))
				}
			}
		}
		c.rep.check("C ERC-721 owners (listErc721 vs ownerOf)", a, d)

		// ERC-1155
		d = nil
		code, body, err = httpGet(ctx, fmt.Sprintf("%s/v1/chains/%s/addresses/%s/balances:listErc1155?pageSize=100&contractAddress=%s", c.pf, cid, a, multiAddr))
		var g1155 struct {
			Erc1155TokenBalances []struct {
				TokenID string `json:"tokenId"`
				Balance string `json:"balance"`
			} `json:"erc1155TokenBalances"`
		}
		if err != nil || code != 200 || json.Unmarshal(body, &g1155) != nil {
			d = append(d, fmt.Sprintf("permafrost listErc1155: HTTP %d %v %s", code, err, truncate(string(body), 200)))
		} else {
			got := map[string]string{}
			for _, t := range g1155.Erc1155TokenBalances {
				got[t.TokenID] = t.Balance
			}
			for id := uint64(0); id < 16; id++ {
				var out hexutil.Bytes
				data := "0x00fdd58e" + word(0)[:24] + strings.TrimPrefix(a, "0x") + word(id)
				if err := rpcCall(ctx, c.n.CRPCURL(), "eth_call", []any{map[string]any{"to": multiAddr, "data": data}, tip}, &out); err != nil {
					d = append(d, "node balanceOf: "+err.Error())
					break
				}
				want := new(big.Int).SetBytes(out).String()
				k := strconv.FormatUint(id, 10)
				g, ok := got[k]
				if !ok {
					g = "0"
				}
				if g != want {
					d = append(d, fmt.Sprintf("token %s: permafrost %s, node balanceOf %s", k, g, want))
				}
			}
		}
		c.rep.check("C ERC-1155 balances (listErc1155 vs balanceOf)", a, d)
	}
}
