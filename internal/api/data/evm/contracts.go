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
	var c contractRow
	err = h.d.DB.QueryRowContext(r.Context(), `SELECT `+contractCols+`
		FROM evm_contracts WHERE chain_key = $1 AND address = $2`, q.chain.Key, q.addr).Scan(c.dest()...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, api.NotFound("address %s is not a contract indexed on chain %s", q.addr, q.chain.EVMChainID)
	}
	if err != nil {
		return nil, fmt.Errorf("contract %s: %w", q.addr, err)
	}
	return h.contractMetadata(q, c), nil
}

// contractCols are the evm_contracts columns of a contractRow.
const contractCols = `address, creation_kind, tx_hash, deployer_address, deployer_contract_address, erc_type, name, symbol, decimals`

// contractRow is one evm_contracts row as ContractMetadata shows it.
type contractRow struct {
	address, kind, txHash, deployer, deployerContract, ercType string
	name, symbol                                               sql.NullString
	decimals                                                   sql.NullInt64
}

func (c *contractRow) dest() []any {
	return []any{&c.address, &c.kind, &c.txHash, &c.deployer, &c.deployerContract, &c.ercType, &c.name, &c.symbol, &c.decimals}
}

// hasDeployment tells whether the row knows the contract's creating
// transaction: a top-level creation, or one traced to its factory.
func (c *contractRow) hasDeployment() bool { return c.kind == "tx" || c.deployerContract != "" }

// contractMetadata is the shape of c's ercType.
func (h *handlers) contractMetadata(q *chainReq, c contractRow) ContractMetadata {
	m := ContractMetadata{Address: c.address, ResourceLinks: []ResourceLink{}, Tags: []string{}}
	if c.hasDeployment() {
		m.DeploymentDetails = &DeploymentDetails{TxHash: c.txHash, DeployerAddress: c.deployer, DeployerContractAddress: c.deployerContract}
	}
	if c.name.Valid {
		m.Name = &c.name.String
	}
	if cur, ok := h.curated(q, c.address); ok {
		curate(&m, cur)
	}
	switch c.ercType {
	case ercERC20:
		m.ErcType = ercERC20
		if c.symbol.Valid {
			m.Symbol = &c.symbol.String
		}
		// Required by Erc20Contract: 0 until the token's decimals() is fetched.
		d := int(c.decimals.Int64)
		m.Decimals = &d
	case ercERC721, ercERC1155:
		m.ErcType = c.ercType
		if c.symbol.Valid {
			m.Symbol = &c.symbol.String
		}
	default:
		m.ErcType = "UNKNOWN"
	}
	return m
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
