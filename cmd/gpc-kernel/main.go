// Command gpc-kernel builds the covariance stream of a probit GP classifier from features. Run gpc-kernel --help for its usage.
package main

import (
	"os"

	"github.com/gpc-mc/gpc/internal/cli"
)

func main() { os.Exit(cli.Kernel(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
