// Command gpc-tune chooses a GP classifier's hyperparameters by the
// marginal likelihood: a grid, the best points again, and the maximum.
package main

import (
	"os"

	"github.com/gpc-mc/gpc/internal/cli"
)

func main() { os.Exit(cli.Tune(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
