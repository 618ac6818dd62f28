package arc

import (
	"context"
	"math/rand"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

type manualClock struct{ now time.Duration }

func (c *manualClock) Now() time.Duration { return c.now }

// exits records the pods made to exit; the cache keeps showing them
// Running, as it does until the kubelet's status update reaches it.
type exits []string

func (e *exits) Exit(_ context.Context, pod *v1.Pod, _ int32) error {
	*e = append(*e, pod.Name)
	return nil
}

// A busy runner made to fail had its job's workflow pod created afterwards,
// while the emulator's cache still showed the runner pod Running: the
// hook acted for a runner process that was dead. In ARC the hook runs in
// the runner's container and dies with it. tandem rightly gave the failed
// runner's room away, and a workflow pod pinned with nodeName coming after
// that overcommits the node, which no scheduler can prevent. It fits the 4
// violations of one CI run of TestChaosShort (run failover: a runner failed
// on the node 21 simulated seconds before, its workflow pod ran there, and
// a runner bound since had taken the room).
func TestFailedRunnerCreatesNoWorkflowPod(t *testing.T) {
	ctx := context.Background()
	set := &ScaleSet{Name: "s", Namespace: "arc", Suffix: "abcde", MinRunners: 1, MaxRunners: 1, HookMode: HookNodeName}
	runnerPod := set.RunnerPod("s-abcde-runner-r1")
	runnerPod.UID = "u1"
	runnerPod.Spec.NodeName = "n1"
	runnerPod.Status.Phase = v1.PodRunning
	client := fake.NewClientset(runnerPod)
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := indexer.Add(runnerPod); err != nil {
		t.Fatal(err)
	}
	var exited exits
	clock := &manualClock{}
	job := Job{ID: 1, ScaleSet: "s", Container: true}
	e := NewEmulator(client, corelisters.NewPodLister(indexer), clock, &exited, 1, []*ScaleSet{set}, []SetTiming{{HookDelay: time.Second}}, []Job{job})
	s := e.sets[0]
	s.runners[runnerPod.Name] = &runner{name: runnerPod.Name, uid: runnerPod.UID, seen: true, state: runnerBusy, job: &jobRun{job: job}}

	failed := make(chan error, 1)
	go func() {
		_, err := e.FailRunner(ctx, rand.New(rand.NewSource(1)))
		failed <- err
	}()
	// FailRunner runs in the control loop, between two rounds; until the
	// hook's delay has passed, no round creates the workflow pod.
	for done := false; !done; {
		if err := e.step(ctx, true); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-failed:
			if err != nil {
				t.Fatalf("FailRunner: %v", err)
			}
			done = true
		case <-time.After(time.Millisecond):
		}
	}
	if len(exited) != 1 {
		t.Fatalf("pods made to exit: %v, want the runner's", exited)
	}
	clock.now = time.Hour
	for range 3 {
		if err := e.step(ctx, true); err != nil {
			t.Fatal(err)
		}
	}
	pods, err := client.CoreV1().Pods("arc").List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{RunnerPodLabel: runnerPod.Name}).String()})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 0 {
		t.Errorf("the failed runner's hook created %s after the runner's process exited", pods.Items[0].Name)
	}
}
