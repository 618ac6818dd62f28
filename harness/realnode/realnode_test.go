package realnode

import (
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestCountCPUs(t *testing.T) {
	for list, want := range map[string]int{"0": 1, "0-1\n": 2, "0-3,6,8-9": 7} {
		if got, err := countCPUs(list); err != nil || got != want {
			t.Errorf("countCPUs(%q) = %d, %v; want %d", list, got, err, want)
		}
	}
	for _, bad := range []string{"", "a", "3-1", "0-x"} {
		if got, err := countCPUs(bad); err == nil {
			t.Errorf("countCPUs(%q) = %d, want an error", bad, got)
		}
	}
}

// The kubelet reserves what the machine has beyond the allocatable asked
// for, and a node larger than the machine is refused.
func TestKubeletConfigReservesTheRest(t *testing.T) {
	cpus, memory, err := machine()
	if err != nil {
		t.Fatal(err)
	}
	n := &Node{opts: Options{Name: "n", Index: 7, Dir: "/tmp/x", CPU: resource.MustParse("500m"), Memory: resource.MustParse("1Gi"), Pods: 20,
		Taints: []v1.Taint{{Key: "k", Value: "v", Effect: v1.TaintEffectNoSchedule}}}}
	config, err := n.kubeletConfig()
	if err != nil {
		t.Fatal(err)
	}
	wantMemory := memory.Value() - 1<<30 - evictionMemory.Value()
	for _, want := range []string{
		"systemReserved: {cpu: " + resource.NewMilliQuantity(cpus.MilliValue()-500, resource.DecimalSI).String() + ", memory: \"" + strconv.FormatInt(wantMemory, 10) + "\"}",
		"cgroupRoot: /tandem-node7\n", "maxPods: 20\n", `- {key: "k", value: "v", effect: "NoSchedule"}`,
		"anonymous: {enabled: false}", "mode: Webhook",
	} {
		if !strings.Contains(config, want) {
			t.Errorf("kubelet config lacks %q:\n%s", want, config)
		}
	}
	n.opts.CPU = *resource.NewMilliQuantity(cpus.MilliValue()+1, resource.DecimalSI)
	if _, err := n.kubeletConfig(); err == nil {
		t.Errorf("a node with more cpu than the machine (%s) got a config", n.opts.CPU.String())
	}
}

// Every container of a localized pod runs the local image and is never
// pulled.
func TestLocalize(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "i", Image: "alpine:3", Command: []string{"true"}}},
		Containers:     []v1.Container{{Name: "c", Image: "ghcr.io/actions/actions-runner:latest", Args: []string{"run"}}, {Name: "s", Image: "redis"}},
	}}
	Localize(pod)
	for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
		if c.Image != ImageName || c.ImagePullPolicy != v1.PullNever || c.Command != nil || c.Args != nil {
			t.Errorf("container %s after Localize: image %q, pull policy %q, command %q, args %q", c.Name, c.Image, c.ImagePullPolicy, c.Command, c.Args)
		}
	}
}
