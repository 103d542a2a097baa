// Package warp aggregates BLS signatures of Avalanche validators over Warp
// messages, the way ACP-118 defines it, for the signature-aggregation
// endpoints of the spec (section 4.2):
//
//	POST /v1/signatureAggregator/{network}/aggregateSignatures          -> Aggregator.Aggregate
//	GET  /v1/signatureAggregator/{network}/aggregateSignatures/{txHash} -> Aggregator.AggregateForTx
//
// Permafrost joins the network's peer-to-peer layer as a non-validating peer,
// using avalanchego's own networking (network, network/peer, network/p2p):
// real TLS connections with the avalanchego handshake, peer-list gossip to
// learn validator IPs, and ACP-118 signature requests (handler id 2,
// sdk.SignatureRequest / sdk.SignatureResponse) to every validator of the
// signing subnet. Signatures are verified against the validator's BLS key
// before they count, aggregated into a BitSetSignature over the canonical
// validator ordering, and the result is checked with avalanchego's own Warp
// verification before it is returned.
//
// The validator sets and the L1 transactions come from Permafrost's P-chain
// index through the small interfaces ValidatorSets and L1Txs, which the
// caller implements.
//
// # Errors and HTTP status codes
//
// The package does not speak HTTP; the HTTP layer maps its errors:
//
//   - *RequestError -> 400 Bad Request (the message is meant for the client).
//   - ErrNotFound   -> 404 Not Found (AggregateForTx: the tx is not in the index).
//   - *QuorumError  -> 503 Service Unavailable: the validators that answered
//     in time do not carry enough weight. It is a server-side condition of the
//     signing subnet's nodes (offline, refusing, unreachable), which is what the
//     spec's 503 describes, and a retry may succeed.
//   - anything else -> 500 Internal Server Error.
package warp
