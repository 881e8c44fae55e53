// Command gpc-merge merges the shards of a sharded run into the unsharded
// run's output. Run gpc-merge --help for its usage.
package main

import (
	"os"

	"github.com/gpc-mc/gpc/internal/cli"
)

func main() { os.Exit(cli.Merge(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
