package integration

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/harness/controlplane"
	"github.com/tandem-scheduler/tandem/harness/inprocess"
)

// The API writes that scheduling a runner costs, the apiserver's own count
// less the test's creates, with the shipped profile: the Binding and the
// scheduler's Scheduled event in reservationMode Memory, and the
// placeholder, created before the Binding through the scheduler's own
// client, in reservationMode Pods. docs/security.md quotes them; a change
// to tandem's writes changes them. In Pods mode every runner's placeholder
// is created before the runner is bound: the apiserver's watch, in
// resourceVersion order, shows it first.
func TestRunnerBindWrites(t *testing.T) {
	const runners, nodes = 60, 10
	for mode, want := range map[string]float64{"Memory": 2, "Pods": 3} {
		t.Run(mode, func(t *testing.T) {
			_, _, writes := bindRunners(t, "writes-"+strings.ToLower(mode), mode, runners, nodes)
			if got := writes / runners; got != want {
				t.Errorf("%s mode: %.2f API writes per runner, want %.0f", mode, got, want)
			}
		})
	}
}

// BenchmarkRunnerBinds binds 500 runners, created at once, with the shipped
// profile in reservationMode Memory and then Pods, on a real apiserver, and
// reports for each mode the seconds until every runner is bound (and, in
// Pods mode, until every placeholder exists), the API writes per runner
// that scheduling them cost (the apiserver's own count, less the test's
// creates), and Pods mode's figures against Memory mode's:
//
//	go test ./test/integration/ -run '^$' -bench RunnerBinds -benchtime 1x
//
// Pods mode adds a placeholder per runner, created before its Binding
// through the scheduler's own client (the budget of its bindings).
func BenchmarkRunnerBinds(b *testing.B) {
	const runners, nodes = 500, 50
	for i := 0; i < b.N; i++ {
		var bound, settled, writes [2]float64
		for m, mode := range []string{"Memory", "Pods"} {
			bound[m], settled[m], writes[m] = bindRunners(b, fmt.Sprintf("binds-%d-%s", i, strings.ToLower(mode)), mode, runners, nodes)
		}
		b.ReportMetric(bound[0], "s-bound-memory")
		b.ReportMetric(bound[1], "s-bound-pods")
		b.ReportMetric(settled[1], "s-placeholders-pods")
		b.ReportMetric(writes[0]/runners, "writes/runner-memory")
		b.ReportMetric(writes[1]/runners, "writes/runner-pods")
		b.ReportMetric(bound[1]/bound[0], "bound-pods/memory")
		b.ReportMetric(writes[1]/writes[0], "writes-pods/memory")
	}
}

