package enrich

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ava-labs/libevm/common/hexutil"

	"github.com/permafrost-dev/permafrost/internal/source"
)

// NFT metadata. Every token of evm_nft_tokens gets a job in
// enrich_nft_jobs (its metadata_status turns from the indexer's 'unknown'
// to UNINDEXED). The dispatcher claims due jobs (a lease, so replicas
// sharing a database never fetch a token twice at once), reads their
// tokenURI(id) (ERC-721) / uri(id) (ERC-1155, {id} substituted) in one
// eth_call batch, and hands them to the workers, which fetch the document
// (data:, http(s):, ipfs: through the gateway) within the size, time,
// per-host and address limits and record the outcome: the status, the
// normalised document (INDEXED) and metadata_updated_at, first in
// evm_nft_tokens (what the API serves), then in the job.
//
// Outcomes worth retrying (NFTConfig.Retry: unreachable, throttled,
// invalid JSON, node failures) come back with exponential backoff until
// their per-status cap; the token shows the latest outcome meanwhile, except
// that a token already INDEXED keeps its metadata until a refetch ends.
// The others are final. POST ...:reindex puts a token's job back in the
// queue at once, at most once per ReindexInterval.

// maxTotalAttempts bounds a job's attempts whatever mix of statuses it
// cycles through.
const maxTotalAttempts = 30

// ErrNotFound says the NFT is not in the index.
var ErrNotFound = errors.New("enrich: token not indexed")

// ErrNFTDisabled says the NFT metadata fetcher does not run.
var ErrNFTDisabled = errors.New("enrich: NFT metadata fetching is disabled")

// TooSoonError refuses a reindex requested within ReindexInterval of the
// previous one.
type TooSoonError struct{ RetryAfter, Interval time.Duration }

func (e *TooSoonError) Error() string {
	return fmt.Sprintf("enrich: metadata of this token was reindexed recently; retry in %s", e.RetryAfter.Round(time.Second))
}

// nftJob is a claimed job on its way through the dispatcher and a worker.
type nftJob struct {
	chain              Chain
	token, id, ercType string
	prevStatus         string
	attempts, total    int
	lease              string
	uri                string  // the token URI read from the contract
	pre                outcome // set when reading the URI already decided the outcome
	// burnedAt is the block that burned an ERC-721 token (0: not burned):
	// its URI is read at the block before, where it last existed.
	burnedAt int64
}

// dispatchLoop discovers tokens, claims due jobs, reads their URIs and
// feeds the workers until ctx ends.
func (s *Service) dispatchLoop(ctx context.Context, jobs chan<- *nftJob) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.wake:
		}
		if err := s.discoverNFTs(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("NFT discovery failed", "err", err)
		}
		full := false
		claimed, err := s.claimJobs(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("NFT job claim failed", "err", err)
		}
		if len(claimed) > 0 {
			full = len(claimed) == s.cfg.NFT.Batch
			s.readURIs(ctx, claimed)
			for _, j := range claimed {
				select {
				case jobs <- j:
				case <-ctx.Done():
					return
				}
			}
		}
		d := s.cfg.NFT.Poll
		if full {
			d = 0
		}
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(d)
	}
}

// poke wakes the dispatcher.
func (s *Service) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// chainFilter is " AND <col> IN ($k, ...)" over the enriched chains, with
// its arguments appended to args.
func (s *Service) chainFilter(col string, args []any) (string, []any) {
	var b strings.Builder
	b.WriteString(" AND " + col + " IN (")
	for i, c := range s.cfg.Chains {
		if i > 0 {
			b.WriteString(", ")
		}
		args = append(args, c.Key)
		b.WriteString("$" + strconv.Itoa(len(args)))
	}
	b.WriteString(")")
	return b.String(), args
}

