// Command gpc-mcmc samples the posterior of a GP classifier's
// hyperparameters by pseudo-marginal MCMC. Run gpc-mcmc --help for its usage.
package main

import (
	"os"

	"github.com/gpc-mc/gpc/internal/cli"
)

func main() { os.Exit(cli.MCMC(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