// bindRunners runs one mode in namespace ns on nodes of its own and returns
// the seconds until every runner was bound, until every placeholder existed
// too (Pods mode; else the same), and the API writes they cost. In Pods
// mode it fails unless the apiserver's watch showed every runner's
// placeholder before the runner bound.
func bindRunners(b testing.TB, ns, mode string, runners, nodes int) (bound, settled, writes float64) {
	b.Helper()
	ctx := b.Context()
	// The test's own client is not throttled: it must not be what is measured.
	cfg := rest.CopyConfig(restConfig)
	cfg.QPS, cfg.Burst = -1, 0
	client := kubernetes.NewForConfigOrDie(cfg)
	ers := dynamic.NewForConfigOrDie(cfg).Resource(contract.EphemeralRunnerResource).Namespace(ns)
	if err := controlplane.EnsureNamespace(ctx, client, ns); err != nil {
		b.Fatal(err)
	}
	var nodeNames []string
	for n := 0; n < nodes; n++ {
		name := fmt.Sprintf("%s-n%d", ns, n)
		capacity := v1.ResourceList{v1.ResourceCPU: resource.MustParse("32"), v1.ResourceMemory: resource.MustParse("128Gi"), v1.ResourcePods: resource.MustParse("110")}
		if _, err := controlplane.CreateNode(ctx, client, name, capacity, nil); err != nil {
			b.Fatal(err)
		}
		nodeNames = append(nodeNames, name)
	}
	// Gone before the next mode runs: its scheduler would hold (and, in
	// Pods mode, place placeholders for) these runners too.
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{})
		for _, n := range nodeNames {
			_ = client.CoreV1().Nodes().Delete(ctx, n, metav1.DeleteOptions{})
		}
	}()
	// ARC creates the EphemeralRunner before its pod.
	newEphemeralRunner := func(name string) types.UID {
		er, err := ers.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "actions.github.com/v1alpha1", "kind": contract.EphemeralRunnerKind,
			"metadata": map[string]any{"name": name},
		}}, metav1.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		return er.GetUID()
	}
	uids := make([]types.UID, runners)
	for r := range runners {
		uids[r] = newEphemeralRunner(fmt.Sprintf("r%d", r))
	}
	runnerPod := func(name string, uid types.UID) *v1.Pod {
		return &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: name, Namespace: ns,
				Labels:      map[string]string{"actions-ephemeral-runner": "True"},
				Annotations: map[string]string{contract.WorkflowRequestsAnnotation: "cpu=1"},
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: "actions.github.com/v1alpha1", Kind: contract.EphemeralRunnerKind, Name: name,
					UID: uid, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
				}},
			},
			Spec: v1.PodSpec{
				SchedulerName: schedulerName, RestartPolicy: v1.RestartPolicyNever,
				Containers: []v1.Container{{Name: "runner", Image: "image", Resources: v1.ResourceRequirements{
					Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")},
				}}},
			},
		}
	}
	// settledWrites waits until the API writes stand still for a second and
	// returns them: what the scheduler writes after a bind (a status, an
	// event) is counted too.
	settledWrites := func(when string) map[string]float64 {
		var writes map[string]float64
		last, stillSince := -1.0, time.Now()
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			writes = apiWrites(b, client)
			if total := writes[""]; total != last {
				last, stillSince = total, time.Now()
			}
			return time.Since(stillSince) >= time.Second, nil
		})
		if err != nil {
			b.Fatalf("%s mode: the API writes did not settle %s: %v", mode, when, err)
		}
		return writes
	}

	// The shipped profile (no routine events), runners only in ns.
	sched, err := inprocess.Start(ctx, restConfig, inprocess.Config(inprocess.Profile{
		SchedulerName: schedulerName, Tandem: true, Scoring: "MostAllocated", ReservationMode: mode,
		Args: []string{"runnerNamespaces: [" + ns + "]"},
	}))
	if err != nil {
		b.Fatal(err)
	}
	defer sched.Stop()
	// A runner scheduled before the scheduler has listed the
	// EphemeralRunners waits for them (an event and a status more): bind one
	// first, so that what is counted is a running scheduler's cost.
	if _, err := client.CoreV1().Pods(ns).Create(ctx, runnerPod("warm-up", newEphemeralRunner("warm-up")), metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, "warm-up", metav1.GetOptions{})
		return err == nil && p.Spec.NodeName != "", err
	}); err != nil {
		b.Fatalf("%s mode: waiting until the warm-up runner is bound: %v", mode, err)
	}
	before := settledWrites("after the warm-up runner")
	// It and its placeholder are not among the runners counted below.
	warmUp := func(pod *v1.Pod) bool {
		owner := metav1.GetControllerOf(pod)
		return pod.Name == "warm-up" || (contract.IsPlaceholder(pod) && owner != nil && owner.Name == "warm-up")
	}
	// The namespace's pods in resourceVersion order: which came first, a
	// runner bound or its placeholder.
	watch, err := client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer watch.Stop()
	placedFirst, boundFirst := map[types.UID]bool{}, map[types.UID]bool{}
	var orderMu sync.Mutex
	go func() {
		for ev := range watch.ResultChan() {
			pod, ok := ev.Object.(*v1.Pod)
			if !ok || warmUp(pod) {
				continue
			}
			orderMu.Lock()
			if contract.IsPlaceholder(pod) {
				if owner := metav1.GetControllerOf(pod).UID; !boundFirst[owner] {
					placedFirst[owner] = true
				}
			} else if pod.Spec.NodeName != "" && !placedFirst[pod.UID] {
				boundFirst[pod.UID] = true
			}
			orderMu.Unlock()
		}
	}()

	start := time.Now()
	for r := range runners {
		pod := runnerPod(fmt.Sprintf("r%d", r), uids[r])
		if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	count := func(placeholders bool) (int, error) {
		list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return 0, err
		}
		n := 0
		for _, p := range list.Items {
			if warmUp(&p) {
				continue
			}
			_, isPlaceholder := p.Labels[contract.PlaceholderLabel]
			if isPlaceholder == placeholders && (placeholders || p.Spec.NodeName != "") {
				n++
			}
		}
		return n, nil
	}
	waitFor := func(what string, placeholders bool) {
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 5*time.Minute, true, func(context.Context) (bool, error) {
			n, err := count(placeholders)
			return n == runners, err
		})
		if err != nil {
			b.Fatalf("%s mode: waiting until %s: %v", mode, what, err)
		}
	}
	waitFor("every runner is bound", false)
	bound = time.Since(start).Seconds()
	if mode == "Pods" {
		waitFor("every placeholder exists", true)
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			orderMu.Lock()
			defer orderMu.Unlock()
			return len(placedFirst)+len(boundFirst) >= runners, nil
		})
		orderMu.Lock()
		if err != nil || len(boundFirst) > 0 {
			b.Errorf("Pods mode: %d of %d runners were bound before their placeholder existed (%d after), want none (%v)", len(boundFirst), runners, len(placedFirst), err)
		}
		orderMu.Unlock()
	}
	settled = time.Since(start).Seconds()
	// What the scheduler writes after the last of them (a status, an event)
	// is counted too: wait until the count stands still for a second.
	after := settledWrites("after the runners")
	// The test's own writes: the runner pods.
	writes = after[""] - before[""] - float64(runners)
	var breakdown []string
	for k, v := range after {
		if d := v - before[k]; k != "" && d > 0 {
			breakdown = append(breakdown, fmt.Sprintf("%s %.0f", k, d))
		}
	}
	sort.Strings(breakdown)
	if list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err == nil {
		kinds := map[string]int{}
		for _, p := range list.Items {
			kind := "runner"
			if _, ok := p.Labels[contract.PlaceholderLabel]; ok {
				kind = "placeholder"
			} else if _, ok := p.Annotations[contract.PairOfAnnotation]; ok {
				kind = "pair pod"
			}
			kinds[kind]++
		}
		breakdown = append(breakdown, fmt.Sprintf("pods now %v", kinds))
	}
	b.Logf("%s mode: %d runners bound in %.1fs, settled in %.1fs; API writes less the test's %d: %.0f (%s)",
		mode, runners, bound, settled, runners, writes, strings.Join(breakdown, ", "))
	return bound, settled, writes
}

