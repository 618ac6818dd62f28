// Package tandemtest holds the fixtures the plugin's and the controllers'
// unit tests share: ARC's pods as tandem sees them (runner arc/<name> on
// scheduler "test", its workflow pod labelled runner-pod), their records and
// reservations, and the args as defaulting leaves them.
package tandemtest

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clientset "k8s.io/client-go/kubernetes"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/apis/config"
	configv1 "github.com/tandem-scheduler/tandem/pkg/apis/config/v1"
	"github.com/tandem-scheduler/tandem/pkg/reservations"
)

// Namespace is where the fixtures' runners are.
const Namespace = "arc"

// Key is the runner name's key in Namespace.
func Key(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: Namespace, Name: name}
}

// RunnerPod is ARC's runner pod name (UID name), of profile "test".
func RunnerPod(name string) *st.PodWrapper {
	return st.MakePod().Namespace(Namespace).Name(name).UID(name).SchedulerName("test").Label("actions-ephemeral-runner", "True")
}

// WorkflowPod is runner's workflow pod, "<runner>-workflow" (UID the same).
func WorkflowPod(runner string) *st.PodWrapper {
	name := runner + "-workflow"
	return st.MakePod().Namespace(Namespace).Name(name).UID(name).Label("runner-pod", runner)
}

// Earlier and Later are two creation times an hour apart: an earlier
// runner incarnation's pods, and this one's.
var (
	Earlier = metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	Later   = metav1.NewTime(time.Now().Truncate(time.Second))
)

// Units is cpu as a PodWrapper's requests.
func Units(cpu string) map[v1.ResourceName]string {
	return map[v1.ResourceName]string{v1.ResourceCPU: cpu}
}

// RecordedFor is a recorded reservation of cpu=1 on n1 taken for the pod
// with the given UID.
func RecordedFor(uid string) string {
	return `{"node":"n1","requests":{"cpu":"1","pods":"1"},"source":"annotation","runnerUID":"` + uid + `"}`
}

// OneUnit is runner's reservation of cpu=1 (one pod) on n1.
func OneUnit(runner string) *reservations.Reservation {
	return &reservations.Reservation{Runner: Key(runner), RunnerUID: types.UID(runner), Node: "n1", Size: contract.Amount{MilliCPU: 1000, Pods: 1}, Source: contract.SourceAnnotation}
}

// The states a test starts a reservation in, reached through the store's
// own verbs in a store of their own (copies that a test then puts).

// ClaimedBy returns r claimed by the workflow pod pod, as its scheduling
// cycle's Reserve leaves it (the claim not seen on a bound pod yet).
func ClaimedBy(r *reservations.Reservation, pod types.UID) *reservations.Reservation {
	s := reservations.NewStore()
	s.Take(r)
	s.Claim(r.Runner, r.RunnerUID, pod, r.Node)
	c, _ := s.Get(r.Runner)
	return &c
}

// DefaultArgs are the args as defaulting leaves them, without pair pods
// (the tests of pair pods turn them on; elsewhere they would only add pods
// to the fake clientset).
func DefaultArgs() *config.WorkflowReservationArgs {
	in := &configv1.WorkflowReservationArgs{}
	configv1.SetObjectDefaults_WorkflowReservationArgs(in)
	out := &config.WorkflowReservationArgs{}
	if err := configv1.Convert_v1_WorkflowReservationArgs_To_config_WorkflowReservationArgs(in, out, nil); err != nil {
		panic(err)
	}
	out.PairPods = false
	return out
}

// Eventually polls cond until it holds, for at most 5 s: informer handlers
// and timers run asynchronously.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("timed out waiting until %s", what)
	}
}

// PairPodArgs are DefaultArgs with pair pods and routine events on.
func PairPodArgs() *config.WorkflowReservationArgs {
	a := DefaultArgs()
	a.PairPods, a.ReservationEvents = true, true
	return a
}

// PodsModeArgs are DefaultArgs in reservationMode Pods.
func PodsModeArgs() *config.WorkflowReservationArgs {
	a := DefaultArgs()
	a.ReservationMode = config.ReservationModePods
	return a
}

// WaitForPod polls client until cond holds for the pod name in Namespace
// (nil: the pod does not exist), and returns what it saw last.
func WaitForPod(t testing.TB, client clientset.Interface, name string, cond func(*v1.Pod) bool) *v1.Pod {
	t.Helper()
	var got *v1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods(Namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			got = nil
			return cond(nil), nil
		}
		if err != nil {
			return false, err
		}
		got = p
		return cond(p), nil
	})
	if err != nil {
		t.Fatalf("pod %s: condition not met: %v (last seen: %+v)", name, err, got)
	}
	return got
}

// Held lists the reservations of s as runner@node:state, state one of
// held, claimed and done, sorted.
func Held(s *reservations.Store) []string {
	var out []string
	for _, r := range s.List() {
		state := "held"
		if r.ClaimedBy() != "" {
			state = "claimed"
		}
		if r.UsedUp() {
			state = "done"
		}
		out = append(out, fmt.Sprintf("%s@%s:%s", r.Runner.Name, r.Node, state))
	}
	sort.Strings(out)
	return out
}
