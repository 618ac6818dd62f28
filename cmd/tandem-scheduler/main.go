// Command tandem-scheduler is kube-scheduler built with the WorkflowReservation
// plugin, which places an ARC runner pod and its future workflow pod as one group.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	_ "github.com/tandem-scheduler/tandem/pkg/apis/config/scheme"
	"github.com/tandem-scheduler/tandem/pkg/workflowreservation"
)

func main() {
	command := app.NewSchedulerCommand(
		app.WithPlugin(workflowreservation.Name, workflowreservation.New),
	)
	os.Exit(cli.Run(command))
}
