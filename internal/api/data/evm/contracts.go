package evm

import (
	"database/sql"
	"errors"
	"fmt"
	"net/http"

	"github.com/permafrost-dev/permafrost/internal/api"
)

// getContract answers contract metadata for an address the index knows as
// a contract (created by a transaction, or seen emitting a log): the shape
// of its ercType (Erc20Contract, Erc721Contract, Erc1155Contract), or
// UnknownContract ("UNKNOWN") when neither its transfers nor its answers to
// the enrichment's calls (ERC-165, decimals) tell a standard. An address
// the index does not know as a contract (an account, or code that never
// emitted a log) is a 404: the index cannot tell it is a contract.
//
// deploymentDetails is given for contracts created by a top-level
// transaction (the receipt's contractAddress), and for contracts created
// inside another contract once the enrichment traced the creating
// transaction and its factory (deployerContractAddress; needs a node with
// debug_traceBlockByNumber). Otherwise the deploying transaction is not
// known: it is absent. name and symbol are the contract's own (read by the
// enrichment); the curated fields come from the operator's registry.
func (h *handlers) getContract(r *http.Request) (any, error) {
	q, err := h.begin(r, "address")
	if err != nil {
		return nil, err
	}
	if err := q.p.Err(); err != nil {
		return nil, err
	}
	var kind, txHash, deployer, deployerContract, ercType string
	var name, symbol sql.NullString
	var decimals sql.NullInt64
	err = h.d.DB.QueryRowContext(r.Context(), `SELECT creation_kind, tx_hash, deployer_address, deployer_contract_address,
			erc_type, name, symbol, decimals
		FROM evm_contracts WHERE chain_key = $1 AND address = $2`, q.chain.Key, q.addr).
		Scan(&kind, &txHash, &deployer, &deployerContract, &ercType, &name, &symbol, &decimals)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, api.NotFound("address %s is not a contract indexed on chain %s", q.addr, q.chain.EVMChainID)
	}
	if err != nil {
		return nil, fmt.Errorf("contract %s: %w", q.addr, err)
	}
	m := ContractMetadata{Address: q.addr, ResourceLinks: []ResourceLink{}, Tags: []string{}}
	if kind == "tx" || deployerContract != "" {
		m.DeploymentDetails = &DeploymentDetails{TxHash: txHash, DeployerAddress: deployer, DeployerContractAddress: deployerContract}
	}
	if name.Valid {
		m.Name = &name.String
	}
	if c, ok := h.curated(q, q.addr); ok {
		curate(&m, c)
	}
	switch ercType {
	case ercERC20:
		m.ErcType = ercERC20
		if symbol.Valid {
			m.Symbol = &symbol.String
		}
		// Required by Erc20Contract: 0 until the token's decimals() is fetched.
		d := int(decimals.Int64)
		m.Decimals = &d
	case ercERC721, ercERC1155:
		m.ErcType = ercType
		if symbol.Valid {
			m.Symbol = &symbol.String
		}
	default:
		m.ErcType = "UNKNOWN"
	}
	return m, nil
}

// curate adds the registry's fields; its name only stands in for a
// contract without a name() of its own.
func curate(m *ContractMetadata, c Curated) {
	opt := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	if m.Name == nil {
		m.Name = opt(c.Name)
	}
	m.Description, m.OfficialSite, m.Email, m.Color = opt(c.Description), opt(c.OfficialSite), opt(c.Email), opt(c.Color)
	m.LogoAsset, m.BannerAsset = c.LogoAsset, c.BannerAsset
	if len(c.ResourceLinks) > 0 {
		m.ResourceLinks = c.ResourceLinks
	}
	if len(c.Tags) > 0 {
		m.Tags = c.Tags
	}
}
