package kubectltandem

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	"github.com/tandem-scheduler/tandem/contract"
)

// run runs kubectl-tandem with args against client, returning stdout and
// stderr.
func run(t *testing.T, client kubernetes.Interface, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	o := &options{
		streams: genericiooptions.IOStreams{Out: &out, ErrOut: &errOut},
		config:  genericclioptions.NewConfigFlags(false),
		sources: []Source{AnnotationSource{}},
		client:  func() (kubernetes.Interface, error) { return client, nil },
		now:     func() time.Time { return t0.Add(time.Hour) },
	}
	o.namespace = func() (string, error) {
		if *o.config.Namespace != "" {
			return *o.config.Namespace, nil
		}
		return "default", nil
	}
	cmd := newCommand(o)
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err = cmd.Execute()
	return out.String(), errOut.String(), err
}

// fakeCluster is cluster() in a fake clientset.
func fakeCluster(extra ...runtime.Object) *fake.Clientset {
	s := cluster()
	var objs []runtime.Object
	for _, n := range s.Nodes {
		objs = append(objs, n)
	}
	for _, p := range s.Pods {
		objs = append(objs, p)
	}
	return fake.NewClientset(append(objs, extra...)...)
}

func TestReservationsCommand(t *testing.T) {
	testCases := map[string]struct {
		args       []string
		wantOut    string
		wantErrOut string
		wantErr    string
	}{
		"one namespace": {
			args: []string{"reservations", "-n", "arc"},
			wantOut: `RUNNER   NODE   SIZE                                       SOURCE          PHASE     AGE
r1       n1     cpu=2,memory=4Gi,pods=1                    annotation      held      59m
r2       n2     cpu=2,memory=2Gi,pods=2,nvidia.com/gpu=1   hook-template   claimed   59m
`,
		},
		"all namespaces, an invalid record named on stderr": {
			args: []string{"reservations", "-A"},
			wantOut: `NAMESPACE   RUNNER   NODE   SIZE                                       SOURCE          PHASE     AGE
arc         r1       n1     cpu=2,memory=4Gi,pods=1                    annotation      held      59m
arc         r2       n2     cpu=2,memory=2Gi,pods=2,nvidia.com/gpu=1   hook-template   claimed   59m
ci          forged   n1     cpu=3                                      <none>          invalid   59m
`,
			wantErrOut: "Warning: the reservation recorded on ci/forged holds nothing: recorded for pod UID \"copied\", not this pod (forged-uid); " +
				"tandem holds no room for such a runner either (a WorkflowReservationNotRecorded Warning on it says so)\n",
		},
		"none": {
			args:       []string{"reservations"},
			wantErrOut: "No reservations found in default namespace.\n",
		},
		"unknown output format": {
			args:    []string{"reservations", "-o", "name"},
			wantErr: `unable to match a printer for --output="name", allowed: wide, json, yaml, kyaml`,
		},
		"bad runner selector": {
			args:    []string{"reservations", "--runner-selector", "a b"},
			wantErr: "--runner-selector: ",
		},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			out, errOut, err := run(t, fakeCluster(), tc.args...)
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to start with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantOut, out); diff != "" {
				t.Errorf("stdout (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantErrOut, errOut); diff != "" {
				t.Errorf("stderr (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestStructuredOutput(t *testing.T) {
	out, _, err := run(t, fakeCluster(), "reservations", "-n", "arc", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var list ReservationList
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("-o json is not a ReservationList: %v\n%s", err, out)
	}
	if diff := cmp.Diff(metav1.TypeMeta{APIVersion: OutputVersion, Kind: "ReservationList"}, list.TypeMeta); diff != "" {
		t.Errorf("type (-want,+got):\n%s", diff)
	}
	var got []string
	for _, r := range list.Items {
		got = append(got, r.Runner+" "+string(r.Phase)+" "+format(r.Holds))
	}
	if diff := cmp.Diff([]string{"r1 held cpu=2,memory=4Gi,pods=1", "r2 claimed cpu=500m,pods=1"}, got); diff != "" {
		t.Errorf("items (-want,+got):\n%s", diff)
	}

	out, _, err = run(t, fakeCluster(), "nodes", "-o", "yaml")
	if err != nil {
		t.Fatal(err)
	}
	var nodes NodeUsageList
	if err := yaml.UnmarshalStrict([]byte(out), &nodes); err != nil {
		t.Fatalf("-o yaml is not a NodeUsageList: %v\n%s", err, out)
	}
	if len(nodes.Items) != 2 || nodes.Kind != "NodeUsageList" || format(nodes.Items[0].Free) != "cpu=1750m,memory=11776Mi,pods=107" {
		t.Errorf("-o yaml gave %s", out)
	}
}

func TestNodesCommandWithoutJobs(t *testing.T) {
	client := fakeCluster()
	client.PrependReactor("list", "jobs", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "batch", Resource: "jobs"}, "", nil)
	})
	out, errOut, err := run(t, client, "nodes")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "NAME   CPU-ALLOC") {
		t.Errorf("stdout = %q, want the table", out)
	}
	want := "Warning: cannot list Jobs: container-step pods of hooks v0.7.0 (pods of a Job labelled runner-pod) are counted as ordinary pods\n"
	if diff := cmp.Diff(want, errOut); diff != "" {
		t.Errorf("stderr (-want,+got):\n%s", diff)
	}
}

