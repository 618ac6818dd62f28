package contract

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
)

func TestPinnedTo(t *testing.T) {
	hostname := func(values ...string) *st.PodWrapper {
		return st.MakePod().NodeAffinityIn(v1.LabelHostname, values, st.NodeSelectorTypeMatchExpressions)
	}
	tests := map[string]struct {
		pod  *v1.Pod
		want bool
	}{
		"required hostname affinity naming the node (hooks v0.7.0 kube-scheduler mode)": {pod: hostname("n1").Obj(), want: true},
		"metadata.name field naming the node":                                           {pod: st.MakePod().NodeAffinityIn(metav1.ObjectNameField, []string{"n1"}, st.NodeSelectorTypeMatchFields).Obj(), want: true},
		"hostname nodeSelector naming the node":                                         {pod: st.MakePod().NodeSelector(map[string]string{v1.LabelHostname: "n1"}).Obj(), want: true},
		"hostname nodeSelector naming another node":                                     {pod: st.MakePod().NodeSelector(map[string]string{v1.LabelHostname: "n2"}).Obj()},
		"a pool affinity (novolume template)":                                           {pod: st.MakePod().NodeAffinityIn("pool", []string{"ci"}, st.NodeSelectorTypeMatchExpressions).Obj()},
		"hostname affinity allowing two nodes":                                          {pod: hostname("n1", "n2").Obj()},
		"no affinity":                                                                   {pod: st.MakePod().Obj()},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := PinnedTo(tc.pod, "n1"); got != tc.want {
				t.Errorf("PinnedTo = %v, want %v", got, tc.want)
			}
		})
	}
}

// Issue 20: a pod labelled with a runner's name claims (or makes its
// placeholder yield) only where it may land on the runner's node, n1.
func TestMayClaimOn(t *testing.T) {
	hostname := func(values ...string) *st.PodWrapper {
		return st.MakePod().NodeAffinityIn(v1.LabelHostname, values, st.NodeSelectorTypeMatchExpressions)
	}
	tests := map[string]struct {
		pod  *v1.Pod
		want bool
	}{
		"bound to the node":                       {pod: st.MakePod().Node("n1").Obj(), want: true},
		"bound to another node":                   {pod: st.MakePod().Node("n2").Obj()},
		"pending, pinned to the node":             {pod: hostname("n1").Obj(), want: true},
		"pending, pinned to another node":         {pod: hostname("n2").Obj()},
		"pending, hostname nodeSelector n2":       {pod: st.MakePod().NodeSelector(map[string]string{v1.LabelHostname: "n2"}).Obj()},
		"pending, pinned by field to n2":          {pod: st.MakePod().NodeAffinityIn(metav1.ObjectNameField, []string{"n2"}, st.NodeSelectorTypeMatchFields).Obj()},
		"pending, hostname affinity n1 or n2":     {pod: hostname("n1", "n2").Obj(), want: true},
		"pending, a pool affinity":                {pod: st.MakePod().NodeAffinityIn("pool", []string{"ci"}, st.NodeSelectorTypeMatchExpressions).Obj(), want: true},
		"pending, unpinned (kube-scheduler mode)": {pod: st.MakePod().Obj(), want: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := MayClaimOn(tc.pod, "n1"); got != tc.want {
				t.Errorf("MayClaimOn = %v, want %v", got, tc.want)
			}
		})
	}
}
