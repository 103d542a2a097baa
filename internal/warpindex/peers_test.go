package warpindex_test

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/staking"

	"github.com/permafrost-dev/permafrost/internal/devnet"
	"github.com/permafrost-dev/permafrost/internal/source"
	"github.com/permafrost-dev/permafrost/internal/testenv"
	"github.com/permafrost-dev/permafrost/internal/warp"
	"github.com/permafrost-dev/permafrost/internal/warpindex"
)

// TestNodePeers asks the replay node of the recording (answering as the
// recording node) and compares with its recorded info answers.
func TestNodePeers(t *testing.T) {
	info := devnet.LoadRPC(t, devnet.Info)
	network := devnet.LoadNetwork(t)
	var (
		id struct {
			NodeID string `json:"nodeID"`
		}
		ip struct {
			IP string `json:"ip"`
		}
		peers struct {
			Peers []struct {
				NodeID   string `json:"nodeID"`
				PublicIP string `json:"publicIP"`
			} `json:"peers"`
		}
	)
	rn := devnet.AnsweredBy(network.RecordingNode)
	if !info.FindResult(t, &id, "info.getNodeID", rn) || !info.FindResult(t, &ip, "info.getNodeIP", rn) ||
		!info.FindResult(t, &peers, "info.peers", rn, devnet.ParamsContain("{}")) || len(peers.Peers) == 0 {
		t.Fatal("recording: no info answers of the recording node")
	}
	want := map[string]string{id.NodeID: ip.IP}
	for _, p := range peers.Peers {
		want[p.NodeID] = p.PublicIP
	}

	node, err := source.NewAvalanche(testenv.ReplayNode(t), source.Retry{MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	np := &warpindex.NodePeers{Node: node}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := np.Peers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d peers %v, want %v", len(got), got, want)
	}
	for _, p := range got {
		if want[p.NodeID.String()] != p.Addr.String() {
			t.Errorf("peer %s at %s, recorded %q", p.NodeID, p.Addr, want[p.NodeID.String()])
		}
	}
	self, err := np.Self(ctx)
	if err != nil || self.NodeID.String() != id.NodeID || self.Addr.String() != ip.IP {
		t.Fatalf("self: %v, %v", self, err)
	}

	t.Run("node down", func(t *testing.T) {
		down, err := source.NewAvalanche("http://"+closedAddr(t), source.Retry{MaxAttempts: 1})
		if err != nil {
			t.Fatal(err)
		}
		np := &warpindex.NodePeers{Node: down}
		if _, err := np.Peers(ctx); err == nil || !strings.Contains(err.Error(), "info.peers") {
			t.Fatalf("want an info.peers error, got %v", err)
		}
		if _, err := np.Self(ctx); err == nil {
			t.Fatal("want an error")
		}
	})
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestNewAggregator(t *testing.T) {
	db := testenv.Devnet(t, "sqlite").DB
	ctx := context.Background()

	certPEM, keyPEM, err := staking.NewCertAndKeyBytes()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	keyFile, certFile := filepath.Join(dir, "staker.key"), filepath.Join(dir, "staker.crt")
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		cfg  warpindex.AggregatorConfig
		want string
	}{
		{"no db", warpindex.AggregatorConfig{NetworkID: 88888}, "database"},
		{"no network", warpindex.AggregatorConfig{DB: db}, "network id"},
		{"key without cert", warpindex.AggregatorConfig{DB: db, NetworkID: 88888, TLSKeyFile: keyFile}, "both"},
		{"missing files", warpindex.AggregatorConfig{DB: db, NetworkID: 88888, TLSKeyFile: keyFile + "x", TLSCertFile: certFile}, "staking key pair"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := warpindex.NewAggregator(ctx, tc.cfg)
			if err == nil {
				a.Close()
				t.Fatal("want an error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not mention %q", err, tc.want)
			}
		})
	}

	t.Run("stable node id", func(t *testing.T) {
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		parsed, err := staking.ParseCertificate(cert.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		// The node that does not answer is logged and skipped.
		down, err := source.NewAvalanche("http://"+closedAddr(t), source.Retry{MaxAttempts: 1})
		if err != nil {
			t.Fatal(err)
		}
		a, err := warpindex.NewAggregator(ctx, warpindex.AggregatorConfig{
			DB: db, NetworkID: 88888, TLSKeyFile: keyFile, TLSCertFile: certFile, Node: down, Log: quietLog(),
			Warp: warp.Config{Bootstrappers: []warp.Peer{{NodeID: ids.GenerateTestNodeID(), Addr: netip.MustParseAddrPort(closedAddr(t))}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := a.Close(); err != nil {
				t.Error(err)
			}
		}()
		if a.NodeID() != ids.NodeIDFromCert(parsed) {
			t.Fatalf("node id %s, certificate gives %s", a.NodeID(), ids.NodeIDFromCert(parsed))
		}
	})
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
