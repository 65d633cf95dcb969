// Command kubectl-stsdiag is the stsdiag kubectl/oc plugin.
package main

import (
	"os"

	"github.com/stsdiag/stsdiag/cmd"
)

func main() { os.Exit(cmd.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
