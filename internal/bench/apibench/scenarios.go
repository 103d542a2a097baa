package apibench

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand"
	"net"
	"net/url"
	"strings"

	"github.com/permafrost-dev/permafrost/internal/api"
	evmdata "github.com/permafrost-dev/permafrost/internal/api/data/evm"
	primarydata "github.com/permafrost-dev/permafrost/internal/api/data/primary"
	"github.com/permafrost-dev/permafrost/internal/api/icm"
	apimetrics "github.com/permafrost-dev/permafrost/internal/api/metrics"
	"github.com/permafrost-dev/permafrost/internal/store"
)

// Serve starts the data service on db as serve wires it (router, guard with
// its health checks and rate limiter, the ICM, primary-network and EVM
// routes) on a free 127.0.0.1 port; the budgets are raised so the load is
// never rate limited. It returns the base URL; the server stops with ctx.
func Serve(ctx context.Context, db *store.DB, log *slog.Logger) (string, <-chan error, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	network, err := api.LoadNetwork(ctx, db, networkName)
	if err != nil {
		return "", nil, err
	}
	pager, err := api.LoadPager(ctx, db)
	if err != nil {
		return "", nil, err
	}
	const unlimited = 1 << 50
	guard := api.NewGuard(db, api.LimitsConfig{AnonymousCU: unlimited, MetricsPerIPPerMinute: unlimited}, log)
	mux := api.NewMux(log)
	guard.Install(mux)
	icm.Register(mux, icm.Deps{DB: db, Network: network, Pager: pager, Log: log})
	primarydata.Register(mux, primarydata.Deps{DB: db, Network: network, Pager: pager, Log: log, Health: guard.Health()})
	evmdata.Register(mux, evmdata.Deps{DB: db, Network: network, Pager: pager, Log: log, Health: guard.Health()})
	apimetrics.Register(mux, apimetrics.Deps{DB: db, Network: network, Tokens: api.NewServerTokens(db, nil), Log: log, Health: guard.Health()})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := api.NewHTTPServerLimits(l.Addr().String(), mux, guard.Config())
	done := make(chan error, 1)
	go func() { done <- guard.Serve(ctx, srv, l) }()
	return "http://" + l.Addr().String(), done, nil
}

// pick returns a random element of hot with probability pHot, else of cold.
func pick(r *rand.Rand, pHot float64, hot, cold []string) string {
	if len(cold) == 0 || (len(hot) > 0 && r.Float64() < pHot) {
		return hot[r.Intn(len(hot))]
	}
	return cold[r.Intn(len(cold))]
}

func oneOf(r *rand.Rand, vs ...string) string { return vs[r.Intn(len(vs))] }

// q builds a query string from name/value pairs, skipping empty values.
func q(kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			v.Set(kv[i], kv[i+1])
		}
	}
	if len(v) == 0 {
		return ""
	}
	return "?" + v.Encode()
}

func maybe(r *rand.Rand, p float64, v string) string {
	if r.Float64() < p {
		return v
	}
	return ""
}

