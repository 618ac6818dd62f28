package arc

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
)

// The hook's hostname affinities name the node's hostname label where it
// differs from the node's name (Karpenter's KWOK nodes); nodeName pins and
// other requirements stay.
func TestPinToHostname(t *testing.T) {
	labels := map[string]string{"kwok-default-abc-1": "default-abc"}
	tests := map[string]struct {
		hostname func(string) string
		node     string
		spec     v1.PodSpec
		want     v1.PodSpec
	}{
		"required, KWOK node": {
			spec: v1.PodSpec{Affinity: hostnameAffinity("kwok-default-abc-1")},
			want: v1.PodSpec{Affinity: hostnameAffinity("default-abc")},
		},
		"preferred, KWOK node": {
			spec: v1.PodSpec{Affinity: preferredAffinity("kwok-default-abc-1")},
			want: v1.PodSpec{Affinity: preferredAffinity("default-abc")},
		},
		"label equals the name": {
			node: "node-1",
			spec: v1.PodSpec{Affinity: hostnameAffinity("node-1")},
			want: v1.PodSpec{Affinity: hostnameAffinity("node-1")},
		},
		"nodeName stays the node's name": {
			spec: v1.PodSpec{NodeName: "kwok-default-abc-1"},
			want: v1.PodSpec{NodeName: "kwok-default-abc-1"},
		},
		"no resolver": {
			hostname: func(string) string { return "" },
			spec:     v1.PodSpec{Affinity: hostnameAffinity("kwok-default-abc-1")},
			want:     v1.PodSpec{Affinity: hostnameAffinity("kwok-default-abc-1")},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := &Emulator{hostname: tc.hostname}
			if e.hostname == nil {
				e.SetHostnames(func(node string) string {
					if l, ok := labels[node]; ok {
						return l
					}
					return node
				})
			}
			node := tc.node
			if node == "" {
				node = "kwok-default-abc-1"
			}
			e.pinToHostname(&tc.spec, node)
			if diff := cmp.Diff(tc.want, tc.spec); diff != "" {
				t.Errorf("spec (-want,+got):\n%s", diff)
			}
		})
	}
}
