package api

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// MaxListItems bounds comma-separated list parameters.
const MaxListItems = 100

// Params reads query parameters, collecting one message per problem so a
// client learns everything wrong with its request at once.
type Params struct {
	q       url.Values
	errs    []string
	maxList int
}

// NewParams reads r's query string. Lists are bounded by the server's
// configured limit (LimitsConfig.MaxListItems via Harden), else MaxListItems.
func NewParams(r *http.Request) *Params {
	p := &Params{q: r.URL.Query(), maxList: MaxListItems}
	if n, ok := r.Context().Value(listLimitKey).(int); ok && n > 0 {
		p.maxList = n
	}
	return p
}

// Values exposes the raw query values.
func (p *Params) Values() url.Values { return p.q }

// Fail records a problem.
func (p *Params) Fail(format string, args ...any) {
	p.errs = append(p.errs, fmt.Sprintf(format, args...))
}

// Err returns a 400 with every recorded problem, or nil.
func (p *Params) Err() error {
	if len(p.errs) == 0 {
		return nil
	}
	return BadRequest(p.errs...)
}

// Has reports whether name was given (non-empty).
func (p *Params) Has(name string) bool { return p.q.Get(name) != "" }

// String returns the value of name ("" when absent).
func (p *Params) String(name string) string { return p.q.Get(name) }

// Int returns an integer parameter within [min, max], def when absent.
func (p *Params) Int(name string, def, min, max int64) int64 {
	s := p.q.Get(name)
	if s == "" {
		return def
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		p.Fail("%s must be an integer, got %q", name, truncate(s))
		return def
	}
	if v < min || v > max {
		p.Fail("%s must be between %d and %d, got %d", name, min, max, v)
		return def
	}
	return v
}

// OptInt returns an optional integer >= min (ok false when absent or invalid).
func (p *Params) OptInt(name string, min int64) (int64, bool) {
	s := p.q.Get(name)
	if s == "" {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		p.Fail("%s must be an integer, got %q", name, truncate(s))
		return 0, false
	}
	if v < min {
		p.Fail("%s must be >= %d, got %d", name, min, v)
		return 0, false
	}
	return v, true
}

// PageSize is the pageSize parameter with the route's default and range.
func (p *Params) PageSize(def, min, max int) int {
	return int(p.Int("pageSize", int64(def), int64(min), int64(max)))
}

// Bool returns a boolean parameter (true/false), def when absent.
func (p *Params) Bool(name string, def bool) bool {
	s := p.q.Get(name)
	switch s {
	case "":
		return def
	case "true":
		return true
	case "false":
		return false
	}
	p.Fail("%s must be true or false, got %q", name, truncate(s))
	return def
}

// Enum returns a parameter that must be one of allowed, def when absent.
func (p *Params) Enum(name, def string, allowed ...string) string {
	s := p.q.Get(name)
	if s == "" {
		return def
	}
	for _, a := range allowed {
		if s == a {
			return s
		}
	}
	p.Fail("%s must be one of %s, got %q", name, strings.Join(allowed, ", "), truncate(s))
	return def
}

// List returns a comma-separated list (also accepting repeated parameters),
// trimmed, without empty items, at most the list limit (MaxListItems by default).
func (p *Params) List(name string) []string {
	var out []string
	for _, v := range p.q[name] {
		for _, item := range strings.Split(v, ",") {
			if item = strings.TrimSpace(item); item != "" {
				out = append(out, item)
			}
		}
	}
	if len(out) > p.maxList {
		p.Fail("%s takes at most %d items, got %d", name, p.maxList, len(out))
		return out[:p.maxList]
	}
	return out
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:61] + "..."
	}
	return s
}
