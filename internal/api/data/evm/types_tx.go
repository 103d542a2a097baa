package evm

// Response shapes of the block, transaction and address-history operations
// (the published document's schemas, by name).

// EvmBlock is the published EvmBlock (and GetEvmBlockResponse).
type EvmBlock struct {
	ChainID                    string `json:"chainId"`
	BlockNumber                string `json:"blockNumber"`
	BlockTimestamp             int64  `json:"blockTimestamp"`
	BlockTimestampMilliseconds *int64 `json:"blockTimestampMilliseconds,omitempty"`
	BlockMinDelayExcess        *int64 `json:"blockMinDelayExcess,omitempty"`
	BlockHash                  string `json:"blockHash"`
	TxCount                    int64  `json:"txCount"`
	BaseFee                    string `json:"baseFee"`
	GasUsed                    string `json:"gasUsed"`
	GasLimit                   string `json:"gasLimit"`
	GasCost                    string `json:"gasCost"`
	ParentHash                 string `json:"parentHash"`
	FeesSpent                  string `json:"feesSpent"`
	CumulativeTransactions     string `json:"cumulativeTransactions"`
}

// ListEvmBlocksResponse answers the block listings.
type ListEvmBlocksResponse struct {
	NextPageToken string     `json:"nextPageToken,omitempty"`
	Blocks        []EvmBlock `json:"blocks"`
}

// FullNativeTransactionDetails is a transaction as getTransaction shows it.
type FullNativeTransactionDetails struct {
	NativeTransaction
	BlockTimestampMilliseconds *int64 `json:"blockTimestampMilliseconds,omitempty"`
	BlockMinDelayExcess        *int64 `json:"blockMinDelayExcess,omitempty"`
	Input                      string `json:"input"`
	BaseFeePerGas              string `json:"baseFeePerGas"`
	MaxFeePerGas               string `json:"maxFeePerGas,omitempty"`
	MaxPriorityFeePerGas       string `json:"maxPriorityFeePerGas,omitempty"`
}

// NetworkTokenDetails is the chain's native token with its current price.
type NetworkTokenDetails struct {
	NetworkToken NetworkToken `json:"networkToken"`
	CurrentPrice *Money       `json:"currentPrice,omitempty"`
}

// TransferDetails is one of Erc20TransferDetails (V2: with an Erc20TokenV2),
// Erc721TransferDetails (no value) and Erc1155TransferDetails: a token
// movement inside a transaction.
type TransferDetails struct {
	From     RichAddress `json:"from"`
	To       RichAddress `json:"to"`
	LogIndex int64       `json:"logIndex"`
	Value    *string     `json:"value,omitempty"`
	// Exactly one token is set: *Erc20Token (or *Erc20TokenV2),
	// *Erc721Token, *Erc1155Token.
	Erc20Token   any           `json:"erc20Token,omitempty"`
	Erc721Token  *Erc721Token  `json:"erc721Token,omitempty"`
	Erc1155Token *Erc1155Token `json:"erc1155Token,omitempty"`
}

// Erc20TokenV2 is an ERC-20 token with its reputation (null: unknown).
type Erc20TokenV2 struct {
	Erc20Token
	TokenReputation *string `json:"tokenReputation"`
}

// InternalTransactionDetails is a value transfer or creation inside a
// transaction (from call traces).
type InternalTransactionDetails struct {
	From           RichAddress `json:"from"`
	To             RichAddress `json:"to"`
	InternalTxType string      `json:"internalTxType"`
	Value          string      `json:"value"`
	IsReverted     bool        `json:"isReverted"`
	GasUsed        string      `json:"gasUsed"`
	GasLimit       string      `json:"gasLimit"`
}

// GetTransactionResponse answers getTransaction and getDeploymentTransaction.
type GetTransactionResponse struct {
	Erc20Transfers        []TransferDetails            `json:"erc20Transfers,omitempty"`
	Erc721Transfers       []TransferDetails            `json:"erc721Transfers,omitempty"`
	Erc1155Transfers      []TransferDetails            `json:"erc1155Transfers,omitempty"`
	InternalTransactions  []InternalTransactionDetails `json:"internalTransactions,omitempty"`
	NetworkTokenDetails   NetworkTokenDetails          `json:"networkTokenDetails"`
	NativeTransaction     FullNativeTransactionDetails `json:"nativeTransaction"`
	TeleporterMessageInfo *TeleporterMessageInfo       `json:"teleporterMessageInfo,omitempty"`
}

// TeleporterMessageInfo is the ICM message a transaction sent (direction
// SOURCE_TRANSACTION, destinationChainId) or received
// (DESTINATION_TRANSACTION, sourceChainId).
type TeleporterMessageInfo struct {
	TeleporterMessageID string `json:"teleporterMessageId"`
	Direction           string `json:"direction"`
	SourceChainID       string `json:"sourceChainId,omitempty"`
	DestinationChainID  string `json:"destinationChainId,omitempty"`
}

// TransactionDetails is one item of an address's history (v1 and v2).
type TransactionDetails struct {
	NativeTransaction    NativeTransaction            `json:"nativeTransaction"`
	Erc20Transfers       []TransferDetails            `json:"erc20Transfers,omitempty"`
	Erc721Transfers      []TransferDetails            `json:"erc721Transfers,omitempty"`
	Erc1155Transfers     []TransferDetails            `json:"erc1155Transfers,omitempty"`
	InternalTransactions []InternalTransactionDetails `json:"internalTransactions,omitempty"`
}

// ListTransactionDetailsResponse answers an address's history (v1 and v2).
type ListTransactionDetailsResponse struct {
	NextPageToken string               `json:"nextPageToken,omitempty"`
	Transactions  []TransactionDetails `json:"transactions"`
}

// ListTransfersTxResponse answers transactions:listErc20/721/1155: Erc20Transfer,
// Erc721Transfer or Erc1155Transfer items.
type ListTransfersTxResponse struct {
	NextPageToken string     `json:"nextPageToken,omitempty"`
	Transactions  []Transfer `json:"transactions"`
}

// ListContractsResponse answers contracts/{address}/deployments.
type ListContractsResponse struct {
	NextPageToken string             `json:"nextPageToken,omitempty"`
	Contracts     []ContractMetadata `json:"contracts"`
}

// ListAddressChainsResponse answers /v1/address/{address}/chains.
type ListAddressChainsResponse struct {
	IndexedChains   []ChainInfo `json:"indexedChains"`
	UnindexedChains []string    `json:"unindexedChains"`
}