// Scenarios are the query mixes of every data-service endpoint over a
// dataset: first pages and continued pages, busy ("hot") and quiet ("cold")
// keys, and the filters and sort orders clients use.
func Scenarios(m *Manifest) []Scenario {
	net := "/v1/networks/" + m.Network
	chain := "/v1/chains/" + m.EVMChainID
	pageSize := func(r *rand.Rand, sizes ...string) string { return oneOf(r, sizes...) }
	utxos := func(chainAlias string, hot, cold []string, withAsset bool) func(r *rand.Rand) string {
		return func(r *rand.Rand) string {
			addrs := pick(r, 0.4, hot, cold)
			if r.Intn(10) == 0 { // a wallet asking for several addresses
				addrs += "," + pick(r, 0, hot, cold) + "," + pick(r, 0, hot, cold)
			}
			asset := ""
			if withAsset {
				asset = m.OtherAssetIDs[r.Intn(len(m.OtherAssetIDs))]
			}
			return net + "/blockchains/" + chainAlias + "/utxos" + q("addresses", addrs,
				"pageSize", pageSize(r, "10", "50", "100"), "sortBy", maybe(r, 0.3, "amount"),
				"sortOrder", maybe(r, 0.3, "desc"), "includeSpent", maybe(r, 0.3, "true"), "assetId", asset)
		}
	}
	evmAddr := func(r *rand.Rand) string { return pick(r, 0.4, m.EVMHot, m.EVMCold) }
	collections := append(append([]string{}, m.ERC721...), m.ERC1155...)
	tokens := func(r *rand.Rand) string {
		switch n := r.Intn(10); {
		case n < 4:
			return m.ERC20Hot[r.Intn(len(m.ERC20Hot))]
		case n < 7:
			return pick(r, 0, nil, m.ERC20Cold)
		case n < 9:
			return m.ERC721[r.Intn(len(m.ERC721))]
		}
		return m.ERC1155[r.Intn(len(m.ERC1155))]
	}
	list := func(name string, first func(r *rand.Rand) string) Scenario {
		return Scenario{Name: name, First: first, Follow: 0.5, Depth: 5}
	}
	get := func(name string, first func(r *rand.Rand) string) Scenario {
		return Scenario{Name: name, First: first}
	}
	return []Scenario{
		list("primary.assetTransactions", func(r *rand.Rand) string {
			asset := m.AvaxAssetID
			if r.Intn(10) < 3 {
				asset = m.OtherAssetIDs[r.Intn(len(m.OtherAssetIDs))]
			}
			return net + "/blockchains/x-chain/assets/" + asset + "/transactions" +
				q("pageSize", pageSize(r, "10", "25"), "txTypes", maybe(r, 0.1, "BaseTx"))
		}),
		list("primary.utxos.X", utxos("x-chain", m.XHotAddresses, m.XColdAddresses, false)),
		// The assetId filter apart: its cost is the address's UTXOs, not the page.
		list("primary.utxos.X.assetId", utxos("x-chain", m.XHotAddresses, m.XColdAddresses, true)),
		list("primary.utxos.P", utxos("p-chain", m.PHotAddresses, m.PColdAddresses, false)),
		list("primary.blocks", func(r *rand.Rand) string {
			return net + "/blockchains/" + oneOf(r, "p-chain", "x-chain") + "/blocks" + q("pageSize", pageSize(r, "10", "25"))
		}),
		list("primary.rewards", func(r *rand.Rand) string {
			if r.Intn(10) < 3 {
				return net + "/rewards" + q("nodeIds", pick(r, 0.5, m.HotNodes, m.ColdNodes), "sortOrder", maybe(r, 0.2, "asc"))
			}
			return net + "/rewards" + q("addresses", pick(r, 0.4, m.PHotAddresses, m.RewardAddrs),
				"pageSize", pageSize(r, "10", "50"), "sortOrder", maybe(r, 0.2, "asc"))
		}),
		list("primary.validators", func(r *rand.Rand) string {
			return net + "/validators/" + pick(r, 0.5, m.HotNodes, m.ColdNodes) +
				q("validationStatus", maybe(r, 0.3, oneOf(r, "completed", "active")), "sortOrder", maybe(r, 0.2, "asc"))
		}),
		// Network, chains, subnets, blocks and assets (issue 17, part A).
		get("primary.network", func(r *rand.Rand) string { return net }),
		list("primary.blockchains", func(r *rand.Rand) string {
			// The default page (100) and smaller ones: each item carries its genesis.
			return net + "/blockchains" + q("pageSize", pageSize(r, "", "10", "50"), "sortOrder", maybe(r, 0.3, "desc"))
		}),
		get("primary.blockchain", func(r *rand.Rand) string {
			return net + "/blockchains/" + oneOf(r, m.ChainIDs...)
		}),
		list("primary.subnets", func(r *rand.Rand) string {
			return net + "/subnets" + q("pageSize", pageSize(r, "", "10", "50"), "sortOrder", maybe(r, 0.3, "desc"))
		}),
		get("primary.subnet", func(r *rand.Rand) string {
			return net + "/subnets/" + oneOf(r, m.SubnetIDs...)
		}),
		get("primary.block", func(r *rand.Rand) string {
			alias, n := "p-chain", m.PBlocks
			if r.Intn(2) == 0 {
				alias, n = "x-chain", m.XBlocks
			}
			return net + "/blockchains/" + alias + "/blocks/" + fmt.Sprint(r.Int63n(n))
		}),
		list("primary.nodeBlocks", func(r *rand.Rand) string {
			return net + "/blockchains/" + oneOf(r, "p-chain", "x-chain") + "/nodes/" + pick(r, 0.5, m.ProposerNodes[:2], m.ProposerNodes) +
				"/blocks" + q("pageSize", pageSize(r, "10", "25", "100"))
		}),
		get("primary.asset", func(r *rand.Rand) string {
			return net + "/blockchains/x-chain/assets/" + oneOf(r, append([]string{m.AvaxAssetID}, m.OtherAssetIDs...)...)
		}),
		get("primary.chainIds", func(r *rand.Rand) string {
			return net + "/addresses:listChainIds" + q("addresses", pick(r, 0.4, m.XHotAddresses, m.PColdAddresses)+","+pick(r, 0.4, m.PHotAddresses, m.XColdAddresses))
		}),
		// Issue #17 part B: the latest transactions of a chain or of
		// addresses, staking txs, balances, last activity and the staking
		// listings.
		list("primary.transactions", func(r *rand.Rand) string {
			alias, hot, cold := "x-chain", m.XHotAddresses, m.XColdAddresses
			if r.Intn(2) == 0 {
				alias, hot, cold = "p-chain", m.PHotAddresses, m.PColdAddresses
			}
			addrs := ""
			if r.Intn(10) < 6 {
				addrs = pick(r, 0.4, hot, cold)
				if r.Intn(10) == 0 {
					addrs += "," + pick(r, 0, hot, cold)
				}
			}
			return net + "/blockchains/" + alias + "/transactions" + q("addresses", addrs, "pageSize", pageSize(r, "10", "25"),
				"sortOrder", maybe(r, 0.2, "asc"), "txTypes", maybe(r, 0.1, "BaseTx"))
		}),
		list("primary.transactions.listStaking", func(r *rand.Rand) string {
			return net + "/blockchains/p-chain/transactions:listStaking" + q("pageSize", pageSize(r, "10", "25"),
				"addresses", maybe(r, 0.3, pick(r, 0.4, m.PHotAddresses, m.RewardAddrs)))
		}),
		get("primary.balances", func(r *rand.Rand) string {
			if r.Intn(2) == 0 {
				return net + "/blockchains/x-chain/balances" + q("addresses", pick(r, 0.4, m.XHotAddresses, m.XColdAddresses))
			}
			return net + "/blockchains/p-chain/balances" + q("addresses", pick(r, 0.4, m.PHotAddresses, m.PColdAddresses))
		}),
		get("primary.lastActivity", func(r *rand.Rand) string {
			if r.Intn(2) == 0 {
				return net + "/blockchains/x-chain/lastActivityTimestampByAddresses" + q("addresses", pick(r, 0.4, m.XHotAddresses, m.XColdAddresses))
			}
			return net + "/blockchains/p-chain/lastActivityTimestampByAddresses" + q("addresses", pick(r, 0.4, m.PHotAddresses, m.PColdAddresses))
		}),
		list("primary.validatorList", func(r *rand.Rand) string {
			return net + "/validators" + q("pageSize", pageSize(r, "10", "50"),
				"validationStatus", maybe(r, 0.4, oneOf(r, "active", "completed")),
				"sortBy", maybe(r, 0.4, oneOf(r, "timeRemaining", "delegationFee", "delegationCapacity")),
				"nodeIds", maybe(r, 0.2, pick(r, 0.5, m.HotNodes, m.ColdNodes)),
				"minTimeRemaining", maybe(r, 0.1, "3600"))
		}),
		list("primary.delegators", func(r *rand.Rand) string {
			return net + "/delegators" + q("pageSize", pageSize(r, "10", "50"),
				"nodeIds", maybe(r, 0.3, pick(r, 0.5, m.HotNodes, m.ColdNodes)),
				"rewardAddresses", maybe(r, 0.2, pick(r, 0.5, m.RewardAddrs, m.PColdAddresses)),
				"delegationStatus", maybe(r, 0.3, oneOf(r, "active", "completed")))
		}),
		list("primary.pendingRewards", func(r *rand.Rand) string {
			if r.Intn(2) == 0 {
				return net + "/rewards:listPending" + q("nodeIds", pick(r, 0.5, m.HotNodes, m.ColdNodes))
			}
			return net + "/rewards:listPending" + q("addresses", pick(r, 0.5, m.RewardAddrs, m.PColdAddresses))
		}),
		list("primary.l1Validators", func(r *rand.Rand) string {
			return net + "/l1Validators" + q("pageSize", pageSize(r, "10", "50"), "includeInactiveL1Validators", maybe(r, 0.3, "true"))
		}),
		get("evm.chains", func(r *rand.Rand) string {
			return oneOf(r, "/v1/chains", chain)
		}),
		get("evm.balances.getNative", func(r *rand.Rand) string {
			return chain + "/addresses/" + evmAddr(r) + "/balances:getNative" + q("blockNumber", maybe(r, 0.3, fmt.Sprint(1+r.Int63n(m.EVMBlocks-1))))
		}),
		list("evm.balances.listErc20", func(r *rand.Rand) string {
			return chain + "/addresses/" + evmAddr(r) + "/balances:listErc20" +
				q("pageSize", pageSize(r, "10", "50"), "blockNumber", maybe(r, 0.2, fmt.Sprint(1+r.Int63n(m.EVMBlocks-1))))
		}),
		list("evm.balances.listErc721", func(r *rand.Rand) string {
			return chain + "/addresses/" + evmAddr(r) + "/balances:listErc721" + q("pageSize", pageSize(r, "10", "50"))
		}),
		list("evm.balances.listErc1155", func(r *rand.Rand) string {
			return chain + "/addresses/" + pick(r, 0.5, m.ERC1155Holders[:min(5, len(m.ERC1155Holders))], m.ERC1155Holders) +
				"/balances:listErc1155" + q("pageSize", pageSize(r, "10", "50"),
				"blockNumber", maybe(r, 0.2, fmt.Sprint(1+r.Int63n(m.EVMBlocks-1))))
		}),
		list("evm.balances.listCollectibles", func(r *rand.Rand) string {
			a := evmAddr(r)
			if r.Intn(2) == 0 {
				a = m.ERC1155Holders[r.Intn(len(m.ERC1155Holders))]
			}
			return chain + "/addresses/" + a + "/balances:listCollectibles" + q("pageSize", pageSize(r, "10", "50"))
		}),
		list("evm.tokens.transfers", func(r *rand.Rand) string {
			return chain + "/tokens/" + tokens(r) + "/transfers" + q("pageSize", pageSize(r, "10", "100"))
		}),
		list("evm.transactions.listNative", func(r *rand.Rand) string {
			return chain + "/addresses/" + evmAddr(r) + "/transactions:listNative" + q("pageSize", pageSize(r, "10", "100"))
		}),
		list("evm.transactions.listInternals", func(r *rand.Rand) string {
			a := evmAddr(r)
			if r.Intn(10) == 0 { // the wrapper: party to every internal tx
				a = m.EVMWrapper
			}
			return chain + "/addresses/" + a + "/transactions:listInternals" + q("pageSize", pageSize(r, "10", "100"),
				"startBlock", maybe(r, 0.2, fmt.Sprint(1+r.Int63n(m.EVMBlocks-1))))
		}),
		list("evm.nfts.collectionTokens", func(r *rand.Rand) string {
			return chain + "/nfts/collections/" + collections[r.Intn(len(collections))] + "/tokens" + q("pageSize", pageSize(r, "10", "50"))
		}),
		get("evm.nfts.token", func(r *rand.Rand) string {
			return chain + "/nfts/collections/" + m.ERC721[0] + "/tokens/" + m.NFTTokenIDs[r.Intn(len(m.NFTTokenIDs))]
		}),
		get("evm.contractMetadata", func(r *rand.Rand) string {
			return chain + "/addresses/" + tokens(r)
		}),
		// Blocks, transactions and address histories (issue #18).
		list("evm.blocks", func(r *rand.Rand) string {
			return chain + "/blocks" + q("pageSize", pageSize(r, "10", "100"))
		}),
		list("evm.blocks.allChains", func(r *rand.Rand) string {
			return "/v1/blocks" + q("pageSize", pageSize(r, "10", "100"), "network", maybe(r, 0.3, m.Network))
		}),
		get("evm.blocks.get", func(r *rand.Rand) string {
			if r.Intn(2) == 0 {
				return chain + "/blocks/" + m.EVMBlockHashes[r.Intn(len(m.EVMBlockHashes))]
			}
			return chain + "/blocks/" + fmt.Sprint(r.Int63n(m.EVMBlocks))
		}),
		list("evm.blocks.transactions", func(r *rand.Rand) string {
			return chain + "/blocks/" + fmt.Sprint(1+r.Int63n(m.EVMBlocks-1)) + "/transactions" + q("pageSize", pageSize(r, "10", "100"))
		}),
		list("evm.transactions.latest", func(r *rand.Rand) string {
			return chain + "/transactions" + q("pageSize", pageSize(r, "10", "100"), "status", maybe(r, 0.3, oneOf(r, "success", "failed")))
		}),
		list("evm.transactions.allChains", func(r *rand.Rand) string {
			return "/v1/transactions" + q("pageSize", pageSize(r, "10", "100"), "status", maybe(r, 0.2, "success"))
		}),
		get("evm.transactions.get", func(r *rand.Rand) string {
			return chain + "/transactions/" + m.EVMTxHashes[r.Intn(len(m.EVMTxHashes))]
		}),
		list("evm.address.transactions", func(r *rand.Rand) string {
			v := oneOf(r, "/v1", "/v2")
			return v + "/chains/" + m.EVMChainID + "/addresses/" + evmAddr(r) + "/transactions" +
				q("pageSize", pageSize(r, "10", "100"), "sortOrder", maybe(r, 0.2, "asc"),
					"startBlock", maybe(r, 0.2, fmt.Sprint(r.Int63n(m.EVMBlocks))))
		}),
		list("evm.address.listErc", func(r *rand.Rand) string {
			a := evmAddr(r)
			op := oneOf(r, "listErc20", "listErc20", "listErc721", "listErc1155")
			if op == "listErc1155" {
				a = m.ERC1155Holders[r.Intn(len(m.ERC1155Holders))]
			}
			return chain + "/addresses/" + a + "/transactions:" + op + q("pageSize", pageSize(r, "10", "100"))
		}),
		list("evm.contracts.deployments", func(r *rand.Rand) string {
			return chain + "/contracts/" + m.EVMDeployers[r.Intn(len(m.EVMDeployers))] + "/deployments" + q("pageSize", pageSize(r, "1", "10"))
		}),
		get("evm.contracts.getDeployment", func(r *rand.Rand) string {
			return chain + "/contracts/" + m.EVMDeployed[r.Intn(len(m.EVMDeployed))] + "/transactions:getDeployment"
		}),
		get("evm.address.chains", func(r *rand.Rand) string {
			return "/v1/address/" + evmAddr(r) + "/chains"
		}),
		list("icm.messages", func(r *rand.Rand) string {
			switch r.Intn(5) {
			case 0:
				return "/v1/icm/messages" + q("sourceBlockchainId", m.CBlockchainID)
			case 1:
				return "/v1/icm/messages" + q("destinationBlockchainId", m.ICMRemoteChain)
			case 2:
				return "/v1/icm/messages" + q("from", m.ICMAddresses[r.Intn(len(m.ICMAddresses))])
			}
			return "/v1/icm/messages" + q("pageSize", pageSize(r, "10", "50"), "network", maybe(r, 0.5, m.Network))
		}),
		get("icm.message", func(r *rand.Rand) string {
			return "/v1/icm/messages/" + m.ICMMessageIDs[r.Intn(len(m.ICMMessageIDs))]
		}),
		list("icm.addressMessages", func(r *rand.Rand) string {
			return "/v1/icm/addresses/" + m.ICMAddresses[r.Intn(len(m.ICMAddresses))] + "/messages" + q("pageSize", pageSize(r, "10", "50"))
		}),

		// Metrics API v2, EVM chains (issue #21 part A): every metric at
		// every interval, the rolling windows, the chain listing, and token
		// holders above a threshold over a range.
		list("metrics.chainMetrics", func(r *rand.Rand) string {
			metric := oneOf(r, "activeAddresses", "activeSenders", "cumulativeTxCount", "cumulativeAddresses",
				"cumulativeContracts", "cumulativeDeployers", "contracts", "deployers", "gasUsed", "txCount", "avgGps",
				"maxGps", "avgTps", "maxTps", "avgGasPrice", "maxGasPrice", "feesPaid")
			return "/v2/chains/" + m.EVMChainID + "/metrics/" + metric + q("timeInterval", oneOf(r, "hour", "hour", "day", "week", "month"),
				"pageSize", pageSize(r, "10", "100", "2160"), "startTimestamp", maybe(r, 0.3, fmt.Sprint(1_700_000_000+r.Int63n(m.EVMBlocks*2))))
		}),
		get("metrics.rollingWindow", func(r *rand.Rand) string {
			return "/v2/chains/" + m.EVMChainID + "/rollingWindowMetrics/" + oneOf(r, "gasUsed", "txCount", "avgGps", "maxGps",
				"avgTps", "maxTps", "avgGasPrice", "maxGasPrice", "feesPaid", "contracts", "deployers", "activeAddresses", "activeSenders")
		}),
		// The document's aggregate chain ids over the indexed chains (#21).
		list("metrics.aggregates", func(r *rand.Rand) string {
			if r.Intn(3) == 0 {
				return "/v2/chains/" + oneOf(r, "total", "testnet") + "/rollingWindowMetrics/" + oneOf(r, "txCount", "maxTps", "activeAddresses", "deployers")
			}
			return "/v2/chains/" + oneOf(r, "total", "testnet") + "/metrics/" + oneOf(r, "txCount", "activeAddresses", "cumulativeAddresses", "avgTps", "maxGasPrice") +
				q("timeInterval", oneOf(r, "hour", "day", "week"), "pageSize", pageSize(r, "10", "100", "2160"))
		}),
		get("metrics.chains", func(r *rand.Rand) string {
			return oneOf(r, "/v2/chains", "/v2/chains/"+m.EVMChainID, "/v2/chains?network="+oneOf(r, "testnet", "mainnet"))
		}),
		list("metrics.tokenBalances", func(r *rand.Rand) string {
			token := m.ERC20Hot[r.Intn(len(m.ERC20Hot))]
			if r.Intn(2) == 0 {
				token = pick(r, 0, nil, append(append([]string{}, m.ERC20Cold...), m.ERC721...))
			}
			from := 1_700_000_000 + r.Int63n(m.EVMBlocks*2)
			return "/v2/chains/" + m.EVMChainID + "/contracts/" + token + "/balances" + q("threshold", oneOf(r, "1", "1000000000000000000"),
				"pageSize", pageSize(r, "10", "100"), "startTimestamp", maybe(r, 0.5, fmt.Sprint(from)),
				"endTimestamp", maybe(r, 0.5, fmt.Sprint(from+r.Int63n(86400))))
		}),
	}
}

