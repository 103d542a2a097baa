package export

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/permafrost-dev/permafrost/internal/api"
)

// Request is the body of POST /v1/operations/transactions:export: the union
// of CreateEvmTransactionExportRequest and
// CreatePrimaryNetworkTransactionExportRequest.
type Request struct {
	Type      string          `json:"type"`
	FirstDate string          `json:"firstDate"`
	LastDate  string          `json:"lastDate"`
	StartDate string          `json:"startDate"` // deprecated alias of firstDate
	EndDate   string          `json:"endDate"`   // deprecated alias of lastDate
	Options   *RequestOptions `json:"options"`
}

// RequestOptions is EvmNetworkOptions or PrimaryNetworkOptions.
type RequestOptions struct {
	Addresses          []string `json:"addresses"`
	CChainEVMAddresses []string `json:"cChainEvmAddresses"`
	IncludeChains      []string `json:"includeChains"`
}

// MaxAddresses bounds each address list of a request, MaxChains includeChains.
const (
	MaxAddresses = 100
	MaxChains    = 50
)

// Spec is a validated request as a job stores and runs it.
type Spec struct {
	Type OperationType `json:"type"`
	// First and Last are the inclusive UTC date range, YYYY-MM-DD.
	First string `json:"first"`
	Last  string `json:"last"`
	// Chains are chain keys (P, X, C or an EVM chain id), deduplicated.
	Chains []string `json:"chains"`
	// Addresses: EVM exports, 0x-lowercase hex; primary-network exports,
	// bech32 without chain prefix (as the index stores them). Sorted, unique.
	Addresses []string `json:"addresses,omitempty"`
	// EVMAddresses are the cChainEvmAddresses of a primary-network export
	// (0x-lowercase), matched against C-chain atomic txs' EVM inputs/outputs.
	EVMAddresses []string `json:"evmAddresses,omitempty"`
}

// span returns the range as [lo, hi) unix seconds.
func (s Spec) span() (lo, hi int64, err error) {
	f, err1 := time.Parse(time.DateOnly, s.First)
	l, err2 := time.Parse(time.DateOnly, s.Last)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("spec: bad dates %q..%q", s.First, s.Last)
	}
	return f.Unix(), l.AddDate(0, 0, 1).Unix(), nil
}

func (s Spec) encode() string {
	b, _ := json.Marshal(s)
	return string(b)
}

func decodeSpec(v string) (Spec, error) {
	var s Spec
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return s, fmt.Errorf("spec: %w", err)
	}
	return s, nil
}

