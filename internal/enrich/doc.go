// Package enrich adds to the EVM index what blocks and receipts do not
// carry, in background workers that never run inside an ingest
// transaction: ingestion writes blocks and goes on; enrichment reads the
// index, asks nodes and metadata hosts, and writes its results one short
// statement at a time (so it never holds a lock ingestion waits on, and a
// hanging host or node delays nothing but its own job).
//
// Token metadata (tokens.go): for every contract the indexer finds, ERC-165
// detection of ERC-721/ERC-1155, ERC-20 probing (decimals, totalSupply),
// name, symbol and decimals, by batched eth_call at the chain's indexed
// tip. Reverts and garbage answers leave fields NULL and the type unknown
// (UNKNOWN in the API); node failures are retried with backoff. Results are
// cached in enrich_token_meta.
//
// NFT metadata (nft.go, fetch.go, safehttp.go): tokenURI(id) / uri(id)
// ({id} substituted), then data: (base64 or percent-encoded), http(s): or
// ipfs: (through NFTConfig.IPFSGateway). Each token ends in one of the
// published NftTokenMetadataStatus values:
//
//	INDEXED                     a metadata object (name, description, image, animation_url,
//	                            external_url, background_color, attributes; ERC-1155 decimals, properties)
//	UNINDEXED                   not fetched yet
//	MISSING_TOKEN               tokenURI/uri reverted: the token does not exist
//	INVALID_TOKEN_URI           empty, not an ABI string, malformed, bad base64, bad CID
//	INVALID_TOKEN_URI_SCHEME    a scheme other than data, http, https, ipfs
//	UNREACHABLE_TOKEN_URI       connection/DNS failure, timeout, HTTP error status, too many
//	                            redirects, or an address the policy refuses (final at once)
//	THROTTLED_TOKEN_URI         HTTP 429 (Retry-After honoured)
//	METADATA_CONTENT_TOO_LARGE  above NFTConfig.MaxBytes (Content-Length or while reading)
//	INVALID_METADATA_JSON       not JSON (or not UTF-8)
//	INVALID_METADATA            JSON but not a metadata object: not an object, no metadata
//	                            field, a field of the wrong type
//	UNKNOWN                     the node failed to answer tokenURI/uri (retried)
//
// Retries: per status, NFTConfig.Retry (DefaultRetry: UNREACHABLE 5 attempts,
// THROTTLED 8, INVALID_METADATA_JSON 2, UNKNOWN 10; exponential backoff from
// Base to Cap with jitter), at most 30 attempts per job overall; other
// statuses are final. Limits: NFTConfig.Workers fetches at once, PerHost per
// host, Timeout per fetch (connection, redirects and body), MaxBytes per
// document, MaxRedirects. Address policy (SSRF): every connection's resolved
// address is checked just before connecting (names, DNS rebinding and each
// redirect included); loopback needs AllowLoopback, private, shared,
// link-local and cloud metadata-service addresses need AllowPrivate;
// unspecified, multicast and reserved addresses are always refused;
// environment proxies are ignored. POST ...:reindex (internal/api/enrichapi)
// queues a token again, once per NFTConfig.ReindexInterval.
//
// Contract metadata (trace.go, registry.go): deploymentDetails of contracts
// created inside another contract come from debug_traceBlockByNumber's
// callTracer when the node offers it; otherwise they stay absent (see
// TraceConfig). The curated fields come from the operator's registry file,
// reloaded when it changes (mtime polling: no signal, no endpoint).
//
// Prices (prices.go, coingecko.go, staticprices.go): a PriceProvider —
// CoinGecko-compatible over HTTP, or a static file for air-gapped installs —
// behind a cache; the API asks for the 14 published currencies. No
// provider, no price: price, balanceValue and historicalPrice are omitted,
// never zero.
//
// Reputation (reputation.go): Malicious, Benign or null per token from the
// registry and documented heuristics; the ERC-20 listing hides Malicious
// tokens unless filterSpamTokens=false.
//
// State lives in the enrich_* tables (migration 0013): they survive
// `permafrost reindex`, which clears the evm_* tables, so results are
// copied back without asking anyone again.
package enrich