// apiWrites reads the apiserver's apiserver_request_total and returns its
// writes (POST, PUT, PATCH, DELETE) to pods (and their subresources) and
// events by "VERB resource/subresource" (and the response code unless 2xx),
// and their sum under "": what scheduling pods writes, not what the
// control plane writes meanwhile (leases).
func apiWrites(b testing.TB, client kubernetes.Interface) map[string]float64 {
	b.Helper()
	raw, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]float64{}
	s := bufio.NewScanner(bytes.NewReader(raw))
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		line := s.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		labels, value, ok := strings.Cut(strings.TrimPrefix(line, "apiserver_request_total{"), "} ")
		if !ok {
			continue
		}
		l := map[string]string{}
		for _, kv := range strings.Split(labels, ",") {
			k, v, _ := strings.Cut(kv, "=")
			l[k] = strings.Trim(v, `"`)
		}
		switch l["verb"] {
		case "POST", "PUT", "PATCH", "DELETE":
		default:
			continue
		}
		if l["resource"] != "pods" && l["resource"] != "events" {
			continue
		}
		n, err := strconv.ParseFloat(value, 64)
		if err != nil {
			b.Fatalf("apiserver_request_total: %q: %v", line, err)
		}
		key := l["verb"] + " " + l["resource"]
		if l["subresource"] != "" {
			key += "/" + l["subresource"]
		}
		if !strings.HasPrefix(l["code"], "2") {
			key += " " + l["code"]
		}
		out[key] += n
		out[""] += n
	}
	return out
}
