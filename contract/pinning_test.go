package contract

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// affinityPod is a pod whose one required node affinity term asks for key
// In values, as a label expression or (fields) a field.
func affinityPod(key string, values []string, fields bool) *v1.Pod {
	req := v1.NodeSelectorRequirement{Key: key, Operator: v1.NodeSelectorOpIn, Values: values}
	var term v1.NodeSelectorTerm
	if fields {
		term.MatchFields = []v1.NodeSelectorRequirement{req}
	} else {
		term.MatchExpressions = []v1.NodeSelectorRequirement{req}
	}
	return &v1.Pod{Spec: v1.PodSpec{Affinity: &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{term}},
	}}}}
}

func hostname(values ...string) *v1.Pod { return affinityPod(v1.LabelHostname, values, false) }

func selectorPod(node string) *v1.Pod {
	return &v1.Pod{Spec: v1.PodSpec{NodeSelector: map[string]string{v1.LabelHostname: node}}}
}

func TestPinnedTo(t *testing.T) {
	tests := map[string]struct {
		pod  *v1.Pod
		want bool
	}{
		"required hostname affinity naming the node (hooks v0.7.0 kube-scheduler mode)": {pod: hostname("n1"), want: true},
		"metadata.name field naming the node":                                           {pod: affinityPod(metav1.ObjectNameField, []string{"n1"}, true), want: true},
		"hostname nodeSelector naming the node":                                         {pod: selectorPod("n1"), want: true},
		"hostname nodeSelector naming another node":                                     {pod: selectorPod("n2")},
		"a pool affinity (novolume template)":                                           {pod: affinityPod("pool", []string{"ci"}, false)},
		"hostname affinity allowing two nodes":                                          {pod: hostname("n1", "n2")},
		"no affinity":                                                                   {pod: &v1.Pod{}},
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
	tests := map[string]struct {
		pod  *v1.Pod
		want bool
	}{
		"bound to the node":                       {pod: &v1.Pod{Spec: v1.PodSpec{NodeName: "n1"}}, want: true},
		"bound to another node":                   {pod: &v1.Pod{Spec: v1.PodSpec{NodeName: "n2"}}},
		"pending, pinned to the node":             {pod: hostname("n1"), want: true},
		"pending, pinned to another node":         {pod: hostname("n2")},
		"pending, hostname nodeSelector n2":       {pod: selectorPod("n2")},
		"pending, pinned by field to n2":          {pod: affinityPod(metav1.ObjectNameField, []string{"n2"}, true)},
		"pending, hostname affinity n1 or n2":     {pod: hostname("n1", "n2"), want: true},
		"pending, a pool affinity":                {pod: affinityPod("pool", []string{"ci"}, false), want: true},
		"pending, unpinned (kube-scheduler mode)": {pod: &v1.Pod{}, want: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := MayClaimOn(tc.pod, "n1"); got != tc.want {
				t.Errorf("MayClaimOn = %v, want %v", got, tc.want)
			}
		})
	}
}
