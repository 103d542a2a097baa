package evm

import (
	"encoding/json"
	"strings"
)

// Response shapes: spec section 2 with the published schemas' names.
// Values with no source in the index are absent (prices, balance values,
// logos) or carry their honest state (NFT metadata "UNINDEXED").

// Money is the shared Money object (spec 2.1): a lowercase currency code
// and a decimal string value. Set only when a price is known.
type Money struct {
	CurrencyCode string `json:"currencyCode"`
	Value        string `json:"value"`
}

// NativeTokenBalance is spec 2.1 NativeTokenBalance.
type NativeTokenBalance struct {
	Name         string `json:"name"`
	Symbol       string `json:"symbol"`
	Decimals     int    `json:"decimals"`
	LogoURI      string `json:"logoUri,omitempty"`
	ChainID      string `json:"chainId"`
	Price        *Money `json:"price,omitempty"`
	Balance      string `json:"balance"`
	BalanceValue *Money `json:"balanceValue,omitempty"`
}

// GetNativeBalanceResponse is the answer of balances:getNative.
type GetNativeBalanceResponse struct {
	NativeTokenBalance NativeTokenBalance `json:"nativeTokenBalance"`
}

// Erc20TokenBalance is spec 2.7. tokenReputation is the enrichment's
// (enrich_token_reputation): Malicious, Benign, or null when unknown.
type Erc20TokenBalance struct {
	Address         string  `json:"address"`
	Name            string  `json:"name"`
	Symbol          string  `json:"symbol"`
	Decimals        int     `json:"decimals"`
	LogoURI         string  `json:"logoUri,omitempty"`
	ErcType         string  `json:"ercType"`
	Price           *Money  `json:"price,omitempty"`
	ChainID         string  `json:"chainId"`
	Balance         string  `json:"balance"`
	BalanceValue    *Money  `json:"balanceValue,omitempty"`
	TokenReputation *string `json:"tokenReputation"`

	decimalsKnown bool // decimals() was read (else Decimals is 0 and no value is computed)
}

// TokenMetadata is spec 2.1 TokenMetadata; Attributes is ERC-721 only,
// Decimals and Properties ERC-1155 only.
type TokenMetadata struct {
	IndexStatus                  string `json:"indexStatus"`
	MetadataLastUpdatedTimestamp int64  `json:"metadataLastUpdatedTimestamp,omitempty"`
	Name                         string `json:"name,omitempty"`
	Symbol                       string `json:"symbol,omitempty"`
	ImageURI                     string `json:"imageUri,omitempty"`
	Description                  string `json:"description,omitempty"`
	AnimationURI                 string `json:"animationUri,omitempty"`
	ExternalURL                  string `json:"externalUrl,omitempty"`
	Background                   string `json:"background,omitempty"`
	Attributes                   string `json:"attributes,omitempty"`
	Decimals                     *int   `json:"decimals,omitempty"`
	Properties                   string `json:"properties,omitempty"`
}

// Erc721Token is spec 2.8 (an NFT token, and with ChainID an ERC-721 or
// collectible balance).
type Erc721Token struct {
	Address      string        `json:"address"`
	Name         string        `json:"name"`
	Symbol       string        `json:"symbol"`
	ErcType      string        `json:"ercType"`
	TokenID      string        `json:"tokenId"`
	TokenURI     string        `json:"tokenUri"`
	Metadata     TokenMetadata `json:"metadata"`
	OwnerAddress string        `json:"ownerAddress,omitempty"`
	ChainID      string        `json:"chainId,omitempty"`
}

// Erc1155Token is spec 2.9 without chainId and balance (an NFT token); with
// them, an ERC-1155 balance.
type Erc1155Token struct {
	Address  string        `json:"address"`
	ErcType  string        `json:"ercType"`
	TokenID  string        `json:"tokenId"`
	TokenURI string        `json:"tokenUri"`
	Metadata TokenMetadata `json:"metadata"`
	ChainID  string        `json:"chainId,omitempty"`
	Balance  string        `json:"balance,omitempty"`
}

