package apibench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// Scenario is the query mix of one endpoint.
type Scenario struct {
	Name string
	// First returns the path and query of a first-page request.
	First func(r *rand.Rand) string
	// Follow is the chance that a client asks for the next page (with the
	// response's nextPageToken) instead of a new query, up to Depth pages.
	Follow float64
	Depth  int
}

// Load is how hard to push each endpoint.
type Load struct {
	Clients  int           // concurrent clients (each one keeps one connection)
	Duration time.Duration // per endpoint, after the warm-up
	Requests int           // per endpoint at most (0: no limit)
	Warmup   int           // requests per endpoint before measuring
	Meters   []Meter       // CPU counters of the serving side, read around the measured requests
}

// Result is what one endpoint did under Load.
type Result struct {
	Name      string
	Requests  int
	NextPages int // requests that continued a listing with a page token
	Errors    int // non-200 answers and transport errors
	ErrSample string
	P50, P99  time.Duration
	Max       time.Duration
	PerSecond float64
	Elapsed   time.Duration
	Slowest   []Timed // the slowest requests, slowest first
	// CPU is each of Load.Meters' CPU time over the measured requests.
	CPU []Used
}

// Used is a Meter's CPU time over a run's measured requests.
type Used struct {
	Meter string
	CPU   time.Duration
}

// Timed is one request and its latency.
type Timed struct {
	Path    string
	Latency time.Duration
}

// Run drives base+scenario with l.Clients concurrent clients.
func Run(ctx context.Context, base string, sc Scenario, l Load, seed int64) Result {
	tr := &http.Transport{MaxIdleConns: l.Clients * 2, MaxIdleConnsPerHost: l.Clients * 2, DisableCompression: true,
		IdleConnTimeout: time.Minute}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: time.Minute}
	type sample struct {
		lat  time.Duration
		next bool
		err  string
		path string
	}
	var (
		mu      sync.Mutex
		samples []sample
		started time.Time
		count   int
		warm    = l.Warmup
		cpu0    = make([]time.Duration, len(l.Meters))
	)
	// take reserves a request slot: measured (true) or warm-up (false).
	take := func() (ok, measured bool) {
		mu.Lock()
		defer mu.Unlock()
		if warm > 0 {
			warm--
			return true, false
		}
		if started.IsZero() {
			for i, m := range l.Meters {
				cpu0[i] = m.Read()
			}
			started = time.Now()
		}
		if (l.Requests > 0 && count >= l.Requests) || time.Since(started) >= l.Duration {
			return false, false
		}
		count++
		return true, true
	}
	var wg sync.WaitGroup
	for c := 0; c < l.Clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed*1000 + int64(c)))
			var pending, first string
			depth := 0
			for ctx.Err() == nil {
				ok, measured := take()
				if !ok {
					return
				}
				path, next := "", false
				if pending != "" && depth < sc.Depth && rng.Float64() < sc.Follow {
					path, next = pending, true
					depth++
				} else {
					first = sc.First(rng)
					path, depth = first, 1
				}
				pending = ""
				t0 := time.Now()
				status, body, err := get(ctx, client, base+path)
				lat := time.Since(t0)
				s := sample{lat: lat, next: next, path: path}
				switch {
				case err != nil:
					s.err = err.Error()
				case status != http.StatusOK:
					s.err = fmt.Sprintf("%d %s: %s", status, path, truncate(body, 300))
				default:
					if tok := pageToken(body); tok != "" {
						sep := "?"
						if strings.Contains(first, "?") {
							sep = "&"
						}
						pending = first + sep + "pageToken=" + url.QueryEscape(tok)
					}
				}
				if measured {
					mu.Lock()
					samples = append(samples, s)
					mu.Unlock()
				}
			}
		}(c)
	}
	wg.Wait()
	res := Result{Name: sc.Name, Requests: len(samples)}
	if !started.IsZero() {
		res.Elapsed = time.Since(started)
		for i, m := range l.Meters {
			res.CPU = append(res.CPU, Used{m.Name, m.Read() - cpu0[i]})
		}
	}
	lats := make([]time.Duration, 0, len(samples))
	for _, s := range samples {
		lats = append(lats, s.lat)
		if s.next {
			res.NextPages++
		}
		if s.err != "" {
			res.Errors++
			if res.ErrSample == "" {
				res.ErrSample = s.err
			}
		}
	}
	sort.Slice(samples, func(i, j int) bool { return samples[i].lat > samples[j].lat })
	for _, s := range samples[:min(5, len(samples))] {
		res.Slowest = append(res.Slowest, Timed{Path: s.path, Latency: s.lat})
	}
	if len(lats) > 0 {
		sort.Slice(lats, func(i, j int) bool { return lats[i] < lats[j] })
		res.P50 = quantile(lats, 0.50)
		res.P99 = quantile(lats, 0.99)
		res.Max = lats[len(lats)-1]
		res.PerSecond = float64(len(lats)) / res.Elapsed.Seconds()
	}
	return res
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// quantile is the nearest-rank quantile of sorted values.
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func get(ctx context.Context, c *http.Client, u string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

var tokenKey = []byte(`"nextPageToken":"`)

// pageToken finds the response's nextPageToken without decoding the body
// (the clients share the server's two cores: keep them cheap).
func pageToken(body []byte) string {
	i := bytes.Index(body, tokenKey)
	if i < 0 {
		return ""
	}
	rest := body[i+len(tokenKey):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return string(rest[:j])
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// LoadAverage is /proc/loadavg's first three fields ("" where unavailable).
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
