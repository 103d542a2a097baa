package enrich

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strings"
)

// Token reputation (Erc20TokenBalance.tokenReputation) is Malicious, Benign
// or null. Sources, strongest first:
//
//  1. The operator's registry: an entry's tokenReputation (Benign or
//     Malicious) is the answer for that token, whatever the heuristics say.
//  2. Heuristics, applied to every ERC-20 token once its name and symbol are
//     read. They only ever say Malicious (nothing proves a token benign):
//     - link bait: the name or symbol carries a URL, a www. host or a
//     domain name (label.tld for common spam TLDs) — the airdrop-spam
//     pattern of tokens sent unasked to many holders to lure them to a site;
//     - claim bait: the name or symbol says "claim", "visit" or "airdrop";
//     - hidden characters: zero-width or bidirectional-override characters,
//     used to make a name look like another;
//     - impersonation: the symbol of a token the registry marks Benign on
//     the same chain, at another address.
//  3. Otherwise null (unknown).
//
// Results are kept in enrich_token_reputation, which the ERC-20 balance
// listing joins: filterSpamTokens=true (the default) hides Malicious tokens.

var (
	reURL       = regexp.MustCompile(`(?i)(https?://|www\.|t\.me/)`)
	reDomain    = regexp.MustCompile(`(?i)\b[a-z0-9][a-z0-9-]{0,62}\s?\.\s?(com|net|org|io|xyz|app|site|online|top|vip|cc|gift|club|pro|link|info|biz|live|claims?|website|icu|lol|ru|cn)\b`)
	reClaimBait = regexp.MustCompile(`(?i)\b(claim|claims|visit|airdrop|airdrops)\b`)
)

// heuristicReputation judges a token by its name and symbol; curated maps
// upper-cased symbols of Benign registry tokens of the token's chain to
// their address. It returns "" when nothing is suspicious.
func heuristicReputation(address, name, symbol string, curated map[string]string) (rep, reason string) {
	for _, s := range []string{name, symbol} {
		switch {
		case s == "":
		case reURL.MatchString(s) || reDomain.MatchString(s):
			return ReputationMalicious, fmt.Sprintf("name or symbol %q advertises a website (airdrop-spam pattern)", clip(s))
		case reClaimBait.MatchString(s):
			return ReputationMalicious, fmt.Sprintf("name or symbol %q is claim bait", clip(s))
		case hasHiddenChars(s):
			return ReputationMalicious, fmt.Sprintf("name or symbol %q carries zero-width or direction-changing characters", clip(s))
		}
	}
	if symbol != "" {
		if other, ok := curated[strings.ToUpper(strings.TrimSpace(symbol))]; ok && other != address {
			return ReputationMalicious, fmt.Sprintf("symbol %q impersonates the curated token %s", clip(symbol), other)
		}
	}
	return "", ""
}

// hasHiddenChars finds invisible and direction-changing characters (the
// zero-width joiner is left alone: emoji sequences use it).
func hasHiddenChars(s string) bool {
	for _, r := range s {
		switch {
		case r == 0x200B, r == 0x200C, r == 0x200E, r == 0x200F, r >= 0x202A && r <= 0x202E,
			r >= 0x2060 && r <= 0x2064, r >= 0x2066 && r <= 0x2069, r == 0xFEFF, r == 0x00AD:
			return true
		}
	}
	return false
}

// curatedSymbols are the symbols of the registry's Benign tokens per chain key.
func (s *Service) curatedSymbols(ctx context.Context, chainKey string) map[string]string {
	out := map[string]string{}
	reg := s.reg.Load()
	c, ok := s.chains[chainKey]
	if reg == nil || !ok {
		return out
	}
	for _, e := range reg.list {
		if e.ChainID != c.EVMChainID || e.TokenReputation != ReputationBenign {
			continue
		}
		// The registry does not carry symbols: take the token's own.
		var sym sql.NullString
		if err := s.db.QueryRowContext(ctx, `SELECT symbol FROM evm_contracts WHERE chain_key = $1 AND address = $2`,
			chainKey, e.Address).Scan(&sym); err == nil && sym.Valid && sym.String != "" {
			out[strings.ToUpper(strings.TrimSpace(sym.String))] = e.Address
		}
	}
	return out
}