// ListErc20BalancesResponse answers balances:listErc20.
type ListErc20BalancesResponse struct {
	NextPageToken      string              `json:"nextPageToken,omitempty"`
	NativeTokenBalance NativeTokenBalance  `json:"nativeTokenBalance"`
	Erc20TokenBalances []Erc20TokenBalance `json:"erc20TokenBalances"`
}

// ListErc721BalancesResponse answers balances:listErc721.
type ListErc721BalancesResponse struct {
	NextPageToken       string             `json:"nextPageToken,omitempty"`
	NativeTokenBalance  NativeTokenBalance `json:"nativeTokenBalance"`
	Erc721TokenBalances []Erc721Token      `json:"erc721TokenBalances"`
}

// ListErc1155BalancesResponse answers balances:listErc1155.
type ListErc1155BalancesResponse struct {
	NextPageToken        string             `json:"nextPageToken,omitempty"`
	NativeTokenBalance   NativeTokenBalance `json:"nativeTokenBalance"`
	Erc1155TokenBalances []Erc1155Token     `json:"erc1155TokenBalances"`
}

// ListCollectibleBalancesResponse answers balances:listCollectibles; each
// item is an Erc721Token or an Erc1155Token (with chainId, and balance for
// ERC-1155).
type ListCollectibleBalancesResponse struct {
	NextPageToken       string `json:"nextPageToken,omitempty"`
	CollectibleBalances []any  `json:"collectibleBalances"`
}

// RichAddress is spec 2.1 AddressInfo.
type RichAddress struct {
	Name     string `json:"name,omitempty"`
	Symbol   string `json:"symbol,omitempty"`
	Decimals *int   `json:"decimals,omitempty"`
	LogoURI  string `json:"logoUri,omitempty"`
	Address  string `json:"address"`
}

// Erc20Token is the token of an ERC-20 transfer.
type Erc20Token struct {
	Address  string `json:"address"`
	Name     string `json:"name"`
	Symbol   string `json:"symbol"`
	Decimals int    `json:"decimals"`
	LogoURI  string `json:"logoUri,omitempty"`
	ErcType  string `json:"ercType"`
	Price    *Money `json:"price,omitempty"`
}

// Transfer is spec 2.10: one of Erc20Transfer, Erc721Transfer (no value)
// and Erc1155Transfer, told apart by which token object is set.
type Transfer struct {
	BlockNumber    string        `json:"blockNumber"`
	BlockTimestamp int64         `json:"blockTimestamp"`
	BlockHash      string        `json:"blockHash"`
	TxHash         string        `json:"txHash"`
	From           RichAddress   `json:"from"`
	To             RichAddress   `json:"to"`
	LogIndex       int64         `json:"logIndex"`
	Value          *string       `json:"value,omitempty"`
	Erc20Token     *Erc20Token   `json:"erc20Token,omitempty"`
	Erc721Token    *Erc721Token  `json:"erc721Token,omitempty"`
	Erc1155Token   *Erc1155Token `json:"erc1155Token,omitempty"`
}

// ListTransfersResponse answers tokens/{address}/transfers.
type ListTransfersResponse struct {
	NextPageToken string     `json:"nextPageToken,omitempty"`
	Transfers     []Transfer `json:"transfers"`
}

// Method is a native transaction's call.
type Method struct {
	CallType   string `json:"callType"`
	MethodHash string `json:"methodHash"`
	MethodName string `json:"methodName,omitempty"`
}

// Call types (the published TransactionMethodType enum).
const (
	CallNativeTransfer   = "NATIVE_TRANSFER"
	CallContractCall     = "CONTRACT_CALL"
	CallContractCreation = "CONTRACT_CREATION"
)

