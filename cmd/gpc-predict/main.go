// Command gpc-predict reads a particle cloud and writes test posteriors. Run gpc-predict --help for its usage.
package main

import (
	"os"

	"github.com/gpc-mc/gpc/internal/cli"
)

func main() { os.Exit(cli.Predict(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
