package integration

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/tandem-scheduler/tandem/cmd/kubectl-tandem/pkg/kubectltandem"
	"github.com/tandem-scheduler/tandem/contract"
)

// kubectlTandem runs `kubectl tandem args...` against the control plane
// through its kubeconfig file, as a user would, and returns its stdout.
func (e *env) kubectlTandem(args ...string) string {
	e.t.Helper()
	var out, errOut bytes.Buffer
	cmd := kubectltandem.NewCommand(genericiooptions.IOStreams{Out: &out, ErrOut: &errOut})
	cmd.SetArgs(append(args, "--kubeconfig", controlPlane.KubeconfigPath()))
	if err := cmd.ExecuteContext(e.ctx); err != nil {
		e.t.Fatalf("kubectl tandem %s: %v\nstderr: %s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String()
}

// row returns the fields of the table row whose first field is name.
func row(t *testing.T, table, name string) []string {
	t.Helper()
	for _, line := range strings.Split(table, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == name {
			return f
		}
	}
	t.Fatalf("no row %q in:\n%s", name, table)
	return nil
}

// kubectl-tandem against a real apiserver and the real scheduler: a runner's
// reservation shows as held on its node, then claimed once its workflow pod
// is there, and explain names why a runner that fits nowhere is pending.
func TestKubectlTandem(t *testing.T) {
	e := newEnv(t, tandemConfig(), map[string]string{"kt-n1": "4", "kt-n2": "2"})
	e.create("r1", podSpec{cpu: "500m", runner: true, onNode: "kt-n1",
		annotations: map[string]string{contract.WorkflowRequestsAnnotation: "cpu=2"}})
	e.bound("r1")

	reservations := e.kubectlTandem("reservations", "-n", e.ns)
	if diff := cmp.Diff([]string{"r1", "kt-n1", "cpu=2,pods=1", "annotation", "held"}, row(t, reservations, "r1")[:5]); diff != "" {
		t.Errorf("reservations row (-want,+got):\n%s", diff)
	}
	// NAME CPU-ALLOC CPU-REQ CPU-RSVD CPU-FREE ...: 4 - 500m - 2 reserved.
	nodes := e.kubectlTandem("nodes")
	if diff := cmp.Diff([]string{"kt-n1", "4", "500m", "2", "1500m"}, row(t, nodes, "kt-n1")[:5]); diff != "" {
		t.Errorf("nodes row (-want,+got):\n%s", diff)
	}
	var list kubectltandem.NodeUsageList
	if err := json.Unmarshal([]byte(e.kubectlTandem("nodes", "-o", "json")), &list); err != nil {
		t.Fatal(err)
	}
	for _, u := range list.Items {
		if u.Name == "kt-n1" && (u.Reservations[kubectltandem.PhaseHeld] != 1 || len(u.Holders) != 1 || u.Holders[0].Runner != e.ns+"/r1") {
			t.Errorf("kt-n1 in -o json: %+v, want r1's reservation held there", u)
		}
	}

	// The workflow pod bypasses the scheduler (hooks v0.7.0): the claim
	// leaves nothing held, there is no step headroom.
	e.create("r1-workflow", podSpec{cpu: "2", workflowOf: "r1", node: "kt-n1"})
	e.event("r1-workflow", contract.ReasonClaimed)
	wide := e.kubectlTandem("reservations", "-n", e.ns, "-o", "wide")
	if diff := cmp.Diff([]string{"r1", "kt-n1", "cpu=2,pods=1", "annotation", "claimed"}, row(t, wide, "r1")[:5]); diff != "" {
		t.Errorf("reservations row after the claim (-want,+got):\n%s", diff)
	}
	if got := row(t, wide, "r1"); !strings.Contains(strings.Join(got, " "), " r1-workflow ") {
		t.Errorf("wide row %q does not name the workflow pod", got)
	}
	if diff := cmp.Diff([]string{"kt-n1", "4", "2500m", "0", "1500m"}, row(t, e.kubectlTandem("nodes"), "kt-n1")[:5]); diff != "" {
		t.Errorf("nodes row after the claim (-want,+got):\n%s", diff)
	}

	// r2's pair needs 8500m: no node has it.
	e.runner("r2", "500m", "8")
	msg := e.unschedulable("r2")
	wantContains(t, "r2's PodScheduled message", msg, contract.ErrReasonPairDoesNotFit)
	explain := e.kubectlTandem("explain", "-n", e.ns, "r2")
	t.Logf("kubectl tandem explain r2:\n%s", explain)
	wantContains(t, "explain r2", explain,
		"Kind:           runner",
		"PodScheduled:   False Unschedulable",
		contract.ErrReasonPairDoesNotFit,
		"Verdict: no node has cpu=8500m free after reservations; the largest is ")
}

// kubectl-tandem reports the reservation the plugin recorded in the
// Binding, field for field: the size, the step headroom and the host ports
// of the record on r1, held on r1's node.
func TestKubectlTandemReadsThePluginsRecord(t *testing.T) {
	e := newEnv(t, tandemConfig(`defaultStepRequests: {cpu: 500m}`, `defaultHostPorts: ["6379"]`), map[string]string{"kr-n1": "4"})
	e.runner("r1", "500m", "1")
	e.bound("r1")
	rec, ok, err := contract.RecordedReservation(e.get("r1"))
	if !ok || err != nil {
		t.Fatalf("no record on r1: %v, %v", ok, err)
	}
	if len(rec.StepRequests) == 0 || len(rec.HostPorts) == 0 {
		t.Fatalf("record %+v lacks the step headroom or host ports this test means to compare", rec)
	}
	var list kubectltandem.ReservationList
	if err := json.Unmarshal([]byte(e.kubectlTandem("reservations", "-n", e.ns, "-o", "json")), &list); err != nil {
		t.Fatal(err)
	}
	var got []kubectltandem.Reservation
	for _, r := range list.Items {
		if r.Runner == "r1" {
			got = append(got, r)
		}
	}
	if len(got) != 1 {
		t.Fatalf("kubectl-tandem reports %d reservations of r1, want 1: %+v", len(got), list.Items)
	}
	r := got[0]
	if r.Phase != kubectltandem.PhaseHeld || r.Invalid != "" || r.Node != rec.Node || r.RunnerUID != rec.RunnerUID {
		t.Errorf("kubectl-tandem reports r1 %s on %s for UID %s (invalid: %q), want held on %s for %s", r.Phase, r.Node, r.RunnerUID, r.Invalid, rec.Node, rec.RunnerUID)
	}
	if diff := cmp.Diff(rec.Requests, r.Requests); diff != "" {
		t.Errorf("size (-record,+kubectl-tandem):\n%s", diff)
	}
	if diff := cmp.Diff(rec.StepRequests, r.StepRequests); diff != "" {
		t.Errorf("step headroom (-record,+kubectl-tandem):\n%s", diff)
	}
	if diff := cmp.Diff(rec.HostPorts, r.HostPorts); diff != "" {
		t.Errorf("host ports (-record,+kubectl-tandem):\n%s", diff)
	}
}
