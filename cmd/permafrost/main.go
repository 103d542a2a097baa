package main

import (
	"fmt"

	_ "github.com/ava-labs/avalanchego/genesis"
	_ "github.com/ava-labs/avalanchego/network/p2p/acp118"
	avmblock "github.com/ava-labs/avalanchego/vms/avm/block"
	_ "github.com/ava-labs/avalanchego/vms/platformvm"
	pblock "github.com/ava-labs/avalanchego/vms/platformvm/block"
	_ "github.com/ava-labs/libevm/accounts/abi"
	_ "github.com/ava-labs/libevm/core/types"
	_ "github.com/jackc/pgx/v5"
	_ "github.com/mattn/go-sqlite3"
)

func main() { fmt.Println(pblock.Codec != nil, avmblock.Parse) }