// explain reads the events of both APIs, which serve the same events, and
// shows each once.
func TestExplainCommand(t *testing.T) {
	msg := "0/2 nodes are available: 2 node(s) can't fit runner and workflow pod together. runner arc/r3 needs cpu=250m and its workflow pod cpu=3 (from annotation); no node has room for both"
	r3 := makePod("arc", "r3").runner().req(rl("cpu=250m")).annotate(contract.WorkflowRequestsAnnotation, "cpu=3").unschedulable(msg).obj()
	regarding := v1.ObjectReference{Kind: "Pod", Namespace: "arc", Name: "r3", UID: r3.UID}
	newer := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: "arc", Name: "r3.1", UID: "ev-1", CreationTimestamp: metav1.NewTime(t0.Add(50 * time.Minute))},
		Regarding:  regarding, Reason: "FailedScheduling", Type: "Warning", Note: msg, ReportingController: "tandem-scheduler",
		EventTime: metav1.NewMicroTime(t0.Add(50 * time.Minute)),
	}
	// The same event, as core/v1 serves it, and one of an earlier pod of
	// the same name.
	same := &v1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "arc", Name: "r3.1", UID: "ev-1"}, InvolvedObject: regarding, Reason: "FailedScheduling", Type: "Warning", Message: msg}
	earlier := regarding
	earlier.UID = "older-r3"
	old := &v1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "arc", Name: "r3.0", UID: "ev-0"}, InvolvedObject: earlier, Reason: "WorkflowCapacityReserved", Type: "Normal"}
	out, _, err := run(t, fakeCluster(r3, newer, same, old), "explain", "-n", "arc", "pod/r3")
	if err != nil {
		t.Fatal(err)
	}
	wantContains := []string{
		"Kind:           runner (matches the runner selector actions-ephemeral-runner=True)\n",
		"  Warning   FailedScheduling   10m   tandem-scheduler   " + msg + "\n",
		"Verdict: no node has cpu=3250m free after reservations; the largest is n1 with 1750m\n",
	}
	for _, w := range wantContains {
		if !strings.Contains(out, w) {
			t.Errorf("explain output lacks %q:\n%s", w, out)
		}
	}
	if n := strings.Count(out, "FailedScheduling"); n != 1 {
		t.Errorf("FailedScheduling shown %d times, want once:\n%s", n, out)
	}
	if strings.Contains(out, "WorkflowCapacityReserved") {
		t.Errorf("an earlier pod's event is shown:\n%s", out)
	}

	out, _, err = run(t, fakeCluster(r3), "explain", "-n", "arc", "r3", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var e Explanation
	if err := json.Unmarshal([]byte(out), &e); err != nil {
		t.Fatalf("-o json is not an Explanation: %v\n%s", err, out)
	}
	if e.Kind != KindRunner || e.Kind == "" || e.TypeMeta.Kind != "Explanation" || !strings.HasPrefix(e.Verdict, "no node has cpu=3250m") {
		t.Errorf("-o json gave %s", out)
	}

	if _, _, err := run(t, fakeCluster(), "explain", "-n", "arc", "svc/r3"); err == nil || err.Error() != `"svc/r3": explain explains pods, not svc` {
		t.Errorf("explain svc/r3: error %v", err)
	}
	if _, _, err := run(t, fakeCluster(), "explain", "-n", "arc", "missing"); !apierrors.IsNotFound(err) {
		t.Errorf("explain of a missing pod: error %v, want NotFound", err)
	}
}
