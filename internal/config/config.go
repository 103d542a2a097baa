// Package config turns flags, PERMAFROST_* environment variables and an
// optional YAML file into one Config. Precedence: flag > environment > file > default.
package config

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ava-labs/libevm/common"
	"gopkg.in/yaml.v3"
)

// Config is everything the subcommands need.
type Config struct {
	DB            string
	Listen        string
	MetricsListen string
	// AdminListen is where GET /metrics (Prometheus) is served; "": not served.
	AdminListen string
	Node        string
	EVMRPC      []string
	// EVMGenesis are genesis files of --evm-rpc chains outside this network.
	EVMGenesis []string
	// ICMAllow and ICMDeny limit which contracts' TeleporterMessenger events
	// are indexed (default: any contract that proves itself a messenger).
	ICMAllow, ICMDeny []string
	NetworkName       string
	Genesis           string
	LogFormat         string
	BatchSize         int
	// RPCBatch and RPCConcurrency shape the EVM chains' block fetches
	// (heights per JSON-RPC batch, batches in flight; 0: the source's
	// defaults).
	RPCBatch       int
	RPCConcurrency int
	// CatchUpLag enters a bulk catch-up (secondary indexes deferred) when a
	// chain is more than this many blocks behind its node (0: off).
	CatchUpLag uint64
	// NoTraces: EVM blocks are fetched without call traces even when the
	// node serves them (docs/operations.md).
	NoTraces bool
	Poll     time.Duration
	// PublicURL is the absolute base URL clients reach this server at (export download links).
	PublicURL string
	ExportDir string

	// API limits (zero: the api package's documented defaults).
	Tiers          map[string]int64
	AnonymousCU    int64
	MetricsCU      int64
	TrustedProxies []string
	CORSOrigins    []string
	LagThreshold   int64
	// HeartbeatTimeout and MaxBlockInterval: health freshness (api.LimitsConfig).
	HeartbeatTimeout time.Duration
	MaxBlockInterval map[string]time.Duration
	// Ingest is false on API-only replicas: they serve what another process indexes.
	Ingest bool
	// Enrichment: NFT metadata, contract registry, prices.
	IPFSGateway      string
	NFTAllowLoopback bool
	NFTAllowPrivate  bool
	// Webhook URLs: the same SSRF policy as NFT fetches, switched apart.
	WebhookAllowLoopback bool
	WebhookAllowPrivate  bool
	ContractRegistry     string
	PriceProvider        string
	CoinGeckoURL         string
	CoinGeckoKey         string
	CoinGeckoRPM         int
	PricesFile           string
	// Export jobs.
	ExportRowCap    int64
	ExportRetention time.Duration
	ExportWorkers   int
	ExportURLTTL    time.Duration
	// WarpStakingKey/Cert give the Warp aggregator a stable node id (optional).
	WarpStakingKey, WarpStakingCert string
	// Upstream is the node asked for live-only fields (platform uptime/connected).
	Upstream string
}

