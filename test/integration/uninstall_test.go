package integration

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/harness/inprocess"
)

// cleanupSelectors are the label selectors docs/install.md's uninstall
// deletes pods by: tandem's own pods, the pair pods and the placeholders.
var cleanupSelectors = []string{contract.PairPodLabel + "=true", contract.PlaceholderLabel + "=true"}

// Issue 20, item 10: uninstalling tandem left its pods behind: pair pods of
// pending runners stayed Unschedulable (an autoscaler kept buying nodes for
// them) and placeholders stayed until their runners ended. The documented
// cleanup, run once the scheduler is gone, deletes exactly those, and no
// runner.
func TestUninstallLeavesNothingBehind(t *testing.T) {
	doc := string(readFile(t, "docs/install.md"))
	for _, sel := range cleanupSelectors {
		if want := "kubectl delete pods -A -l " + sel; !strings.Contains(doc, want) {
			t.Errorf("docs/install.md does not say %q", want)
		}
	}
	e := newEnv(t, inprocess.Config(inprocess.Profile{SchedulerName: schedulerName, Tandem: true, ReservationMode: "Pods", Args: []string{"pairPods: true"}}),
		map[string]string{"un-n1": "3"})
	e.runner("r1", "1", "1")
	e.bound("r1")
	e.poll("placeholder of r1 exists", func() (bool, error) { return e.phase(contract.PlaceholderName("r1")) != "", nil })
	// 1 cpu is left: r2 and its workflow pod (3 cpu) wait, with a pair pod.
	e.runner("r2", "1", "2")
	e.poll("pair pod of r2 exists", func() (bool, error) { return e.phase(contract.PairPodName("r2")) != "", nil })

	e.stopScheduler() // helm uninstall
	// As kubectl delete -A -l does: list in every namespace, delete each.
	for _, sel := range cleanupSelectors {
		list, err := e.client.CoreV1().Pods(metav1.NamespaceAll).List(e.ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range list.Items {
			if err := e.client.CoreV1().Pods(p.Namespace).Delete(e.ctx, p.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	pods, err := e.client.CoreV1().Pods(e.ns).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, p := range pods.Items {
		left = append(left, p.Name)
	}
	if strings.Join(left, ",") != "r1,r2" {
		t.Errorf("pods left after the cleanup: %v, want the runners r1 and r2 only", left)
	}
}
