// Command gpc-show prints a saved gpc stream as a table or CSV, or its metadata. Run gpc-show --help for its usage.
package main

import (
	"os"

	"github.com/gpc-mc/gpc/internal/cli"
)

func main() { os.Exit(cli.Show(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