// Register declares the shared flags on fs and returns the Config they fill.
func Register(fs *flag.FlagSet) *Config {
	c := &Config{}
	fs.StringVar(&c.DB, "db", "sqlite:./data/permafrost.db", "database: sqlite:PATH or postgres://...")
	fs.StringVar(&c.Listen, "listen", "127.0.0.1:8080", "address to serve the APIs on")
	fs.StringVar(&c.MetricsListen, "metrics-listen", "", "optional separate address for the metrics service")
	fs.StringVar(&c.AdminListen, "admin-listen", "", "optional address for operators: GET /metrics (Prometheus); keep it private")
	fs.StringVar(&c.Node, "node", "http://127.0.0.1:9650", "avalanchego base URL")
	fs.Func("evm-rpc", "further EVM chain JSON-RPC URL (repeatable)", func(s string) error {
		c.EVMRPC = append(c.EVMRPC, s)
		return nil
	})
	fs.Func("evm-genesis", "genesis JSON of an --evm-rpc chain outside this network, for its genesis allocation (repeatable; matched by config.chainId)", func(s string) error {
		c.EVMGenesis = append(c.EVMGenesis, s)
		return nil
	})
	icmList := func(dst *[]string) func(string) error {
		return func(s string) error {
			if !common.IsHexAddress(s) {
				return fmt.Errorf("%q is not a 0x address", s)
			}
			*dst = append(*dst, s)
			return nil
		}
	}
	fs.Func("icm-allow", "only index ICM (Teleporter) events of this contract (repeatable; default: any contract that proves itself a TeleporterMessenger)", icmList(&c.ICMAllow))
	fs.Func("icm-deny", "never index ICM events of this contract (repeatable)", icmList(&c.ICMDeny))
	fs.StringVar(&c.NetworkName, "network-name", "testnet", "name a network other than mainnet/fuji is served under")
	fs.StringVar(&c.Genesis, "genesis", "", "genesis config file for networks other than mainnet and fuji")
	fs.StringVar(&c.LogFormat, "log-format", "text", "log format: text or json")
	fs.IntVar(&c.BatchSize, "batch-size", 256, "blocks per write transaction (SQLite writes pages shared by several blocks once per commit)")
	fs.Uint64Var(&c.CatchUpLag, "catch-up-lag", 0, "bulk catch-up when a chain is more than this many blocks behind its node: secondary indexes deferred until caught up (0: off; docs/operations.md)")
	fs.IntVar(&c.RPCBatch, "rpc-batch", 0, "EVM chains: heights per JSON-RPC batch, 1..500 (0: 20)")
	fs.IntVar(&c.RPCConcurrency, "rpc-concurrency", 0, "EVM chains: JSON-RPC batches in flight, 1..64 (0: 4; 1 suits a node on the same machine)")
	fs.BoolVar(&c.NoTraces, "no-traces", false, "EVM chains: do not fetch call traces (debug_traceBlockByNumber) even when the node serves them")
	fs.DurationVar(&c.Poll, "poll", time.Second, "how often to ask the node for new blocks at the tip")
	fs.StringVar(&c.PublicURL, "public-url", "", "absolute base URL of this server (default http://<listen>)")
	fs.StringVar(&c.ExportDir, "export-dir", "./data/exports", "directory for export files")
	c.Tiers = map[string]int64{}
	c.MaxBlockInterval = map[string]time.Duration{}
	fs.Func("tier", "API key tier budget NAME=CU_PER_MINUTE (repeatable)", func(s string) error {
		name, v, ok := strings.Cut(s, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if !ok || name == "" || err != nil || n <= 0 {
			return fmt.Errorf("want NAME=CU_PER_MINUTE, got %q", s)
		}
		c.Tiers[name] = n
		return nil
	})
	fs.DurationVar(&c.HeartbeatTimeout, "heartbeat-timeout", 0, "the health check calls a chain down when its ingester has not reported for this long (0: default 1m; negative: off)")
	fs.Func("max-block-interval", "CHAIN=DURATION: the health check calls the chain down after this long without a new block (repeatable; e.g. C=1m for a busy C-chain)", func(s string) error {
		name, v, ok := strings.Cut(s, "=")
		d, err := time.ParseDuration(v)
		if !ok || name == "" || err != nil || d <= 0 {
			return fmt.Errorf("want CHAIN=DURATION, got %q", s)
		}
		c.MaxBlockInterval[name] = d
		return nil
	})
	fs.Int64Var(&c.AnonymousCU, "anonymous-cu", 0, "compute units per minute per client IP without a key (0: default 6000; negative: keys required)")
	fs.Int64Var(&c.MetricsCU, "metrics-cu", 0, "metrics service compute units per minute per client IP (0: default 8000)")
	fs.Func("trusted-proxy", "CIDR of a proxy whose X-Forwarded-For is trusted (repeatable)", func(s string) error {
		c.TrustedProxies = append(c.TrustedProxies, s)
		return nil
	})
	fs.Func("cors-origin", "origin allowed by CORS (repeatable; default *)", func(s string) error {
		c.CORSOrigins = append(c.CORSOrigins, s)
		return nil
	})
	fs.Int64Var(&c.LagThreshold, "lag-threshold", 0, "blocks a chain may lag its node before its routes answer 503 (0: default 100)")
	fs.StringVar(&c.Upstream, "upstream", "", "node asked for live-only fields such as uptime/connected (default: --node when serving)")
	fs.BoolVar(&c.Ingest, "ingest", true, "index the chains in this process (serve: false for API-only replicas sharing a PostgreSQL index)")
	fs.StringVar(&c.IPFSGateway, "ipfs-gateway", "https://ipfs.io", "HTTP gateway for ipfs:// NFT metadata, or none (the demo uses none unless one is given)")
	fs.BoolVar(&c.NFTAllowLoopback, "nft-allow-loopback", false, "let NFT metadata fetches reach loopback addresses")
	fs.BoolVar(&c.NFTAllowPrivate, "nft-allow-private", false, "let NFT metadata fetches reach private and link-local addresses")
	fs.BoolVar(&c.WebhookAllowLoopback, "webhook-allow-loopback", false, "let webhook URLs name loopback addresses")
	fs.BoolVar(&c.WebhookAllowPrivate, "webhook-allow-private", false, "let webhook URLs name private and link-local addresses")
	fs.StringVar(&c.ContractRegistry, "contract-registry", "", "YAML/JSON file of curated contract metadata (reloaded when it changes)")
	fs.StringVar(&c.PriceProvider, "price-provider", "", "prices: coingecko, static, or empty for none (price fields omitted)")
	fs.StringVar(&c.CoinGeckoURL, "coingecko-url", "", "CoinGecko-compatible API base URL")
	fs.StringVar(&c.CoinGeckoKey, "coingecko-key", "", "CoinGecko API key (prefer PERMAFROST_COINGECKO_KEY)")
	fs.IntVar(&c.CoinGeckoRPM, "coingecko-rpm", 0, "requests per minute allowed by the price API (0: provider default)")
	fs.StringVar(&c.PricesFile, "prices-file", "", "static prices file (air-gapped installs; --price-provider static)")
	fs.Int64Var(&c.ExportRowCap, "export-row-cap", 0, "rows after which an export ends at a day boundary with a continuation date (0: default 1000000; negative: no cap)")
	fs.DurationVar(&c.ExportRetention, "export-retention", 0, "how long finished exports are kept (0: default 168h)")
	fs.IntVar(&c.ExportWorkers, "export-workers", 0, "export jobs run at once by this process (0: default 2; negative: none)")
	fs.DurationVar(&c.ExportURLTTL, "export-url-ttl", 0, "lifetime of signed download URLs (0: default 1h)")
	fs.StringVar(&c.WarpStakingKey, "warp-staking-key", "", "PEM staking key giving the Warp aggregator a stable node id (with --warp-staking-cert)")
	fs.StringVar(&c.WarpStakingCert, "warp-staking-cert", "", "PEM staking certificate for --warp-staking-key")
	fs.String("config", "", "optional YAML config file (keys are flag names)")
	return c
}

// Parse parses cmd's args, then fills every flag cmd uses that is not given on
// the command line from PERMAFROST_<NAME> (dashes become underscores) or the
// YAML file. A flag cmd does not use is refused on the command line and
// ignored in the environment and the file (they are shared by every command).
func Parse(fs *flag.FlagSet, cmd string, args []string) error {
	fs.Usage = func() { CommandUsage(fs.Output(), fs, cmd) }
	if err := fs.Parse(args); err != nil {
		return err
	}
	set := map[string]bool{}
	var unused []string
	fs.Visit(func(f *flag.Flag) {
		set[f.Name] = true
		if !Uses(cmd, f.Name) {
			unused = append(unused, "--"+f.Name)
		}
	})
	if len(unused) > 0 {
		return fmt.Errorf("config: permafrost %s does not use %s (see permafrost %s -h)", cmd, strings.Join(unused, ", "), cmd)
	}
	fileValues := map[string]any{}
	path := fs.Lookup("config").Value.String()
	if path == "" {
		path = os.Getenv("PERMAFROST_CONFIG")
	}
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("config: %w", err)
		}
		if err := yaml.Unmarshal(b, &fileValues); err != nil {
			return fmt.Errorf("config: %s: %w", path, err)
		}
	}
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || set[f.Name] || f.Name == "config" || !Uses(cmd, f.Name) {
			return
		}
		env := "PERMAFROST_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(env); ok {
			for _, part := range splitRepeatable(f.Name, v) {
				if e := f.Value.Set(part); e != nil {
					err = fmt.Errorf("config: %s: %w", env, e)
					return
				}
			}
			return
		}
		if v, ok := fileValues[f.Name]; ok {
			var vals []string
			switch t := v.(type) {
			case []any:
				for _, x := range t {
					vals = append(vals, fmt.Sprint(x))
				}
			default:
				vals = []string{fmt.Sprint(t)}
			}
			for _, part := range vals {
				if e := f.Value.Set(part); e != nil {
					err = fmt.Errorf("config: %s in %s: %w", f.Name, path, e)
					return
				}
			}
		}
	})
	if err != nil {
		return err
	}
	for k := range fileValues {
		if fs.Lookup(k) == nil {
			return fmt.Errorf("config: unknown key %q in %s", k, path)
		}
	}
	return nil
}

// splitRepeatable lets a repeatable flag take a comma list from the environment.
func splitRepeatable(name, v string) []string {
	switch name {
	case "evm-rpc", "evm-genesis", "tier", "trusted-proxy", "cors-origin", "max-block-interval", "icm-allow", "icm-deny":
		return strings.Split(v, ",")
	}
	return []string{v}
}
