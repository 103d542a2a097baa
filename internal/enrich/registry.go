package enrich

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/mail"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// The contract registry is the operator's file of curated contract facts,
// YAML or JSON (JSON is YAML):
//
//	contracts:
//	  - chainId: "43114"            # EVM chain id (or the index's chain key, e.g. C)
//	    address: "0xB97E..."        # any case
//	    name: "Some Protocol"       # shown when the contract has no name() of its own
//	    description: "..."
//	    officialSite: "https://..."
//	    email: "team@example.org"
//	    logoAsset:   {assetId: "logo-1", imageUri: "https://.../logo.png"}
//	    bannerAsset: {imageUri: "https://.../banner.png"}
//	    color: "#E84142"
//	    resourceLinks: [{type: Website, url: "https://..."}, {type: Twitter, url: "https://..."}]
//	    tags: [defi, dex]
//	    tokenReputation: Benign     # Benign or Malicious: overrides the heuristics
//	    coingeckoCoinId: "usd-coin" # prices this token by CoinGecko coin id
//
// Unknown keys, malformed addresses, URLs, e-mail addresses, colours,
// resource-link types outside the published ResourceLinkType set and
// duplicate contracts are errors naming the entry.

// ImageAsset is a curated logo or banner.
type ImageAsset struct {
	AssetID  string `yaml:"assetId" json:"assetId,omitempty"`
	ImageURI string `yaml:"imageUri" json:"imageUri,omitempty"`
}

// ResourceLink is a curated link.
type ResourceLink struct {
	Type string `yaml:"type" json:"type"`
	URL  string `yaml:"url" json:"url"`
}

// ContractInfo is one registry entry.
type ContractInfo struct {
	ChainID         string         `yaml:"chainId"`
	Address         string         `yaml:"address"`
	Name            string         `yaml:"name"`
	Description     string         `yaml:"description"`
	OfficialSite    string         `yaml:"officialSite"`
	Email           string         `yaml:"email"`
	LogoAsset       *ImageAsset    `yaml:"logoAsset"`
	BannerAsset     *ImageAsset    `yaml:"bannerAsset"`
	Color           string         `yaml:"color"`
	ResourceLinks   []ResourceLink `yaml:"resourceLinks"`
	Tags            []string       `yaml:"tags"`
	TokenReputation string         `yaml:"tokenReputation"`
	CoinGeckoCoinID string         `yaml:"coingeckoCoinId"`
}

// ResourceLinkTypes is the published ResourceLinkType set.
var ResourceLinkTypes = []string{"Blog", "CoinGecko", "CoinMarketCap", "Discord", "Documentation", "Facebook",
	"Github", "Instagram", "LinkedIn", "Medium", "Reddit", "Support", "Telegram", "TikTok", "Twitter", "Website",
	"Whitepaper", "Youtube"}

// Reputations.
const (
	ReputationMalicious = "Malicious"
	ReputationBenign    = "Benign"
)

// registry is one loaded version of the file.
type registry struct {
	byKey map[regKey]*ContractInfo
	list  []*ContractInfo
}

type regKey struct{ chain, addr string }

const maxRegistryBytes = 32 << 20

var (
	reAddress = regexp.MustCompile(`^0[xX][0-9a-fA-F]{40}$`)
	reColor   = regexp.MustCompile(`^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$`)
	reChainID = regexp.MustCompile(`^[0-9]{1,20}$`)
)

