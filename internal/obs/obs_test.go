package obs

import "testing"

// Node call names carry their arguments; the method label must not (a
// label per height would grow without bound).
func TestMethodOf(t *testing.T) {
	for _, c := range []struct{ op, want string }{
		{"platform.getBlockByHeight(12)", "platform.getBlockByHeight"},
		{"info.getBlockchainID(X)", "info.getBlockchainID"},
		{"platform.getHeight", "platform.getHeight"},
		{"eth_getBlockByNumber+eth_getBlockReceipts(1..20)", "eth_getBlockByNumber+eth_getBlockReceipts"},
		{"batch of 20 (eth_getBlockByNumber...)", "batch:eth_getBlockByNumber"},
		{"batch of 3", "batch"},
	} {
		if got := MethodOf(c.op); got != c.want {
			t.Errorf("MethodOf(%q) = %q, want %q", c.op, got, c.want)
		}
	}
	var m *Metrics // a nil Metrics measures nothing, without panicking
	m.NodeCall("x", 0, nil)
	m.Request("/", "GET", 200, 0)
	m.Batch("P", 1, 0)
	m.WatchStore(nil)
}
