// Command gpc-orthant estimates a Gaussian orthant or box probability in log
// space with a standard error. Run gpc-orthant --help for its usage.
package main

import (
	"os"

	"github.com/gpc-mc/gpc/internal/cli"
)

func main() { os.Exit(cli.Orthant(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