// Validate checks r against the network the index serves, at now, and
// returns the job's Spec. Every problem found is in the returned 400.
func (r Request) Validate(n *api.Network, now time.Time) (Spec, error) {
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }

	var s Spec
	switch t := OperationType(r.Type); {
	case r.Type == "":
		fail("type is required (one of %s)", typeList())
	case t == TypeEVM || t.Primary():
		s.Type = t
	default:
		fail("type must be one of %s, got %q", typeList(), clip(r.Type))
	}

	first := pickDate(fail, "firstDate", r.FirstDate, "startDate", r.StartDate)
	last := pickDate(fail, "lastDate", r.LastDate, "endDate", r.EndDate)
	if last.IsZero() {
		y, m, d := now.UTC().Date()
		last = time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	}
	if first.IsZero() {
		first = time.Unix(0, 0).UTC()
	}
	if first.After(last) {
		fail("firstDate %s is after lastDate %s", first.Format(time.DateOnly), last.Format(time.DateOnly))
	}
	s.First, s.Last = first.Format(time.DateOnly), last.Format(time.DateOnly)

	if r.Options == nil {
		fail("options is required")
		return s, api.BadRequest(errs...)
	}
	o := r.Options
	switch {
	case s.Type == TypeEVM:
		if o.CChainEVMAddresses != nil {
			fail("options.cChainEvmAddresses is an option of primary-network exports, not of %s", TypeEVM)
		}
		if len(o.Addresses) == 0 {
			fail("options.addresses is required: at least one EVM address")
		}
		s.Addresses = evmAddresses(fail, "options.addresses", o.Addresses)
		if len(o.IncludeChains) == 0 {
			fail("options.includeChains is required: at least one EVM chain id")
		}
		s.Chains = chainKeys(fail, o.IncludeChains, func(id string) (api.ChainRef, error) { return n.EVMChain(id) })
	case s.Type.Primary():
		if len(o.IncludeChains) == 0 {
			fail("options.includeChains is required: p-chain, x-chain, c-chain or their blockchain ids")
		}
		s.Chains = chainKeys(fail, o.IncludeChains, n.Blockchain)
		s.Addresses = bech32Addresses(fail, n.HRP, o.Addresses)
		s.EVMAddresses = evmAddresses(fail, "options.cChainEvmAddresses", o.CChainEVMAddresses)
		hasC, hasP := contains(s.Chains, "C"), contains(s.Chains, "P")
		if s.Type == TypePrimaryStaking {
			if !hasP && len(s.Chains) > 0 {
				fail("options.includeChains must include p-chain: staking exports read the P-chain")
			}
			if len(s.EVMAddresses) > 0 {
				fail("options.cChainEvmAddresses does not apply to staking exports")
			}
			s.Chains = []string{"P"}
		} else if len(s.EVMAddresses) > 0 && !hasC && len(s.Chains) > 0 {
			fail("options.cChainEvmAddresses needs c-chain in options.includeChains")
		}
	}
	if len(errs) > 0 {
		return s, api.BadRequest(errs...)
	}
	return s, nil
}

func typeList() string {
	names := make([]string, len(Types))
	for i, t := range Types {
		names[i] = string(t)
	}
	return strings.Join(names, ", ")
}

// pickDate reads a date given under its name or its deprecated alias.
func pickDate(fail func(string, ...any), name, v, alias, av string) time.Time {
	if v != "" && av != "" && v != av {
		fail("%s and %s (its deprecated alias) differ: %q and %q", name, alias, clip(v), clip(av))
		return time.Time{}
	}
	if v == "" {
		v, name = av, alias
	}
	if v == "" {
		return time.Time{}
	}
	t, err := api.ParseDate(v)
	if err != nil {
		fail("%s: %v", name, err)
		return time.Time{}
	}
	return t
}

func evmAddresses(fail func(string, ...any), name string, in []string) []string {
	if len(in) > MaxAddresses {
		fail("%s takes at most %d addresses, got %d", name, MaxAddresses, len(in))
		return nil
	}
	set := map[string]bool{}
	for _, a := range in {
		addr, err := api.ParseEVMAddress(a)
		if err != nil {
			fail("%s: %v", name, err)
			continue
		}
		set[strings.ToLower(addr.Hex())] = true
	}
	return sortedKeys(set)
}

func bech32Addresses(fail func(string, ...any), hrp string, in []string) []string {
	if len(in) > MaxAddresses {
		fail("options.addresses takes at most %d addresses, got %d", MaxAddresses, len(in))
		return nil
	}
	set := map[string]bool{}
	for _, a := range in {
		_, _, err := api.ParseBech32Address(hrp, a)
		if err != nil {
			fail("options.addresses: %v", err)
			continue
		}
		// The index stores addresses without the chain prefix, lower case.
		if len(a) > 2 && a[1] == '-' {
			a = a[2:]
		}
		set[strings.ToLower(a)] = true
	}
	return sortedKeys(set)
}

func chainKeys(fail func(string, ...any), in []string, resolve func(string) (api.ChainRef, error)) []string {
	if len(in) > MaxChains {
		fail("options.includeChains takes at most %d chains, got %d", MaxChains, len(in))
		return nil
	}
	var out []string
	for _, id := range in {
		c, err := resolve(id)
		if err != nil {
			fail("options.includeChains: chain %q is not indexed by this server", clip(id))
			continue
		}
		if !contains(out, c.Key) {
			out = append(out, c.Key)
		}
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:61] + "..."
	}
	return s
}