// parseRegistry reads and validates a registry file. chainIDs maps the
// index's chain keys to EVM chain ids, so entries may name either.
func parseRegistry(data []byte, chainIDs map[string]string) (*registry, error) {
	var doc struct {
		Contracts *[]ContractInfo `yaml:"contracts"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("registry: %w", err)
	}
	// An empty file is more likely a file being rewritten than an operator
	// removing every entry (who writes "contracts: []").
	if doc.Contracts == nil {
		return nil, errors.New("registry: no contracts key (write \"contracts: []\" for an empty registry)")
	}
	contracts := *doc.Contracts
	linkTypes := map[string]bool{}
	for _, t := range ResourceLinkTypes {
		linkTypes[t] = true
	}
	r := &registry{byKey: map[regKey]*ContractInfo{}}
	var errs []error
	for i := range contracts {
		c := &contracts[i]
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("registry: contracts[%d] (%s): %s", i, clip(c.Address), fmt.Sprintf(format, args...)))
		}
		c.ChainID = strings.TrimSpace(c.ChainID)
		if id, ok := chainIDs[c.ChainID]; ok {
			c.ChainID = id
		} else if !reChainID.MatchString(c.ChainID) {
			bad("chainId %q is neither an EVM chain id nor an indexed chain", clip(c.ChainID))
		}
		if !reAddress.MatchString(c.Address) {
			bad("address must be 0x and 40 hex digits")
		}
		c.Address = strings.ToLower(c.Address)
		for name, v := range map[string]string{"name": c.Name, "description": c.Description} {
			if !utf8.ValidString(v) || len(v) > 4096 {
				bad("%s must be UTF-8 text of at most 4096 bytes", name)
			}
		}
		if c.OfficialSite != "" && !webURL(c.OfficialSite, false) {
			bad("officialSite %q is not an http(s) URL", clip(c.OfficialSite))
		}
		if c.Email != "" {
			if a, err := mail.ParseAddress(c.Email); err != nil || a.Address != c.Email || len(c.Email) > 254 {
				bad("email %q is not an e-mail address", clip(c.Email))
			}
		}
		for name, a := range map[string]*ImageAsset{"logoAsset": c.LogoAsset, "bannerAsset": c.BannerAsset} {
			if a == nil {
				continue
			}
			if a.ImageURI != "" && !webURL(a.ImageURI, true) {
				bad("%s.imageUri %q is not an http(s) or ipfs URL", name, clip(a.ImageURI))
			}
			if len(a.AssetID) > 256 || (a.AssetID == "" && a.ImageURI == "") {
				bad("%s needs an assetId or an imageUri", name)
			}
		}
		if c.Color != "" && !reColor.MatchString(c.Color) {
			bad("color %q is not a #RGB or #RRGGBB colour", clip(c.Color))
		}
		for j, l := range c.ResourceLinks {
			if !linkTypes[l.Type] {
				bad("resourceLinks[%d].type %q is not one of %s", j, clip(l.Type), strings.Join(ResourceLinkTypes, ", "))
			}
			if !webURL(l.URL, false) {
				bad("resourceLinks[%d].url %q is not an http(s) URL", j, clip(l.URL))
			}
		}
		if len(c.Tags) > 32 {
			bad("at most 32 tags")
		}
		for j, t := range c.Tags {
			if strings.TrimSpace(t) == "" || len(t) > 64 || !utf8.ValidString(t) {
				bad("tags[%d] must be non-empty text of at most 64 bytes", j)
			}
		}
		switch c.TokenReputation {
		case "", ReputationBenign, ReputationMalicious:
		default:
			bad("tokenReputation %q: want Benign or Malicious", clip(c.TokenReputation))
		}
		if len(c.CoinGeckoCoinID) > 128 || strings.ContainsAny(c.CoinGeckoCoinID, "/?#& ") {
			bad("coingeckoCoinId %q is not a coin id", clip(c.CoinGeckoCoinID))
		}
		k := regKey{c.ChainID, c.Address}
		if _, dup := r.byKey[k]; dup {
			bad("listed twice for chain %s", c.ChainID)
			continue
		}
		r.byKey[k] = c
		r.list = append(r.list, c)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return r, nil
}

func webURL(s string, ipfs bool) bool {
	u, err := url.Parse(s)
	if err != nil {
		return false
	}
	switch u.Scheme {
	case "http", "https":
		return u.Host != ""
	case "ipfs":
		return ipfs && (u.Host != "" || u.Path != "")
	}
	return false
}

// fileWatch notices changes of a file by modification time and size.
type fileWatch struct {
	path  string
	mtime time.Time
	size  int64
	seen  bool
}

// changed reports whether the file differs from the last read one and,
// if so, returns its content.
func (w *fileWatch) changed() ([]byte, bool, error) {
	st, err := os.Stat(w.path)
	if err != nil {
		return nil, false, err
	}
	if w.seen && st.ModTime().Equal(w.mtime) && st.Size() == w.size {
		return nil, false, nil
	}
	data, err := readLimited(w.path, maxRegistryBytes)
	if err != nil {
		return nil, false, err
	}
	w.mtime, w.size, w.seen = st.ModTime(), st.Size(), true
	return data, true, nil
}

func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	return data, nil
}