// NativeTransaction is spec 2.11.
type NativeTransaction struct {
	BlockNumber    string      `json:"blockNumber"`
	BlockTimestamp int64       `json:"blockTimestamp"`
	BlockHash      string      `json:"blockHash"`
	ChainID        string      `json:"chainId"`
	BlockIndex     int64       `json:"blockIndex"`
	TxHash         string      `json:"txHash"`
	TxStatus       string      `json:"txStatus"`
	TxType         int64       `json:"txType"`
	GasLimit       string      `json:"gasLimit"`
	GasUsed        string      `json:"gasUsed"`
	GasPrice       string      `json:"gasPrice"`
	Nonce          string      `json:"nonce"`
	From           RichAddress `json:"from"`
	To             RichAddress `json:"to"`
	Method         Method      `json:"method"`
	Value          string      `json:"value"`
}

// ListNativeTransactionsResponse answers transactions:listNative.
type ListNativeTransactionsResponse struct {
	NextPageToken string              `json:"nextPageToken,omitempty"`
	Transactions  []NativeTransaction `json:"transactions"`
}

// ListNftTokens answers nfts/collections/{address}/tokens: Erc721Token or
// Erc1155Token items.
type ListNftTokens struct {
	NextPageToken string `json:"nextPageToken,omitempty"`
	Tokens        []any  `json:"tokens"`
}

// ImageAsset is a curated logo or banner.
type ImageAsset struct {
	AssetID  string `json:"assetId,omitempty"`
	ImageURI string `json:"imageUri,omitempty"`
}

// ResourceLink is a curated link.
type ResourceLink struct {
	Type string `json:"type"`
	URL  string `json:"url"`
}

// DeploymentDetails is spec 2.12 deploymentDetails.
type DeploymentDetails struct {
	TxHash                  string `json:"txHash"`
	DeployerAddress         string `json:"deployerAddress"`
	DeployerContractAddress string `json:"deployerContractAddress,omitempty"`
}

// ContractMetadata is spec 2.12: Erc20Contract, Erc721Contract,
// Erc1155Contract or UnknownContract by ercType. The curated fields
// (description, site, email, assets, color, links, tags) come from the
// operator's registry (Deps.Enrichment); without an entry the links and
// tags are empty, the rest absent.
type ContractMetadata struct {
	Name              *string            `json:"name,omitempty"`
	Description       *string            `json:"description,omitempty"`
	OfficialSite      *string            `json:"officialSite,omitempty"`
	Email             *string            `json:"email,omitempty"`
	LogoAsset         *ImageAsset        `json:"logoAsset,omitempty"`
	BannerAsset       *ImageAsset        `json:"bannerAsset,omitempty"`
	Color             *string            `json:"color,omitempty"`
	ResourceLinks     []ResourceLink     `json:"resourceLinks"`
	Tags              []string           `json:"tags"`
	Address           string             `json:"address"`
	DeploymentDetails *DeploymentDetails `json:"deploymentDetails,omitempty"`
	ErcType           string             `json:"ercType"`
	Symbol            *string            `json:"symbol,omitempty"`
	Decimals          *int               `json:"decimals,omitempty"`
}

// NetworkToken is a chain's native token in ChainInfo.
type NetworkToken struct {
	Name        string `json:"name"`
	Symbol      string `json:"symbol"`
	Decimals    int    `json:"decimals"`
	LogoURI     string `json:"logoUri,omitempty"`
	Description string `json:"description,omitempty"`
}

// ChainInfo is one entry of /v1/chains and the answer of /v1/chains/{chainId}.
type ChainInfo struct {
	ChainID         string       `json:"chainId"`
	Status          string       `json:"status"`
	ChainName       string       `json:"chainName"`
	Description     string       `json:"description"`
	PlatformChainID string       `json:"platformChainId,omitempty"`
	SubnetID        string       `json:"subnetId,omitempty"`
	VMID            string       `json:"vmId,omitempty"`
	VMName          string       `json:"vmName"`
	ExplorerURL     string       `json:"explorerUrl,omitempty"`
	RPCURL          string       `json:"rpcUrl"`
	WSURL           string       `json:"wsUrl,omitempty"`
	IsTestnet       bool         `json:"isTestnet"`
	NetworkToken    NetworkToken `json:"networkToken"`
	ChainLogoURI    string       `json:"chainLogoUri,omitempty"`
	Private         bool         `json:"private"`
	EnabledFeatures []string     `json:"enabledFeatures"`
}