// Markdown renders results as a table (one row per endpoint).
func Markdown(title string, rs []Result) string {
	var b strings.Builder
	if title != "" {
		b.WriteString(title + "\n\n")
	}
	b.WriteString("| Endpoint | Requests | Next pages | req/s | p50 ms | p99 ms | max ms | Errors |")
	// The CPU columns when the run metered the serving side (Load.Meters).
	var meters []string
	if len(rs) > 0 {
		for _, u := range rs[0].CPU {
			meters = append(meters, u.Meter)
		}
	}
	for _, m := range meters {
		b.WriteString(" " + m + " CPU ms/req |")
	}
	b.WriteString("\n|---|---:|---:|---:|---:|---:|---:|---:|" + strings.Repeat("---:|", len(meters)) + "\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "| %s | %d | %d | %.0f | %.1f | %.1f | %.1f | %d |", r.Name, r.Requests, r.NextPages, r.PerSecond,
			ms(r.P50), ms(r.P99), ms(r.Max), r.Errors)
		for i := range meters {
			v := 0.0
			if i < len(r.CPU) && r.Requests > 0 {
				v = ms(r.CPU[i].CPU) / float64(r.Requests)
			}
			fmt.Fprintf(&b, " %.3f |", v)
		}
		b.WriteString("\n")
	}
	return b.String()
}
