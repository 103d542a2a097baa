package config

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

func TestPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.yaml")
	os.WriteFile(file, []byte("listen: 127.0.0.1:1\nnode: http://file\nevm-rpc: [http://a, http://b]\nbatch-size: 7\n"), 0o644)
	t.Setenv("PERMAFROST_NODE", "http://env")
	t.Setenv("PERMAFROST_RPC_CONCURRENCY", "1")
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	c := Register(fs)
	if err := Parse(fs, "serve", []string{"--config", file, "--listen", "127.0.0.1:2"}); err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:2" || c.Node != "http://env" || c.BatchSize != 7 || len(c.EVMRPC) != 2 || c.DB != "sqlite:./data/permafrost.db" ||
		c.RPCConcurrency != 1 || c.RPCBatch != 0 {
		t.Fatalf("got %+v", c)
	}
}

func TestBadFile(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"unknown": "nope: 1\n", "badint": "batch-size: x\n", "yaml": ":::\n- ["} {
		file := filepath.Join(dir, name+".yaml")
		os.WriteFile(file, []byte(body), 0o644)
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		Register(fs)
		if err := Parse(fs, "serve", []string{"--config", file}); err == nil {
			t.Errorf("%s: want error", name)
		}
	}
}
