package integration

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tandem-scheduler/tandem/contract"
)

// The install manifests are enough to run tandem: the kustomize and Helm
// renderings apply server-side (to the same objects, without conflicts); two
// replicas run with the rendered config, authenticated as the rendered
// ServiceAccount with only the rendered RBAC; one leads through tandem's own
// lease and schedules the ARC examples' runner + workflow pairs while the
// other waits and says nothing, then takes over with the reservations intact,
// one of them not yet claimed.
func TestDeployRenderedManifests(t *testing.T) {
	e := newEnvWithoutScheduler(t, map[string]string{"deploy-n1": "4", "deploy-n2": "4", "deploy-n3": "4"})
	for _, node := range []string{"deploy-n1", "deploy-n2", "deploy-n3"} {
		e.dedicateNode(node)
	}
	// The runner namespace the manifests grant pod create in.
	e.ensureNamespace("arc-runners")
	applyServerSide(t, e.ctx, kustomizeBuild(t, kustomizeDefault), "tandem-kustomize")
	applyServerSide(t, e.ctx, renderChart(t), "tandem-helm")
	// The runners live in this test's namespace (below): the chart's
	// ConfigMap read there, as it renders it for that runner namespace.
	var hookTemplates []*unstructured.Unstructured
	for _, o := range renderChart(t, "--set", "runnerNamespaces={"+e.ns+"}") {
		if o.GetNamespace() == e.ns && strings.HasSuffix(o.GetName(), "-hook-templates") {
			hookTemplates = append(hookTemplates, o)
		}
	}
	if len(hookTemplates) != 2 {
		t.Fatalf("the chart renders %d hook-templates objects in %s, want a Role and its RoleBinding", len(hookTemplates), e.ns)
	}
	applyServerSide(t, e.ctx, hookTemplates, "tandem-helm")

	cm, err := e.client.CoreV1().ConfigMaps(releaseNamespace).Get(e.ctx, releaseName+"-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := e.client.AppsV1().Deployments(releaseNamespace).Get(e.ctx, releaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.ensureAuthenticationConfigMap()
	dir := t.TempDir()
	kubeconfig := serviceAccountKubeconfig(t, e, dir, releaseNamespace, d.Spec.Template.Spec.ServiceAccountName)
	args := d.Spec.Template.Spec.Containers[0].Args
	// The rendered config with reservationEvents on: the test follows the
	// claims, and who reports them, by their events.
	// And its runners in this test's namespace, in place of arc-runners.
	config := []byte(withRunnerNamespace(t, withArg(t, cm.Data[configKey], "reservationMode:", "reservationEvents: true"), e.ns))
	replicas := []*replica{
		startReplica(t, e.ctx, "tandem-scheduler-a", dir, args, config, kubeconfig),
		startReplica(t, e.ctx, "tandem-scheduler-b", dir, args, config, kubeconfig),
	}
	leader, standby := e.leaderOf(replicas, nil)
	leases, err := e.client.CoordinationV1().Leases(releaseNamespace).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var leaseNames []string
	for _, l := range leases.Items {
		leaseNames = append(leaseNames, l.Name)
	}
	if !slices.Equal(leaseNames, []string{releaseName}) {
		t.Errorf("leases in %s: %q, want only tandem's own %q", releaseNamespace, leaseNames, releaseName)
	}

	// Both replicas serve the probes of the Deployment: the standby is ready
	// too, so the PodDisruptionBudget lets a node drain.
	for _, r := range replicas {
		for _, path := range probePaths(d) {
			e.poll(r.name+" answers "+path+" with 200", func() (bool, error) {
				return r.status(t, path) == http.StatusOK, nil
			})
		}
	}

	// kubernetes mode: the runner is sized from the example hook template
	// (2 cpu) plus the default step headroom (500m); its workflow pod, pinned
	// with the hook's required affinity, goes through tandem and claims it.
	e.exampleHookTemplateConfigMap()
	e.exampleRunner("k-runner", valuesKubernetes)
	node := e.bound("k-runner")
	if _, cpu, source := e.recordedReservation("k-runner"); cpu != "2500m" || source != string(contract.SourceHookTemplate) {
		t.Errorf("k-runner reservation = cpu %s from %s, want cpu 2500m from %s", cpu, source, contract.SourceHookTemplate)
	}
	e.exampleWorkflowPod("k-runner", node)
	if got := e.bound("k-runner-workflow"); got != node {
		t.Errorf("k-runner-workflow landed on %s, want its runner's node %s", got, node)
	}
	e.event("k-runner-workflow", contract.ReasonClaimed)

	// kubernetes-novolume mode: the runner fits only on another node; its
	// unpinned workflow pod follows it there.
	e.exampleRunner("nv-runner", valuesNoVolume)
	nvNode := e.bound("nv-runner")
	if nvNode == node {
		t.Errorf("nv-runner landed on %s next to k-runner's pair, where it and its workflow pod do not fit", node)
	}
	e.exampleWorkflowPod("nv-runner", "")
	if got := e.bound("nv-runner-workflow"); got != nvNode {
		t.Errorf("nv-runner-workflow landed on %s, want its runner's node %s", got, nvNode)
	}

	// A third runner takes the last node; its workflow pod, pinned with
	// nodeName as hooks v0.7.0 does, comes only after the failover: the new
	// leader must have rebuilt the unclaimed reservation.
	e.exampleRunner("held-runner", valuesKubernetes)
	heldNode := e.bound("held-runner")
	if heldNode == node || heldNode == nvNode {
		t.Errorf("held-runner landed on %s, which holds another pair", heldNode)
	}

	for _, r := range replicas {
		if log := r.log(t); strings.Contains(log, "forbidden") {
			t.Errorf("%s was denied by the rendered RBAC:\n%s", r.name, grepLines(log, "forbidden"))
		}
	}
	if acquired(standby.log(t)) {
		t.Errorf("%s acquired the lease while %s held it", standby.name, leader.name)
	}

	// The leader goes: the standby takes tandem's lease over and, with the
	// reservations it rebuilt from the runner pods, places no third pair
	// where there is no room for it until a pair ends.
	if err := leader.p.Stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.leaderOf([]*replica{standby}, leader); got != standby {
		t.Fatalf("leader after failover = %s, want %s", got.name, standby.name)
	}
	// held-runner's node has 4 - 0.5 cpu free to the kubelet, 1 cpu once its
	// reservation of 2.5 cpu counts: a 1500m pod must wait.
	e.create("probe", podSpec{cpu: "1500m", onNode: heldNode, mutate: tolerateDedicated})
	wantContains(t, "probe PodScheduled message", e.unschedulable("probe"), contract.ErrReasonRoomReserved)
	e.create("held-runner-workflow", podSpec{cpu: "2", workflowOf: "held-runner", node: heldNode})
	e.event("held-runner-workflow", contract.ReasonClaimed)
	// The claim leaves the step headroom (defaultStepRequests) held until
	// the runner ends.
	e.delete("held-runner-workflow")
	e.delete("held-runner")
	if got := e.bound("probe"); got != heldNode {
		t.Errorf("probe landed on %s, want %s once held-runner ended", got, heldNode)
	}
	e.exampleRunner("k-runner-2", valuesKubernetes)
	wantContains(t, "k-runner-2 PodScheduled message", e.unschedulable("k-runner-2"), contract.ErrReasonPairDoesNotFit)
	e.delete("k-runner-workflow")
	e.delete("k-runner")
	if got := e.bound("k-runner-2"); got != node {
		t.Errorf("k-runner-2 landed on %s, want %s where k-runner's pair ended", got, node)
	}

	// Only the leader speaks: the claims of the first two workflow pods,
	// which both replicas' informers saw while both ran, were reported once
	// each (the standby's events, had it sent any, went out many seconds ago).
	for _, wf := range []string{"k-runner-workflow", "nv-runner-workflow"} {
		if n := e.countEvents(wf, contract.ReasonClaimed); n != 1 {
			t.Errorf("%d %s events on %s, want 1", n, contract.ReasonClaimed, wf)
		}
	}

	// The chart's alerts and dashboard select what the new leader exports,
	// now that it has claimed, released, turned a runner away and led.
	e.checkMonitoring(standby)
}

// acquired reports whether log says that its replica won tandem's lease in
// the release namespace.
func acquired(log string) bool { return acquiredLease(log, releaseNamespace, releaseName) }

// acquiredLease reports whether log says that its replica won lease ns/name,
// by the line kube-scheduler's leader election logs: structured from
// client-go 0.35 on, printf-style in 0.34 (the 1.34 build, make
// test-versions).
func acquiredLease(log, ns, name string) bool {
	return strings.Contains(log, `"Successfully acquired lease" lock="`+ns+"/"+name+`"`) ||
		strings.Contains(log, "successfully acquired lease "+ns+"/"+name)
}

// leaderOf waits until tandem's lease in the release namespace is held by
// one of replicas other than previous (which may still hold it) and returns
// the leader, found by its log, and one other replica (nil if none).
func (e *env) leaderOf(replicas []*replica, previous *replica) (leader, other *replica) {
	e.t.Helper()
	return e.leaderOfLease(releaseNamespace, releaseName, replicas, previous)
}

// leaderOfLease is leaderOf for lease ns/name.
func (e *env) leaderOfLease(ns, name string, replicas []*replica, previous *replica) (leader, other *replica) {
	e.t.Helper()
	e.poll("a replica leads through lease "+ns+"/"+name, func() (bool, error) {
		lease, err := e.client.CoordinationV1().Leases(ns).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil || holderOf(lease) == "" {
			return false, nil //nolint:nilerr // polled again until the lease exists
		}
		for _, r := range replicas {
			if r != previous && acquiredLease(r.log(e.t), ns, name) {
				leader = r
			}
		}
		return leader != nil, nil
	})
	for _, r := range replicas {
		if r != leader {
			other = r
		}
	}
	return leader, other
}

// ensureAuthenticationConfigMap creates kube-system/extension-apiserver-authentication
// as a cluster's apiserver publishes it (a bare one with no client CA does
// not): the scheduler reads it, through the rendered RoleBinding, to
// authenticate callers of its HTTPS port.
func (e *env) ensureAuthenticationConfigMap() {
	e.t.Helper()
	ca := string(restConfig.CAData)
	cm := &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "extension-apiserver-authentication", Namespace: metav1.NamespaceSystem},
		Data: map[string]string{
			"client-ca-file":                     ca,
			"requestheader-client-ca-file":       ca,
			"requestheader-allowed-names":        `[]`,
			"requestheader-username-headers":     `["X-Remote-User"]`,
			"requestheader-group-headers":        `["X-Remote-Group"]`,
			"requestheader-extra-headers-prefix": `["X-Remote-Extra-"]`,
		},
	}
	_, err := e.client.CoreV1().ConfigMaps(metav1.NamespaceSystem).Create(e.ctx, cm, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = e.client.CoreV1().ConfigMaps(metav1.NamespaceSystem).Update(e.ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		e.t.Fatal(err)
	}
}

