// Command subnetevm is the subnet-evm VM plugin for the live-network tests.
//
// It replaces graft/subnet-evm/plugin's own main, which raises the open-file
// limit to 32,768 and exits when the hard limit is lower (the sandbox's is
// 20,000). Everything else matches that main: register libevm's extras, answer
// --version, serve the VM over rpcchainvm.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/ava-labs/avalanchego/graft/subnet-evm/plugin/evm"
	"github.com/ava-labs/avalanchego/graft/subnet-evm/plugin/runner"
	"github.com/ava-labs/avalanchego/version"
	"github.com/ava-labs/avalanchego/vms/rpcchainvm"
)

func main() {
	evm.RegisterAllLibEVMExtras()

	printVersion, err := runner.PrintVersion()
	if err != nil {
		fmt.Printf("couldn't get config: %s", err)
		os.Exit(1)
	}
	if printVersion {
		fmt.Printf("Subnet-EVM/%s [rpcchainvm=%d]\n", version.Current.SemanticWithCommit(version.GitCommit), version.RPCChainVMProtocol)
		os.Exit(0)
	}
	if err := rpcchainvm.Serve(context.Background(), &evm.VM{}); err != nil {
		fmt.Printf("failed to serve VM: %s", err)
		os.Exit(1)
	}
}
