package apibench

import (
	"math/rand"
	"strings"
)

// mixWeights are the shares of the mixed load (issue #22): what wallets and
// explorers ask most, an address's balances, UTXOs and history and a
// transaction or block by id, weigh 3; every other data-service listing 1.
// Scenarios not named here weigh 1; the metrics routes are left out (another
// service, measured on their own).
var mixWeights = map[string]int{
	"primary.utxos.X": 3, "primary.utxos.P": 3, "primary.balances": 3, "primary.transactions": 3,
	"evm.balances.getNative": 3, "evm.balances.listErc20": 3, "evm.address.transactions": 3,
	"evm.transactions.get": 3, "evm.blocks.get": 3, "evm.transactions.listNative": 3,
}

// MixedName is the mixed load's scenario name.
const MixedName = "mixed"

// Mixed is one scenario that draws each new query from the data-service
// scenarios, by mixWeights: run as one load, its req/s is the aggregate
// throughput of a weighted mix of the endpoints. A client continues the
// listing it last asked for, as in each endpoint's own run.
func Mixed(scs []Scenario) Scenario {
	var firsts []func(r *rand.Rand) string
	for _, sc := range scs {
		if strings.HasPrefix(sc.Name, "metrics.") {
			continue
		}
		w := mixWeights[sc.Name]
		if w == 0 {
			w = 1
		}
		for range w {
			firsts = append(firsts, sc.First)
		}
	}
	return Scenario{Name: MixedName, Follow: 0.5, Depth: 5, First: func(r *rand.Rand) string {
		return firsts[r.Intn(len(firsts))](r)
	}}
}
