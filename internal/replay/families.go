package replay

import (
	"net/http"
	"reflect"

	"github.com/ava-labs/avalanchego/api/info"
	"github.com/ava-labs/avalanchego/vms/avm"
	"github.com/ava-labs/avalanchego/vms/platformvm"
)

// familyKind says which server implementation answers an endpoint.
type familyKind int

const (
	// avalancheFamily: gorilla/rpc json2 with avalanchego's codec (info,
	// platform, avm, and coreth's avax API).
	avalancheFamily familyKind = iota
	// evmFamily: the go-ethereum rpc server (coreth's /rpc).
	evmFamily
)

// family describes one API as the node serves it.
type family struct {
	name string
	kind familyKind

	// Avalanche APIs: the gorilla service name and its methods, keyed by the
	// capitalised Go method name as gorilla looks them up. The value is the
	// method's argument type, or nil when it is not known (coreth's avax API,
	// whose package cannot be built here).
	service string
	methods map[string]reflect.Type

	// EVM API: method names the node serves.
	evmMethods map[string]bool

	// index answers index API calls the recorder did not make (index
	// families of a recording that has that index only).
	index *indexModel
}

// newFamilies returns the API family of every node path of a recording.
//
// The platform, avm and info method sets and argument types come from the
// avalanchego v1.14.2 service types by reflection, the same way gorilla/rpc
// registers them on the node, so "is this a method of the node" and "are these
// arguments the same call" are answered as the recorded node answers them.
func newFamilies() map[string]*family {
	platform := &family{name: "platform", kind: avalancheFamily, service: "platform",
		methods: serviceMethods(reflect.TypeOf((*platformvm.Service)(nil)))}
	x := &family{name: "avm", kind: avalancheFamily, service: "avm",
		methods: serviceMethods(reflect.TypeOf((*avm.Service)(nil)))}
	inf := &family{name: "info", kind: avalancheFamily, service: "info",
		methods: serviceMethods(reflect.TypeOf((*info.Info)(nil)))}
	// coreth's AvaxAPI (plugin/evm/atomic/vm/api.go); coreth cannot be built
	// in this module, so its method names are listed by hand.
	avax := &family{name: "avax", kind: avalancheFamily, service: "avax", methods: map[string]reflect.Type{
		"Version": nil, "GetUTXOs": nil, "IssueTx": nil, "GetAtomicTxStatus": nil, "GetAtomicTx": nil,
	}}
	evm := &family{name: "evm", kind: evmFamily, evmMethods: evmMethodSet()}
	out := map[string]*family{
		"/ext/info":      inf,
		"/ext/bc/P":      platform,
		"/ext/bc/X":      x,
		"/ext/bc/C/rpc":  evm,
		"/ext/bc/C/avax": avax,
	}
	for _, p := range indexPaths {
		out[p] = newIndexFamily(p)
	}
	return out
}

// debugTracerMethods are the debug_* methods coreth serves when the chain
// config's eth-apis include "debug-tracer"; the replay serves them when the
// recording has any debug_* answer (the node ran with that API).
var debugTracerMethods = []string{"debug_traceBlockByNumber", "debug_traceBlockByHash", "debug_traceTransaction",
	"debug_traceCall", "debug_intermediateRoots", "debug_standardTraceBlockToFile", "debug_standardBadBlockTraceToFile",
	"debug_traceBadBlock"}

var (
	httpRequestType = reflect.TypeOf((*http.Request)(nil))
	errorType       = reflect.TypeOf((*error)(nil)).Elem()
)

// serviceMethods mirrors gorilla/rpc's registration rule: exported methods
// func(*http.Request, *Args, *Reply) error.
func serviceMethods(rcvr reflect.Type) map[string]reflect.Type {
	out := make(map[string]reflect.Type)
	for i := 0; i < rcvr.NumMethod(); i++ {
		m := rcvr.Method(i)
		t := m.Type
		if m.PkgPath != "" || t.NumIn() != 4 || t.NumOut() != 1 {
			continue
		}
		if t.In(1) != httpRequestType || t.In(2).Kind() != reflect.Pointer ||
			t.In(3).Kind() != reflect.Pointer || t.Out(0) != errorType {
			continue
		}
		out[m.Name] = t.In(2).Elem()
	}
	return out
}

// evmMethodSet lists the methods of coreth's default HTTP APIs (eth, eth
// filters, net, web3 and coreth's own eth additions). Calls to other methods
// get the node's "method does not exist" error.
func evmMethodSet() map[string]bool {
	names := []string{
		// eth (internal/ethapi, eth/filters, coreth additions)
		"eth_accounts", "eth_baseFee", "eth_blockNumber", "eth_call", "eth_chainId",
		"eth_createAccessList", "eth_estimateGas", "eth_feeHistory", "eth_fillTransaction",
		"eth_gasPrice", "eth_getBalance", "eth_getBlockByHash", "eth_getBlockByNumber",
		"eth_getBlockReceipts", "eth_getBlockTransactionCountByHash",
		"eth_getBlockTransactionCountByNumber", "eth_getChainConfig", "eth_getCode",
		"eth_getFilterChanges", "eth_getFilterLogs", "eth_getHeaderByHash",
		"eth_getHeaderByNumber", "eth_getLogs", "eth_getProof",
		"eth_getRawTransactionByBlockHashAndIndex", "eth_getRawTransactionByBlockNumberAndIndex",
		"eth_getRawTransactionByHash", "eth_getStorageAt", "eth_getTransactionByBlockHashAndIndex",
		"eth_getTransactionByBlockNumberAndIndex", "eth_getTransactionByHash",
		"eth_getTransactionCount", "eth_getTransactionReceipt", "eth_getUncleByBlockHashAndIndex",
		"eth_getUncleByBlockNumberAndIndex", "eth_getUncleCountByBlockHash",
		"eth_getUncleCountByBlockNumber", "eth_maxPriorityFeePerGas", "eth_newBlockFilter",
		"eth_newFilter", "eth_newPendingTransactionFilter", "eth_pendingTransactions",
		"eth_resend", "eth_sendRawTransaction", "eth_sendTransaction", "eth_sign",
		"eth_signTransaction", "eth_suggestPriceOptions", "eth_syncing", "eth_uninstallFilter",
		// net, web3
		"net_listening", "net_peerCount", "net_version", "web3_clientVersion", "web3_sha3",
	}
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}
