// Command kubectl-tandem is a kubectl plugin that shows tandem's workflow
// reservations: what each node has free once they are counted, each runner's
// reservation and its phase, and why a runner or workflow pod is pending.
package main

import (
	"os"

	"github.com/tandem-scheduler/tandem/cmd/kubectl-tandem/pkg/kubectltandem"
)

func main() {
	os.Exit(kubectltandem.Main(os.Args[1:]))
}
