package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/harness/controlplane"
)

// benchPods names the benchmark's pods.
var benchPods atomic.Int64

// BenchmarkPodsAdmissionPolicy is what the chart's podsAdmissionPolicy (on
// by default) costs the apiserver: a pod created and then patched, as a job
// and as ARC do in a runner namespace, with the rendered policy bound to the
// namespace ("on") and in a namespace it is not bound to ("off"), through the
// real kube-apiserver's admission. Compare the two with benchstat:
//
//	go test ./test/integration/ -run '^$' -bench PodsAdmissionPolicy -count 6 | tee /tmp/vap.txt
func BenchmarkPodsAdmissionPolicy(b *testing.B) {
	ctx := b.Context()
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		b.Fatal(err)
	}
	base := fmt.Sprintf("vap-bench-%d", envCount.Add(1))
	on, off := base+"-on", base+"-off"
	for _, ns := range []string{on, off} {
		if err := controlplane.EnsureNamespace(ctx, client, ns); err != nil {
			b.Fatal(err)
		}
	}
	values := filepath.Join(b.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte("runnerNamespaces: ["+on+"]\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	applyPolicies(b, ctx, renderChart(b, "--values", values), 2)
	job := impersonate(b, "system:serviceaccount:"+on+":default")
	// The policy takes effect once the apiserver has loaded it.
	forged := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "forged", Labels: map[string]string{contract.PlaceholderLabel: "true"}},
		Spec:       v1.PodSpec{SchedulerName: "nobody", Containers: []v1.Container{{Name: "main", Image: "image"}}},
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := job.CoreV1().Pods(on).Create(ctx, forged, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil, nil
	})
	if err != nil {
		b.Fatal("the policy never took effect")
	}
	for _, ns := range []string{off, on} {
		b.Run(map[string]string{on: "on", off: "off"}[ns], func(b *testing.B) {
			pods := job.CoreV1().Pods(ns)
			for b.Loop() {
				// A runner to the policy's test (schedulerName and
				// selector), which no scheduler runs here.
				pod := &v1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%d", benchPods.Add(1)), Labels: map[string]string{"actions-ephemeral-runner": "True"}},
					Spec:       v1.PodSpec{SchedulerName: schedulerName, Containers: []v1.Container{{Name: "main", Image: "image"}}},
				}
				if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
					b.Fatal(err)
				}
				if _, err := pods.Patch(ctx, pod.Name, types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"a"}}}`), metav1.PatchOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			zero := int64(0)
			_ = client.CoreV1().Pods(ns).DeleteCollection(context.Background(), metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
		})
	}
}