// judge writes the heuristic reputation of one token (unless the operator
// decided it).
func (s *Service) judge(ctx context.Context, chainKey, address, name, symbol string, curated map[string]string) error {
	rep, reason := heuristicReputation(address, name, symbol, curated)
	if rep == "" {
		_, err := s.db.ExecContext(ctx, `DELETE FROM enrich_token_reputation WHERE chain_key = $1 AND address = $2 AND source = 'heuristic'`,
			chainKey, address)
		return err
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO enrich_token_reputation (chain_key, address, reputation, source, reason, updated_at)
		VALUES ($1, $2, $3, 'heuristic', $4, $5)
		ON CONFLICT (chain_key, address) DO UPDATE SET reputation = excluded.reputation, reason = excluded.reason,
			updated_at = excluded.updated_at
		WHERE enrich_token_reputation.source = 'heuristic'`, chainKey, address, rep, reason, s.now().Unix())
	return err
}

// syncReputation makes enrich_token_reputation agree with the registry and
// the heuristics for every enriched chain (after a registry load).
func (s *Service) syncReputation(ctx context.Context) error {
	reg := s.reg.Load()
	now := s.now().Unix()
	for _, c := range s.cfg.Chains {
		want := map[string]*ContractInfo{}
		if reg != nil {
			for _, e := range reg.list {
				if e.ChainID == c.EVMChainID && e.TokenReputation != "" {
					want[e.Address] = e
				}
			}
		}
		// Operator rows no longer in the registry go (heuristics below
		// may judge those tokens again).
		rows, err := s.db.QueryContext(ctx, `SELECT address FROM enrich_token_reputation WHERE chain_key = $1 AND source = 'operator'`, c.Key)
		if err != nil {
			return fmt.Errorf("reputation: %w", err)
		}
		var stale []string
		for rows.Next() {
			var a string
			if err := rows.Scan(&a); err != nil {
				rows.Close()
				return fmt.Errorf("reputation: %w", err)
			}
			if want[a] == nil {
				stale = append(stale, a)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("reputation: %w", err)
		}
		for _, a := range stale {
			if _, err := s.db.ExecContext(ctx, `DELETE FROM enrich_token_reputation WHERE chain_key = $1 AND address = $2 AND source = 'operator'`, c.Key, a); err != nil {
				return fmt.Errorf("reputation: %w", err)
			}
		}
		for a, e := range want {
			if _, err := s.db.ExecContext(ctx, `INSERT INTO enrich_token_reputation (chain_key, address, reputation, source, reason, updated_at)
				VALUES ($1, $2, $3, 'operator', 'operator registry', $4)
				ON CONFLICT (chain_key, address) DO UPDATE SET reputation = excluded.reputation, source = 'operator',
					reason = excluded.reason, updated_at = excluded.updated_at`, c.Key, a, e.TokenReputation, now); err != nil {
				return fmt.Errorf("reputation: %w", err)
			}
		}
		if err := s.rejudgeChain(ctx, c.Key); err != nil {
			return err
		}
	}
	return nil
}

// rejudgeChain applies the heuristics again to every ERC-20 token of a chain
// whose metadata was read: a read of the tokens, a page at a time, and
// writes only for verdicts that appear or go (few: most tokens have none).
func (s *Service) rejudgeChain(ctx context.Context, chainKey string) error {
	curated := s.curatedSymbols(ctx, chainKey)
	stale := map[string]bool{}
	rows, err := s.db.QueryContext(ctx, `SELECT address FROM enrich_token_reputation WHERE chain_key = $1 AND source = 'heuristic'`, chainKey)
	if err != nil {
		return fmt.Errorf("reputation: %w", err)
	}
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			rows.Close()
			return fmt.Errorf("reputation: %w", err)
		}
		stale[a] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reputation: %w", err)
	}
	type verdict struct{ addr, rep, reason string }
	after := ""
	for {
		rows, err := s.db.QueryContext(ctx, `SELECT address, COALESCE(name, ''), COALESCE(symbol, '') FROM evm_contracts
			WHERE chain_key = $1 AND erc_type = 'ERC-20' AND metadata_status <> 'unknown' AND address > $2
			ORDER BY address LIMIT 1000`, chainKey, after)
		if err != nil {
			return fmt.Errorf("reputation: %w", err)
		}
		var found []verdict
		n := 0
		for rows.Next() {
			var addr, name, symbol string
			if err := rows.Scan(&addr, &name, &symbol); err != nil {
				rows.Close()
				return fmt.Errorf("reputation: %w", err)
			}
			n++
			after = addr
			if rep, reason := heuristicReputation(addr, name, symbol, curated); rep != "" {
				found = append(found, verdict{addr, rep, reason})
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("reputation: %w", err)
		}
		for _, v := range found {
			delete(stale, v.addr)
			if _, err := s.db.ExecContext(ctx, `INSERT INTO enrich_token_reputation (chain_key, address, reputation, source, reason, updated_at)
				VALUES ($1, $2, $3, 'heuristic', $4, $5)
				ON CONFLICT (chain_key, address) DO UPDATE SET reputation = excluded.reputation, reason = excluded.reason,
					updated_at = excluded.updated_at
				WHERE enrich_token_reputation.source = 'heuristic'`, chainKey, v.addr, v.rep, v.reason, s.now().Unix()); err != nil {
				return fmt.Errorf("reputation of %s: %w", v.addr, err)
			}
		}
		if n < 1000 {
			break
		}
	}
	for a := range stale {
		if _, err := s.db.ExecContext(ctx, `DELETE FROM enrich_token_reputation WHERE chain_key = $1 AND address = $2 AND source = 'heuristic'`,
			chainKey, a); err != nil {
			return fmt.Errorf("reputation of %s: %w", a, err)
		}
	}
	return nil
}
