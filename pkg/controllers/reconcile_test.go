package controllers

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2/ktesting"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/tandem-scheduler/tandem/pkg/apis/config"
	"github.com/tandem-scheduler/tandem/pkg/sizing"
)

// Issue 37: the reconciler listed every terminal pod labelled as a workflow
// pod in the whole cluster each interval, and looked at each of them for
// each reservation: anyone who may create pods anywhere could make that as
// large as they liked. It now lists the runner namespaces only.
func TestReconcilerReadsOnlyTheRunnerNamespaces(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	finished := func(ns, name string) *v1.Pod {
		return st.MakePod().Namespace(ns).Name(name).Label("runner-pod", "r1").Phase(v1.PodSucceeded).Obj()
	}
	client := fake.NewClientset(finished("arc", "wf"), finished("elsewhere", "forged"))
	c := &informerCluster{client: client, informers: informers.NewSharedInformerFactory(client, 0)}
	sz, err := sizing.NewSizer(&config.WorkflowReservationArgs{})
	if err != nil {
		t.Fatal(err)
	}
	f := NewFeeder(nil)
	profile := &Profile{Name: "test", Runners: labels.Everything(), Namespaces: sets.New("arc"), RunnerPodLabel: "runner-pod",
		Recorder: events.NewFakeRecorder(10), Sizer: sz, ReservationMode: config.ReservationModeMemory}
	if err := f.Join(ctx, c, profile, nil, Config{ReconcileInterval: time.Hour, NoWorkflowPodGrace: time.Minute}); err != nil {
		t.Fatal(err)
	}
	client.ClearActions()
	f.Reconcile(ctx)
	var lists []string
	for _, a := range client.Actions() {
		if l, ok := a.(k8stesting.ListAction); ok && l.GetResource().Resource == "pods" {
			lists = append(lists, l.GetNamespace())
		}
	}
	if len(lists) != 1 || lists[0] != "arc" {
		t.Errorf("the reconciler listed pods in %q, want only the runner namespace arc", lists)
	}
	logger, _ := ktesting.NewTestContext(t)
	got := f.finishedWorkflowPods(ctx, logger)
	if len(got.byUID) != 1 || len(got.byRunner[types.NamespacedName{Namespace: "arc", Name: "r1"}]) != 1 {
		t.Errorf("finished workflow pods %v, want arc's only, under its runner", got.byUID)
	}
}
