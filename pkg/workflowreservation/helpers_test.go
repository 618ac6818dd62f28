package workflowreservation

import (
	"context"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/tandem-scheduler/tandem/pkg/apis/config"
)

// fakeHandle provides what the plugin uses of the framework handle; any
// other method panics through the nil embedded interface.
type fakeHandle struct {
	fwk.Handle
	client    *fake.Clientset
	informers informers.SharedInformerFactory
	recorder  *events.FakeRecorder

	mu        sync.Mutex
	activated []string
}

func (h *fakeHandle) ClientSet() clientset.Interface                         { return h.client }
func (h *fakeHandle) SharedInformerFactory() informers.SharedInformerFactory { return h.informers }
func (h *fakeHandle) EventRecorder() events.EventRecorder                    { return h.recorder }
func (h *fakeHandle) ProfileName() string                                    { return "test" }
func (h *fakeHandle) APICacher() fwk.APICacher                               { return nil }

// Activate records the pods the plugin asked to requeue.
func (h *fakeHandle) Activate(_ klog.Logger, pods map[string]*v1.Pod) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for name := range pods {
		h.activated = append(h.activated, name)
	}
}

func (h *fakeHandle) activatedPods() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.activated...)
}

func defaultArgs() *config.WorkflowReservationArgs {
	return &config.WorkflowReservationArgs{
		RunnerSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"actions-ephemeral-runner": "True"}},
		RunnerPodLabel: "runner-pod",
	}
}

// newTestPlugin builds the plugin on a fake clientset holding objs, with
// informers started and synced when withInformers is set.
func newTestPlugin(t *testing.T, args *config.WorkflowReservationArgs, withInformers bool, objs ...runtime.Object) (*WorkflowReservation, *fakeHandle) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	client := fake.NewClientset(objs...)
	h := &fakeHandle{client: client, recorder: events.NewFakeRecorder(100)}
	if withInformers {
		h.informers = informers.NewSharedInformerFactory(client, 0)
	}
	p, err := New(ctx, args, h)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if withInformers {
		h.informers.Start(ctx.Done())
		h.informers.WaitForCacheSync(ctx.Done())
	}
	return p.(*WorkflowReservation), h
}

func nodeInfo(node *v1.Node, pods ...*v1.Pod) fwk.NodeInfo {
	ni := framework.NewNodeInfo(pods...)
	ni.SetNode(node)
	return ni
}

func units(cpu string) map[v1.ResourceName]string {
	return map[v1.ResourceName]string{v1.ResourceCPU: cpu}
}

func runnerPod(name string) *st.PodWrapper {
	return st.MakePod().Namespace("arc").Name(name).UID(name).Label("actions-ephemeral-runner", "True")
}

func workflowPod(runner string) *st.PodWrapper {
	name := runner + "-workflow"
	return st.MakePod().Namespace("arc").Name(name).UID(name).Label("runner-pod", runner)
}

func drainEvents(h *fakeHandle) []string {
	var out []string
	for {
		select {
		case e := <-h.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}
