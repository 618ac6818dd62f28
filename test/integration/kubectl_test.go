package integration

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	kcontract "github.com/tandem-scheduler/tandem/cmd/kubectl-tandem/pkg/contract"
	"github.com/tandem-scheduler/tandem/cmd/kubectl-tandem/pkg/kubectltandem"
	"github.com/tandem-scheduler/tandem/pkg/contract"
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

// kubectl-tandem reads the record through its generated copy of
// pkg/contract (its own module, for go install; make verify keeps the copy
// current): on a runner the plugin bound, both read the same record, and
// both find that it holds room.
func TestKubectlTandemReadsThePluginsRecord(t *testing.T) {
	e := newEnv(t, tandemConfig(`defaultStepRequests: {cpu: 500m}`, `defaultHostPorts: ["6379"]`), map[string]string{"kr-n1": "4"})
	e.runner("r1", "500m", "1")
	e.bound("r1")
	pod := e.get("r1")
	want, ok, err := contract.RecordedReservation(pod)
	if !ok || err != nil {
		t.Fatalf("the plugin reads no record on r1: %v, %v", ok, err)
	}
	got, ok, err := kcontract.RecordedReservation(pod)
	if !ok || err != nil {
		t.Fatalf("kubectl-tandem reads no record on r1: %v, %v", ok, err)
	}
	// Field for field: the same JSON.
	wantJSON, _ := json.Marshal(want)
	gotJSON, _ := json.Marshal(got)
	if diff := cmp.Diff(string(wantJSON), string(gotJSON)); diff != "" {
		t.Errorf("record (-plugin,+kubectl-tandem):\n%s", diff)
	}
	if _, err := want.Validate(pod); err != nil {
		t.Errorf("the plugin's contract finds r1's record invalid: %v", err)
	}
	if _, err := got.Validate(pod); err != nil {
		t.Errorf("kubectl-tandem's copy of the contract finds r1's record invalid: %v", err)
	}
	if len(got.StepRequests) == 0 || len(got.HostPorts) == 0 {
		t.Errorf("record %s lacks the step headroom or host ports this test means to compare", gotJSON)
	}
}
