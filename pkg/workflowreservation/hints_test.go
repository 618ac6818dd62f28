package workflowreservation

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/fwk"
)

func TestIsSchedulableAfterPodAdded(t *testing.T) {
	pending := st.MakePod().Name("p").Obj()
	tests := map[string]struct {
		added any
		want  fwk.QueueingHint
	}{
		"workflow pod bound":         {added: workflowPod("r1").Node("n1").Obj(), want: fwk.Queue},
		"workflow pod not yet bound": {added: workflowPod("r1").Obj(), want: fwk.QueueSkip},
		"other pod bound":            {added: st.MakePod().Name("q").Node("n1").Obj(), want: fwk.QueueSkip},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			pl, _ := newTestPlugin(t, defaultArgs(), false)
			got, err := pl.isSchedulableAfterPodAdded(logger, pending, nil, tc.added)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("hint = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestIsSchedulableAfterPodDeleted(t *testing.T) {
	pending := runnerPod("r2").Obj()
	tests := map[string]struct {
		deleted any
		want    fwk.QueueingHint
		wantErr bool
	}{
		"assigned pod deleted":   {deleted: st.MakePod().Name("p").Node("n1").Obj(), want: fwk.Queue},
		"assigned runner gone":   {deleted: runnerPod("r1").Node("n1").Obj(), want: fwk.Queue},
		"unassigned pod deleted": {deleted: st.MakePod().Name("p").Obj(), want: fwk.QueueSkip},
		"not a pod":              {deleted: st.MakeNode().Name("n1").Obj(), want: fwk.Queue, wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			pl, _ := newTestPlugin(t, defaultArgs(), false)
			got, err := pl.isSchedulableAfterPodDeleted(logger, pending, tc.deleted, nil)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, wantErr %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("hint = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestIsSchedulableAfterPodUpdated(t *testing.T) {
	pending := runnerPod("r2").Annotation(contract.WorkflowRequestsAnnotation, "cpu=x").Obj()
	tests := map[string]struct {
		oldObj, newObj any
		want           fwk.QueueingHint
	}{
		"assigned pod shrank": {
			oldObj: st.MakePod().Name("p").UID("p").Node("n1").Req(units("2")).Obj(),
			newObj: st.MakePod().Name("p").UID("p").Node("n1").Req(units("1")).Obj(),
			want:   fwk.Queue,
		},
		"assigned pod's status update (same generation)": {
			oldObj: func() *v1.Pod {
				p := st.MakePod().Name("p").UID("p").Node("n1").Req(units("2")).Obj()
				p.Generation = 3
				return p
			}(),
			newObj: func() *v1.Pod {
				p := st.MakePod().Name("p").UID("p").Node("n1").Req(units("1")).Phase(v1.PodRunning).Obj()
				p.Generation = 3 // requests changed only in this test: the spec did not, as far as the generation says
				return p
			}(),
			want: fwk.QueueSkip,
		},
		"assigned pod resized (new generation)": {
			oldObj: func() *v1.Pod {
				p := st.MakePod().Name("p").UID("p").Node("n1").Req(units("2")).Obj()
				p.Generation = 3
				return p
			}(),
			newObj: func() *v1.Pod {
				p := st.MakePod().Name("p").UID("p").Node("n1").Req(units("1")).Obj()
				p.Generation = 4
				return p
			}(),
			want: fwk.Queue,
		},
		"the pending pod's host ports changed": {
			oldObj: runnerPod("r2").Annotation(contract.HostPortsAnnotation, "6379").Obj(),
			newObj: runnerPod("r2").Annotation(contract.HostPortsAnnotation, "6380").Obj(),
			want:   fwk.Queue,
		},
		"assigned pod relabelled": {
			oldObj: st.MakePod().Name("p").UID("p").Node("n1").Req(units("2")).Obj(),
			newObj: st.MakePod().Name("p").UID("p").Node("n1").Req(units("2")).Label("a", "b").Obj(),
			want:   fwk.QueueSkip,
		},
		"the pending pod itself shrank": {
			oldObj: runnerPod("r2").Req(units("2")).Obj(),
			newObj: runnerPod("r2").Req(units("1")).Obj(),
			want:   fwk.Queue,
		},
		"the pending pod's workflow size was fixed": {
			oldObj: pending,
			newObj: runnerPod("r2").Annotation(contract.WorkflowRequestsAnnotation, "cpu=1").Obj(),
			want:   fwk.Queue,
		},
		"the pending pod got step headroom removed": {
			oldObj: runnerPod("r2").Annotation(contract.StepRequestsAnnotation, "cpu=1").Obj(),
			newObj: runnerPod("r2").Obj(),
			want:   fwk.Queue,
		},
		"the pending pod got an unrelated annotation": {
			oldObj: pending,
			newObj: runnerPod("r2").Annotation(contract.WorkflowRequestsAnnotation, "cpu=x").Annotation("a", "b").Obj(),
			want:   fwk.QueueSkip,
		},
		"another unassigned pod shrank": {
			oldObj: st.MakePod().Name("q").UID("q").Req(units("2")).Obj(),
			newObj: st.MakePod().Name("q").UID("q").Req(units("1")).Obj(),
			want:   fwk.QueueSkip,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			pl, _ := newTestPlugin(t, defaultArgs(), false)
			got, err := pl.isSchedulableAfterPodUpdated(logger, pending, tc.oldObj, tc.newObj)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("hint = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestIsSchedulableAfterNodeChange(t *testing.T) {
	pending := runnerPod("r2").Obj()
	small := st.MakeNode().Name("n1").Capacity(units("2")).Obj()
	big := st.MakeNode().Name("n1").Capacity(units("4")).Obj()
	labelled := st.MakeNode().Name("n1").Capacity(units("2")).Label("a", "b").Obj()
	withGPU := st.MakeNode().Name("n1").Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "2", "nvidia.com/gpu": "1"}).Obj()
	tests := map[string]struct {
		oldObj, newObj any
		want           fwk.QueueingHint
	}{
		"node added":            {newObj: small, want: fwk.Queue},
		"allocatable grew":      {oldObj: small, newObj: big, want: fwk.Queue},
		"new resource":          {oldObj: small, newObj: withGPU, want: fwk.Queue},
		"allocatable shrank":    {oldObj: big, newObj: small, want: fwk.QueueSkip},
		"allocatable unchanged": {oldObj: small, newObj: labelled, want: fwk.QueueSkip},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			pl, _ := newTestPlugin(t, defaultArgs(), false)
			got, err := pl.isSchedulableAfterNodeChange(logger, pending, tc.oldObj, tc.newObj)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("hint = %v, want %v", got, tc.want)
			}
		})
	}
}

// A nominated runner that goes frees the pair room AddPod protected.
func TestHintNominatedRunnerDeleted(t *testing.T) {
	pl, _ := newTestPlugin(t, defaultArgs(), false)
	deleted := runnerPod("r3").Annotation(contract.WorkflowRequestsAnnotation, "cpu=1").NominatedNodeName("n1").Obj()
	if got, _ := pl.isSchedulableAfterPodDeleted(klogger(t), st.MakePod().Name("p").Obj(), deleted, nil); got != fwk.Queue {
		t.Errorf("hint = %v, want Queue", got)
	}
}