// dedicateNode labels and taints node as a dedicated runner node of the
// examples.
func (e *env) dedicateNode(name string) {
	e.t.Helper()
	node, err := e.client.CoreV1().Nodes().Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	node.Labels["dedicated"] = "github-runners"
	node.Spec.Taints = append(node.Spec.Taints, v1.Taint{Key: "dedicated", Value: "github-runners", Effect: v1.TaintEffectNoSchedule})
	if _, err := e.client.CoreV1().Nodes().Update(e.ctx, node, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// exampleHookTemplateConfigMap creates the ConfigMap examples/arc builds,
// in the test's namespace.
func (e *env) exampleHookTemplateConfigMap() {
	e.t.Helper()
	cm := &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "tandem-hook-template", Namespace: e.ns},
		Data:       map[string]string{hookTemplateKey: string(readFile(e.t, hookTemplateFile))},
	}
	if _, err := e.client.CoreV1().ConfigMaps(e.ns).Create(e.ctx, cm, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func probePaths(d *appsv1.Deployment) []string {
	var paths []string
	c := d.Spec.Template.Spec.Containers[0]
	for _, p := range []*v1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		if p != nil && p.HTTPGet != nil {
			paths = append(paths, p.HTTPGet.Path)
		}
	}
	return paths
}

func grepLines(text, substr string) string {
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, substr) {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

// tolerateDedicated lets a pod onto the nodes dedicateNode taints.
func tolerateDedicated(pod *v1.Pod) {
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "github-runners", Effect: v1.TaintEffectNoSchedule})
}

