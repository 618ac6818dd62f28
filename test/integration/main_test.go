// Package integration runs tandem's scheduler in-process against a real
// etcd and kube-apiserver (built into bin/ by hack/build-control-plane.sh)
// and asserts on API objects.
package integration

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/harness/controlplane"
	"github.com/tandem-scheduler/tandem/harness/inprocess"
	"github.com/tandem-scheduler/tandem/harness/sim/arc"
)

// restConfig reaches the control plane shared by every test of the package.
// Tests run one at a time: nodes are cluster-wide, so each test creates its
// own and deletes them at the end.
var restConfig *rest.Config

// controlPlane is that control plane, for tests that start processes on it.
var controlPlane *controlplane.ControlPlane

var envCount atomic.Int32

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// DRAExtendedResource (alpha in 1.34 and 1.35, on by default from 1.36)
	// for TestRunnerWithDRABackedGPU: without it the apiserver drops a
	// DeviceClass's extendedResourceName.
	cp, err := controlplane.Start(ctx, controlplane.Options{ExtraAPIServerArgs: []string{"--feature-gates=DRAExtendedResource=true"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the control plane (run `make control-plane` first):", err)
		return 1
	}
	defer cp.Stop()
	restConfig, controlPlane = cp.RESTConfig(), cp
	// ARC is installed, as in every cluster tandem serves: a pod is a
	// runner only if its EphemeralRunner controls it (e.ownedByEphemeralRunner).
	if err := arc.InstallEphemeralRunnerCRD(ctx, restConfig); err != nil {
		fmt.Fprintln(os.Stderr, "installing the EphemeralRunner CRD:", err)
		return 1
	}
	return m.Run()
}

const schedulerName = "tandem-scheduler"

// tandemConfig is the shipped tandem profile with extra WorkflowReservation
// args (YAML lines at the args level), and reservationEvents on: the tests
// watch for the routine events, which the shipped profile does not send
// (pkg/workflowreservation TestPostBindEvents).
func tandemConfig(args ...string) string {
	args = append([]string{"reservationEvents: true"}, args...)
	return inprocess.Config(inprocess.Profile{SchedulerName: schedulerName, Tandem: true, Args: args})
}

// env is one test's namespace, nodes and scheduler.
type env struct {
	t      *testing.T
	ctx    context.Context
	client kubernetes.Interface
	ns     string
	config string
	sched  *inprocess.Scheduler
}

// newEnv creates the nodes (name -> cpu), a namespace named after the test
// and starts a scheduler with config; everything goes at the end of the test.
func newEnv(t *testing.T, config string, nodes map[string]string) *env {
	t.Helper()
	e := newEnvWithoutScheduler(t, nodes)
	e.config = config
	e.startScheduler()
	return e
}

// newEnvWithoutScheduler is newEnv for a test that runs its own scheduler.
func newEnvWithoutScheduler(t *testing.T, nodes map[string]string) *env {
	t.Helper()
	ctx := t.Context()
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		t.Fatal(err)
	}
	// Namespaces are not deleted (no namespace controller runs): each env
	// gets a new one, so tests can be repeated with -count.
	ns := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(ns) > 50 {
		ns = ns[:50]
	}
	e := &env{t: t, ctx: ctx, client: client, ns: fmt.Sprintf("%s-%d", ns, envCount.Add(1))}
	if err := controlplane.EnsureNamespace(ctx, client, e.ns); err != nil {
		t.Fatal(err)
	}
	for name, cpu := range nodes {
		capacity := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("16Gi"), v1.ResourcePods: resource.MustParse("110")}
		if _, err := controlplane.CreateNode(ctx, client, name, capacity, nil); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		e.stopScheduler()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		zero := int64(0)
		_ = client.CoreV1().Pods(e.ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
		for name := range nodes {
			_ = client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
		}
	})
	return e
}

func (e *env) startScheduler() {
	e.t.Helper()
	s, err := inprocess.Start(e.ctx, restConfig, e.config)
	if err != nil {
		e.t.Fatal(err)
	}
	e.sched = s
}

func (e *env) stopScheduler() {
	if e.sched != nil {
		e.sched.Stop()
		e.sched = nil
	}
}

// podSpec describes a test pod.
type podSpec struct {
	cpu         string
	annotations map[string]string
	labels      map[string]string
	node        string // nodeName: bypasses the scheduler
	onNode      string // nodeSelector on the hostname label
	runner      bool
	// notARC: a runner's labels without an EphemeralRunner controlling it.
	notARC bool
	// workflowOf makes the pod a workflow pod of that runner.
	workflowOf string
	mutate     func(*v1.Pod)
}