// discoverNFTs gives new tokens a job (or, after a reindex of the index,
// their earlier outcome back).
func (s *Service) discoverNFTs(ctx context.Context) error {
	cond, args := s.chainFilter("chain_key", nil)
	rows, err := s.db.QueryContext(ctx, `SELECT chain_key, token, token_id, erc_type FROM evm_nft_tokens
		WHERE metadata_status = 'unknown'`+cond+` LIMIT 500`, args...)
	if err != nil {
		return fmt.Errorf("new NFTs: %w", err)
	}
	type tok struct{ chain, token, id, typ string }
	var list []tok
	for rows.Next() {
		var t tok
		if err := rows.Scan(&t.chain, &t.token, &t.id, &t.typ); err != nil {
			rows.Close()
			return fmt.Errorf("new NFTs: %w", err)
		}
		list = append(list, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("new NFTs: %w", err)
	}
	for _, t := range list {
		var status string
		var uri, doc sql.NullString
		var updated int64
		err := s.db.QueryRowContext(ctx, `SELECT status, token_uri, metadata, updated_at FROM enrich_nft_jobs
			WHERE chain_key = $1 AND token = $2 AND token_id = $3`, t.chain, t.token, t.id).Scan(&status, &uri, &doc, &updated)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			if _, err := s.db.ExecContext(ctx, `INSERT INTO enrich_nft_jobs (chain_key, token, token_id, erc_type, state, next_attempt)
				VALUES ($1, $2, $3, $4, 'pending', $5) ON CONFLICT (chain_key, token, token_id) DO NOTHING`,
				t.chain, t.token, t.id, t.typ, s.now().UnixMilli()); err != nil {
				return fmt.Errorf("NFT job %s/%s: %w", t.token, t.id, err)
			}
			status = ""
		case err != nil:
			return fmt.Errorf("NFT job %s/%s: %w", t.token, t.id, err)
		}
		if status == "" {
			_, err = s.db.ExecContext(ctx, `UPDATE evm_nft_tokens SET metadata_status = 'UNINDEXED'
				WHERE chain_key = $1 AND token = $2 AND token_id = $3 AND metadata_status = 'unknown'`, t.chain, t.token, t.id)
		} else {
			_, err = s.db.ExecContext(ctx, `UPDATE evm_nft_tokens SET token_uri = $1, metadata = $2, metadata_status = $3,
					metadata_updated_at = $4
				WHERE chain_key = $5 AND token = $6 AND token_id = $7 AND metadata_status = 'unknown'`,
				uri, doc, status, updated, t.chain, t.token, t.id)
		}
		if err != nil {
			return fmt.Errorf("NFT %s/%s: %w", t.token, t.id, err)
		}
	}
	if len(list) > 0 {
		s.poke()
	}
	return nil
}

