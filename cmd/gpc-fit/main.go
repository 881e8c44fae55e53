// Command gpc-fit fits a GP classifier's hyperparameters by maximizing the
// exact log marginal likelihood, for gpc-kernel --hyper.
package main

import (
	"os"

	"github.com/gpc-mc/gpc/internal/cli"
)

func main() { os.Exit(cli.Fit(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
