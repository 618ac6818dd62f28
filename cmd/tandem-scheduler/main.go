// Command tandem-scheduler is kube-scheduler built with the WorkflowReservation
// plugin, which places an ARC runner pod and its future workflow pod as one group.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	// JSON logging (--logging-format=json), as kube-scheduler has it.
	_ "k8s.io/component-base/logs/json/register"
	// client-go and version metrics on /metrics, as kube-scheduler has them.
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"

	// Registers WorkflowReservationArgs with kube-scheduler's config scheme.
	_ "github.com/tandem-scheduler/tandem/pkg/apis/config/scheme"
)

func main() {
	os.Exit(cli.Run(newCommand()))
}
