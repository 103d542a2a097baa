package enrich

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// metaServer is a metadata host on 127.0.0.1 whose answer per path is
// chosen by the test: it stands in for the recorded http://127.0.0.1:8080
// host and, under /ipfs/, for an IPFS gateway.
type metaServer struct {
	srv      *httptest.Server
	mu       sync.Mutex
	mode     map[string]string // path -> mode (default "good")
	docs     map[string]string // path -> the good document
	hits     map[string]int
	inflight atomic.Int32
	release  chan struct{} // closed: "hang" requests return
}

// Modes.
const (
	modeGood         = "good"         // the document
	modeSlow         = "slow"         // no answer before the client's timeout
	modeHuge         = "huge"         // a body above the size limit, with Content-Length
	modeHugeStream   = "huge-stream"  // the same, streamed without Content-Length
	modeMalformed    = "malformed"    // not JSON
	modeNotMetadata  = "not-metadata" // JSON, not a metadata object
	modeRedirectPriv = "redirect-private"
	modeRedirectMeta = "redirect-metadata-service"
	modeRedirectGood = "redirect-good" // a redirect to the good document on this host
	modeThrottled    = "429"
	modeThrottleOnce = "429-once"
	modeError        = "500"
	modeHang         = "hang" // no answer until released
)

func newMetaServer(t *testing.T) *metaServer {
	m := &metaServer{mode: map[string]string{}, docs: map[string]string{}, hits: map[string]int{}, release: make(chan struct{})}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(func() {
		m.unblock()
		m.srv.Close()
	})
	return m
}

func (m *metaServer) unblock() {
	m.mu.Lock()
	defer m.mu.Unlock()
	select {
	case <-m.release:
	default:
		close(m.release)
	}
}

func (m *metaServer) addr() string { return m.srv.Listener.Addr().String() }

func (m *metaServer) set(path, mode, doc string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mode[path] = mode
	if doc != "" {
		m.docs[path] = doc
	}
}

func (m *metaServer) hitsOf(path string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.hits[path]
}

func (m *metaServer) resetHits() {
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.hits)
}

const serverMaxBytes = 4096 // the tests' NFTConfig.MaxBytes

func (m *metaServer) serve(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	if strings.HasPrefix(path, "/final/") { // the target of redirect-good
		path = strings.TrimPrefix(path, "/final")
		m.mu.Lock()
		doc := m.docs[path]
		m.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, doc)
		return
	}
	m.mu.Lock()
	m.hits[path]++
	n := m.hits[path]
	mode, doc := m.mode[path], m.docs[path]
	release := m.release
	m.mu.Unlock()
	if mode == "" {
		mode = modeGood
	}
	if doc == "" {
		http.NotFound(w, r)
		return
	}
	switch mode {
	case modeGood:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, doc)
	case modeSlow:
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	case modeHuge:
		body := `{"name":"` + strings.Repeat("x", serverMaxBytes) + `"}`
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		fmt.Fprint(w, body)
	case modeHugeStream:
		f, _ := w.(http.Flusher)
		fmt.Fprint(w, `{"name":"`)
		for i := 0; i < 64 && r.Context().Err() == nil; i++ {
			fmt.Fprint(w, strings.Repeat("y", 256))
			if f != nil {
				f.Flush()
			}
		}
		fmt.Fprint(w, `"}`)
	case modeMalformed:
		fmt.Fprint(w, `{"name": "cut in the midd`)
	case modeNotMetadata:
		fmt.Fprint(w, `[1, 2, 3]`)
	case modeRedirectPriv:
		http.Redirect(w, r, "http://10.255.255.1:8080/nft.json", http.StatusFound)
	case modeRedirectMeta:
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/iam/security-credentials/", http.StatusFound)
	case modeRedirectGood:
		http.Redirect(w, r, "/final"+path, http.StatusMovedPermanently)
	case modeThrottled:
		w.Header().Set("Retry-After", "0")
		http.Error(w, "slow down", http.StatusTooManyRequests)
	case modeThrottleOnce:
		if n == 1 {
			w.Header().Set("Retry-After", "0")
			http.Error(w, "slow down", http.StatusTooManyRequests)
			return
		}
		fmt.Fprint(w, doc)
	case modeError:
		http.Error(w, "oops", http.StatusInternalServerError)
	case modeHang:
		m.inflight.Add(1)
		defer m.inflight.Add(-1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}
}