// ListChainsResponse answers /v1/chains.
type ListChainsResponse struct {
	Chains []ChainInfo `json:"chains"`
}

// NFT metadata states (the published NftTokenMetadataStatus enum).
const (
	StatusUnindexed = "UNINDEXED"
	StatusIndexed   = "INDEXED"
)

var metadataStatuses = map[string]bool{
	"UNKNOWN": true, "MISSING_TOKEN": true, "INVALID_TOKEN_URI": true, "INVALID_TOKEN_URI_SCHEME": true,
	"UNREACHABLE_TOKEN_URI": true, "THROTTLED_TOKEN_URI": true, "METADATA_CONTENT_TOO_LARGE": true,
	"INVALID_METADATA": true, "INVALID_METADATA_JSON": true, StatusIndexed: true, StatusUnindexed: true,
}

// tokenMetadataAt is tokenMetadata with the time its status was written
// (evm_nft_tokens.metadata_updated_at, unix seconds; 0: never).
func tokenMetadataAt(status, doc string, erc1155 bool, updatedAt int64) TokenMetadata {
	m := tokenMetadata(status, doc, erc1155)
	if m.IndexStatus != StatusUnindexed && updatedAt > 0 {
		m.MetadataLastUpdatedTimestamp = updatedAt
	}
	return m
}

// tokenMetadata maps the indexer's metadata state of one NFT token to
// TokenMetadata. Until a metadata fetcher fills evm_nft_tokens.metadata
// (status 'unknown', the column default), the state is UNINDEXED. An
// INDEXED token's JSON (ERC-721 / ERC-1155 metadata JSON schema) fills the
// descriptive fields.
func tokenMetadata(status, doc string, erc1155 bool) TokenMetadata {
	st := strings.ToUpper(strings.TrimSpace(status))
	// The indexer's column default 'unknown' means "not fetched yet", not
	// the published UNKNOWN outcome of a fetch.
	if st == "" || strings.EqualFold(status, "unknown") || !metadataStatuses[st] {
		st = StatusUnindexed
	}
	m := TokenMetadata{IndexStatus: st}
	if st != StatusIndexed || doc == "" {
		return m
	}
	var j struct {
		Name            string          `json:"name"`
		Symbol          string          `json:"symbol"`
		Description     string          `json:"description"`
		Image           string          `json:"image"`
		ImageURL        string          `json:"image_url"`
		AnimationURL    string          `json:"animation_url"`
		ExternalURL     string          `json:"external_url"`
		BackgroundColor string          `json:"background_color"`
		Decimals        *int            `json:"decimals"`
		Attributes      json.RawMessage `json:"attributes"`
		Properties      json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal([]byte(doc), &j); err != nil {
		m.IndexStatus = "INVALID_METADATA_JSON"
		return m
	}
	m.Name, m.Symbol, m.Description = j.Name, j.Symbol, j.Description
	m.ImageURI = j.Image
	if m.ImageURI == "" {
		m.ImageURI = j.ImageURL
	}
	m.AnimationURI, m.ExternalURL, m.Background = j.AnimationURL, j.ExternalURL, j.BackgroundColor
	if erc1155 {
		m.Decimals = j.Decimals
		if len(j.Properties) > 0 && string(j.Properties) != "null" {
			m.Properties = string(j.Properties)
		}
	} else if len(j.Attributes) > 0 && string(j.Attributes) != "null" {
		m.Attributes = string(j.Attributes)
	}
	return m
}