func (e *env) create(name string, s podSpec) *v1.Pod {
	e.t.Helper()
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns, Labels: map[string]string{}, Annotations: s.annotations},
		Spec: v1.PodSpec{
			SchedulerName: schedulerName,
			NodeName:      s.node,
			RestartPolicy: v1.RestartPolicyNever,
			Containers:    []v1.Container{{Name: "main", Image: "image"}},
		},
	}
	if s.cpu != "" {
		pod.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse(s.cpu)}
	}
	for k, v := range s.labels {
		pod.Labels[k] = v
	}
	if s.runner {
		pod.Labels["actions-ephemeral-runner"] = "True"
		if !s.notARC {
			e.ownedByEphemeralRunner(pod)
		}
	}
	if s.workflowOf != "" {
		pod.Labels["runner-pod"] = s.workflowOf
	}
	if s.onNode != "" {
		pod.Spec.NodeSelector = map[string]string{v1.LabelHostname: s.onNode}
	}
	if s.mutate != nil {
		s.mutate(pod)
	}
	created, err := e.client.CoreV1().Pods(e.ns).Create(e.ctx, pod, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("creating pod %s: %v", name, err)
	}
	return created
}

// ownedByEphemeralRunner makes pod ARC's: the EphemeralRunner of its name
// (created unless it exists, as ARC creates it before its pod) controls it.
func (e *env) ownedByEphemeralRunner(pod *v1.Pod) {
	e.t.Helper()
	client := dynamic.NewForConfigOrDie(restConfig).Resource(contract.EphemeralRunnerResource).Namespace(pod.Namespace)
	er, err := client.Create(e.ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "actions.github.com/v1alpha1", "kind": contract.EphemeralRunnerKind,
		"metadata": map[string]any{"name": pod.Name},
	}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		er, err = client.Get(e.ctx, pod.Name, metav1.GetOptions{})
	}
	if err != nil {
		e.t.Fatalf("EphemeralRunner %s: %v", pod.Name, err)
	}
	pod.OwnerReferences = append(pod.OwnerReferences, metav1.OwnerReference{
		APIVersion: "actions.github.com/v1alpha1", Kind: contract.EphemeralRunnerKind, Name: pod.Name, UID: er.GetUID(),
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	})
}

// runner creates a runner pod of cpu whose workflow pod needs workflowCPU.
func (e *env) runner(name, cpu, workflowCPU string) *v1.Pod {
	e.t.Helper()
	return e.create(name, podSpec{cpu: cpu, runner: true, annotations: map[string]string{contract.WorkflowRequestsAnnotation: "cpu=" + workflowCPU}})
}

func (e *env) poll(what string, cond func() (bool, error)) {
	e.t.Helper()
	err := wait.PollUntilContextTimeout(e.ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return cond()
	})
	if err != nil {
		e.t.Fatalf("waiting until %s: %v", what, err)
	}
}

func (e *env) get(name string) *v1.Pod {
	e.t.Helper()
	pod, err := e.client.CoreV1().Pods(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return pod
}

// bound waits until the pod is bound and returns its node.
func (e *env) bound(name string) string {
	e.t.Helper()
	var node string
	e.poll("pod "+name+" is bound", func() (bool, error) {
		node = e.get(name).Spec.NodeName
		return node != "", nil
	})
	return node
}

// unschedulable waits until the scheduler marks the pod unschedulable and
// returns the PodScheduled message. The pod must then still be unbound.
func (e *env) unschedulable(name string) string {
	e.t.Helper()
	return e.unschedulableSaying(name, "")
}

// unschedulableSaying waits until the pod is marked unschedulable with a
// message that contains want, and returns the message. A scheduler that has
// just started may first hold a runner for what it has not listed yet.
func (e *env) unschedulableSaying(name, want string) string {
	e.t.Helper()
	var msg string
	e.poll("pod "+name+" is marked unschedulable saying "+strconv.Quote(want), func() (bool, error) {
		pod := e.get(name)
		if pod.Spec.NodeName != "" {
			return false, fmt.Errorf("pod %s was bound to %s, want it pending", name, pod.Spec.NodeName)
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable {
				msg = c.Message
				return strings.Contains(msg, want), nil
			}
		}
		return false, nil
	})
	return msg
}

// event waits for an event with reason on the named object and returns its note.
func (e *env) event(object, reason string) string {
	e.t.Helper()
	var note string
	e.poll(fmt.Sprintf("event %s on %s", reason, object), func() (bool, error) {
		list, err := e.client.EventsV1().Events(e.ns).List(e.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, ev := range list.Items {
			if ev.Regarding.Name == object && ev.Reason == reason {
				note = ev.Note
				return true, nil
			}
		}
		return false, nil
	})
	return note
}

// countEvents returns how many events with reason are on the named object.
func (e *env) countEvents(object, reason string) int {
	e.t.Helper()
	list, err := e.client.EventsV1().Events(e.ns).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	n := 0
	for _, ev := range list.Items {
		if ev.Regarding.Name == object && ev.Reason == reason {
			n++
		}
	}
	return n
}

func (e *env) delete(name string) {
	e.t.Helper()
	zero := int64(0)
	if err := e.client.CoreV1().Pods(e.ns).Delete(e.ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		e.t.Fatal(err)
	}
}

func wantContains(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s = %q, want it to contain %q", what, got, w)
		}
	}
}
