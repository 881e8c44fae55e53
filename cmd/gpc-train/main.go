// Command gpc-train runs the estimator on a covariance stream and writes the particle cloud. Run gpc-train --help for its usage.
package main

import (
	"os"

	"github.com/gpc-mc/gpc/internal/cli"
)

func main() { os.Exit(cli.Train(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
