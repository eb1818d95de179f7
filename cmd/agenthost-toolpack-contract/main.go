// Command agenthost-toolpack-contract is the contract toolpack plugin binary.
package main

import (
	contract "github.com/agenthost/agenthost/plugins/toolpack-contract"
	"github.com/agenthost/agenthost/sdk"
)

func main() { sdk.ServeToolpack(contract.New()) }