// withArg adds line to a rendered KubeSchedulerConfiguration as a sibling of
// the line that starts (after its indentation) with anchor.
func withArg(t *testing.T, config, anchor, line string) string {
	t.Helper()
	lines := strings.Split(config, "\n")
	for i, l := range lines {
		if trimmed := strings.TrimLeft(l, " "); strings.HasPrefix(trimmed, anchor) {
			indent := l[:len(l)-len(trimmed)]
			return strings.Join(slices.Insert(lines, i+1, indent+line), "\n")
		}
	}
	t.Fatalf("no line %q in the rendered config:\n%s", anchor, config)
	return ""
}

// withRunnerNamespace replaces the rendered config's only runner namespace,
// in runnerNamespaces and hookTemplateNamespaces, with ns.
func withRunnerNamespace(t *testing.T, config, ns string) string {
	t.Helper()
	lines := strings.Split(config, "\n")
	replaced := map[string]bool{}
	for i, l := range lines {
		key := strings.TrimSpace(l)
		if (key == "runnerNamespaces:" || key == "hookTemplateNamespaces:") && i+1 < len(lines) && strings.TrimSpace(lines[i+1]) == "- arc-runners" {
			lines[i+1] = strings.Replace(lines[i+1], "arc-runners", ns, 1)
			replaced[key] = true
		}
	}
	if !replaced["runnerNamespaces:"] || !replaced["hookTemplateNamespaces:"] {
		t.Fatalf("the rendered config does not name arc-runners in both runnerNamespaces and hookTemplateNamespaces:\n%s", config)
	}
	return strings.Join(lines, "\n")
}

// ensureNamespace creates namespace name if it does not exist: a cluster
// runs ARC's runners there before tandem is installed.
func (e *env) ensureNamespace(name string) {
	e.t.Helper()
	_, err := e.client.CoreV1().Namespaces().Create(e.ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		e.t.Fatal(err)
	}
}
