package export

import (
	"context"
	"fmt"
	"testing"

	"github.com/permafrost-dev/permafrost/internal/testenv"
)

func TestDbg(t *testing.T) {
	e := testenv.Devnet(t, "sqlite")
	for _, q := range []string{
		`SELECT t.tx_id, t.timestamp, EXISTS (SELECT 1 FROM px_tx_addresses a WHERE a.address IN ('custom1w98xaclyc635teqmegl22hn756zrlu26x2u7mz') AND a.chain_key = t.chain_key AND a.timestamp = t.timestamp AND a.tx_id = t.tx_id) FROM px_txs t WHERE t.chain_key = 'C'`,
		`SELECT t.tx_id, t.timestamp FROM px_txs t WHERE t.chain_key = $1 AND t.timestamp >= $2 AND t.timestamp < $3 AND t.timestamp <= $4`,
	} {
		rows, err := e.DB.QueryContext(context.Background(), q, "C", 1795305600, 1795392000, 1795348423)
		if err != nil {
			rows, err = e.DB.QueryContext(context.Background(), q)
		}
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var a, b, c any
			cols, _ := rows.Columns()
			if len(cols) == 3 {
				rows.Scan(&a, &b, &c)
			} else {
				rows.Scan(&a, &b)
			}
			fmt.Printf("%s %v %v\n", a, b, c)
		}
		fmt.Println(rows.Err())
	}
}