func newLease() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// claimJobs leases up to Batch due jobs.
func (s *Service) claimJobs(ctx context.Context) ([]*nftJob, error) {
	now := s.now().UnixMilli()
	// Placeholders are numbered in order of appearance (SQLite binds them so).
	cond, args := s.chainFilter("chain_key", []any{now})
	args = append(args, s.cfg.NFT.Batch)
	rows, err := s.db.QueryContext(ctx, `SELECT chain_key, token, token_id, erc_type, status, attempts, total_attempts,
			COALESCE((SELECT n.owner_block FROM evm_nft_tokens n WHERE n.chain_key = j.chain_key AND n.token = j.token
				AND n.token_id = j.token_id AND n.erc_type = 'ERC-721' AND n.owner = '`+zeroOwner+`'), 0)
		FROM enrich_nft_jobs j WHERE state = 'pending' AND next_attempt <= $1 AND lease_until <= $1`+cond+`
		ORDER BY next_attempt LIMIT $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("due NFT jobs: %w", err)
	}
	var due []*nftJob
	for rows.Next() {
		j := &nftJob{}
		var chain string
		if err := rows.Scan(&chain, &j.token, &j.id, &j.ercType, &j.prevStatus, &j.attempts, &j.total, &j.burnedAt); err != nil {
			rows.Close()
			return nil, fmt.Errorf("due NFT jobs: %w", err)
		}
		j.chain = s.chains[chain]
		due = append(due, j)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("due NFT jobs: %w", err)
	}
	var out []*nftJob
	until := s.now().Add(s.cfg.NFT.Lease).UnixMilli()
	for _, j := range due {
		j.lease = newLease()
		res, err := s.db.ExecContext(ctx, `UPDATE enrich_nft_jobs SET lease_until = $1, lease_token = $2
			WHERE chain_key = $3 AND token = $4 AND token_id = $5 AND state = 'pending' AND lease_until <= $6`,
			until, j.lease, j.chain.Key, j.token, j.id, now)
		if err != nil {
			return out, fmt.Errorf("claim NFT job: %w", err)
		}
		if n, err := res.RowsAffected(); err == nil && n == 1 {
			out = append(out, j)
		}
	}
	return out, nil
}

// zeroOwner is evm_nft_tokens.owner of a burned ERC-721 token.
const zeroOwner = "0x0000000000000000000000000000000000000000"

// readURIs reads tokenURI(id) / uri(id) of the jobs, one batch per chain,
// at the indexed tip; a burned ERC-721 token at the block before its burn
// (its tokenURI reverts after it), so that the outcome does not depend on
// whether the job ran before or after the burn: a live index and one built
// from scratch later agree (given a URI that did not change in between).
// A node that no longer has that block's state is asked at the latest block
// (a pruned node: the token reads as missing then).
func (s *Service) readURIs(ctx context.Context, jobs []*nftJob) {
	byChain := map[string][]*nftJob{}
	for _, j := range jobs {
		byChain[j.chain.Key] = append(byChain[j.chain.Key], j)
	}
	for key, list := range byChain {
		c := s.chains[key]
		block, err := s.callBlock(ctx, key)
		if err != nil {
			for _, j := range list {
				j.pre = outcome{status: StatusUnknown, err: err}
			}
			continue
		}
		var elems []source.BatchElem
		var idx []*nftJob
		outs := make([]hexutil.Bytes, len(list))
		for i, j := range list {
			w, ok := uintWord(j.id)
			if !ok {
				j.pre = fail(StatusMissingToken, true, "token id %q is not a uint256", clip(j.id))
				continue
			}
			sel := selTokenURI
			if j.ercType == ercTypeERC1155 {
				sel = selURI
			}
			at := block
			if j.burnedAt > 0 {
				at = hexutil.EncodeUint64(uint64(j.burnedAt - 1))
			}
			elems = append(elems, source.BatchElem{Method: "eth_call",
				Params: []any{map[string]string{"to": j.token, "data": callData(sel, w)}, at}, Result: &outs[i]})
			idx = append(idx, j)
		}
		if len(elems) == 0 {
			continue
		}
		if err := c.RPC.BatchCall(ctx, elems); err != nil {
			for _, j := range idx {
				j.pre = outcome{status: StatusUnknown, err: fmt.Errorf("read token URI: %w", err)}
			}
			continue
		}
		// State the node no longer has at the indexed tip: ask at the latest block.
		var again []int
		for k := range elems {
			if elems[k].Error != nil && isStateMissing(elems[k].Error) && elems[k].Params[1] != "latest" {
				again = append(again, k)
			}
		}
		if len(again) > 0 {
			retry := make([]source.BatchElem, len(again))
			for n, k := range again {
				retry[n] = elems[k]
				retry[n].Params = []any{elems[k].Params[0], "latest"}
			}
			// On failure the state-missing errors stay: retried later.
			if err := c.RPC.BatchCall(ctx, retry); err == nil {
				for n, k := range again {
					elems[k].Error = retry[n].Error
				}
			}
		}
		for i, j := range list {
			if j.pre.status != "" {
				continue
			}
			e := elems[indexOf(idx, j)]
			if e.Error != nil {
				switch {
				case classifyCallError(e.Error):
					j.pre = outcome{status: StatusUnknown, err: e.Error}
				case isRevert(e.Error):
					j.pre = outcome{status: StatusMissingToken, final: true, err: e.Error}
				default:
					j.pre = outcome{status: StatusInvalidURI, final: true, err: e.Error}
				}
				continue
			}
			uri, err := decodeString(outs[i], int(4*s.cfg.NFT.MaxBytes+1024))
			switch {
			case errors.Is(err, errTooLong):
				j.pre = fail(StatusTooLarge, true, "token URI longer than %d bytes", 4*s.cfg.NFT.MaxBytes+1024)
			case err != nil:
				j.pre = fail(StatusInvalidURI, true, "token URI answer is not an ABI string")
			case !utf8.ValidString(uri):
				j.pre = fail(StatusInvalidURI, true, "token URI is not UTF-8 text")
			default:
				j.uri = expandURI(uri, j.ercType, j.id)
			}
		}
	}
}

func indexOf(list []*nftJob, j *nftJob) int {
	for i, x := range list {
		if x == j {
			return i
		}
	}
	return -1
}

// isRevert recognises a reverted call.
func isRevert(err error) bool {
	var re *source.RPCError
	if !errors.As(err, &re) {
		return false
	}
	return re.Code == 3 || strings.Contains(strings.ToLower(re.Message), "revert")
}

// workerLoop fetches the documents of the jobs it receives.
func (s *Service) workerLoop(ctx context.Context, jobs <-chan *nftJob) {
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-jobs:
			s.runJob(ctx, j)
		}
	}
}

func (s *Service) runJob(ctx context.Context, j *nftJob) {
	out := j.pre
	if out.status == "" {
		out = s.fetch.fetch(ctx, j.uri, j.ercType)
	}
	if ctx.Err() != nil {
		return // shutting down: the lease expires and the job runs again
	}
	if out.busy {
		// The host is saturated by other jobs: try later, not an attempt.
		if _, err := s.db.ExecContext(ctx, `UPDATE enrich_nft_jobs SET lease_until = 0, lease_token = '', next_attempt = $1
			WHERE chain_key = $2 AND token = $3 AND token_id = $4 AND lease_token = $5`,
			s.now().Add(s.cfg.NFT.Poll).UnixMilli(), j.chain.Key, j.token, j.id, j.lease); err != nil {
			s.log.Warn("NFT job release failed", "token", j.token, "id", j.id, "err", err)
		}
		return
	}
	if out.uri == "" {
		out.uri = j.uri
	}
	if err := s.finish(ctx, j, out); err != nil && ctx.Err() == nil {
		s.log.Warn("NFT metadata not recorded", "chain", j.chain.Key, "token", j.token, "id", j.id, "err", err)
	}
}

// finish records an attempt's outcome.
func (s *Service) finish(ctx context.Context, j *nftJob, out outcome) error {
	now := s.now()
	attempts := 1
	if out.status == j.prevStatus {
		attempts = j.attempts + 1
	}
	total := j.total + 1
	policy, retryable := s.cfg.NFT.Retry[out.status]
	done := out.status == StatusIndexed || out.final || !retryable || attempts >= policy.Max || total >= maxTotalAttempts
	state, next := "done", int64(0)
	if !done {
		state = "pending"
		next = now.Add(backoff(policy.Base, policy.Cap, attempts, out.retryAfter)).UnixMilli()
	}
	var doc, uri any
	if out.status == StatusIndexed {
		doc = out.doc
	}
	if out.uri != "" {
		uri = out.uri
	}
	lastErr := ""
	if out.err != nil {
		lastErr = clipN(out.err.Error(), 500)
	}
	// The token first: a crash before the job's update leaves the job
	// leased, and it runs again when the lease ends.
	q := `UPDATE evm_nft_tokens SET token_uri = COALESCE($1, token_uri), metadata = $2, metadata_status = $3,
			metadata_updated_at = $4
		WHERE chain_key = $5 AND token = $6 AND token_id = $7`
	if !done {
		// Retrying: metadata already indexed stays until the refetch ends.
		q += ` AND metadata_status <> 'INDEXED'`
	}
	if _, err := s.db.ExecContext(ctx, q, uri, doc, out.status, now.Unix(), j.chain.Key, j.token, j.id); err != nil {
		return fmt.Errorf("record NFT metadata: %w", err)
	}
	res, err := s.db.ExecContext(ctx, `UPDATE enrich_nft_jobs SET state = $1, status = $2, attempts = $3, total_attempts = $4,
			next_attempt = $5, lease_until = 0, lease_token = '', token_uri = COALESCE($6, token_uri), metadata = $7,
			updated_at = $8, last_error = $9
		WHERE chain_key = $10 AND token = $11 AND token_id = $12 AND lease_token = $13`,
		state, out.status, attempts, total, next, uri, doc, now.Unix(), lastErr, j.chain.Key, j.token, j.id, j.lease)
	if err != nil {
		return fmt.Errorf("record NFT job: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		s.log.Debug("NFT job changed hands (reindexed) while fetching", "token", j.token, "id", j.id)
	}
	lvl := s.log.Debug
	if out.status != StatusIndexed {
		lvl = s.log.Info
	}
	lvl("NFT metadata", "chain", j.chain.Key, "token", j.token, "id", j.id, "status", out.status, "attempt", attempts,
		"final", done, "err", out.err)
	return nil
}

// ReindexNFT queues a fresh fetch of one token's metadata (POST
// ...:reindex). ErrNotFound when the token is not indexed; *TooSoonError
// within ReindexInterval of the token's previous reindex.
func (s *Service) ReindexNFT(ctx context.Context, chainKey, token, tokenID string) error {
	if s.cfg.NFT.Disabled {
		return ErrNFTDisabled
	}
	if _, ok := s.chains[chainKey]; !ok {
		return fmt.Errorf("%w: chain %s is not enriched", ErrNotFound, chainKey)
	}
	token = strings.ToLower(token)
	var typ string
	err := s.db.QueryRowContext(ctx, `SELECT erc_type FROM evm_nft_tokens WHERE chain_key = $1 AND token = $2 AND token_id = $3`,
		chainKey, token, tokenID).Scan(&typ)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("enrich: reindex: %w", err)
	}
	now := s.now().UnixMilli()
	res, err := s.db.ExecContext(ctx, `INSERT INTO enrich_nft_jobs (chain_key, token, token_id, erc_type, state, next_attempt, reindex_at)
		VALUES ($1, $2, $3, $4, 'pending', $5, $5)
		ON CONFLICT (chain_key, token, token_id) DO UPDATE SET state = 'pending', attempts = 0, total_attempts = 0,
			next_attempt = excluded.next_attempt, lease_until = 0, lease_token = '', reindex_at = excluded.reindex_at
		WHERE enrich_nft_jobs.reindex_at <= $6`,
		chainKey, token, tokenID, typ, now, now-s.cfg.NFT.ReindexInterval.Milliseconds())
	if err != nil {
		return fmt.Errorf("enrich: reindex: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		var last int64
		if err := s.db.QueryRowContext(ctx, `SELECT reindex_at FROM enrich_nft_jobs WHERE chain_key = $1 AND token = $2 AND token_id = $3`,
			chainKey, token, tokenID).Scan(&last); err != nil {
			return fmt.Errorf("enrich: reindex: %w", err)
		}
		wait := time.Duration(last+s.cfg.NFT.ReindexInterval.Milliseconds()-now) * time.Millisecond
		return &TooSoonError{RetryAfter: max(wait, time.Second), Interval: s.cfg.NFT.ReindexInterval}
	}
	s.poke()
	return nil
}
