package kubectltandem

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Resource lists are added and compared as the scheduler does: a resource
// missing from a list is zero of it. Results leave zero entries out.

// add returns the sum of lists.
func add(lists ...v1.ResourceList) v1.ResourceList {
	out := v1.ResourceList{}
	for _, l := range lists {
		for n, q := range l {
			sum := out[n]
			sum.Add(q)
			out[n] = sum
		}
	}
	return nonZero(out)
}

// sub returns a-b.
func sub(a, b v1.ResourceList) v1.ResourceList {
	out := a.DeepCopy()
	if out == nil {
		out = v1.ResourceList{}
	}
	for n, q := range b {
		d := out[n]
		d.Sub(q)
		out[n] = d
	}
	return nonZero(out)
}

// atLeastZero returns l with every negative resource raised to zero.
func atLeastZero(l v1.ResourceList) v1.ResourceList {
	out := v1.ResourceList{}
	for n, q := range l {
		if q.Sign() > 0 {
			out[n] = q.DeepCopy()
		}
	}
	return out
}

func nonZero(l v1.ResourceList) v1.ResourceList {
	for n, q := range l {
		if q.IsZero() {
			delete(l, n)
		}
	}
	return l
}

func isZero(l v1.ResourceList) bool {
	for _, q := range l {
		if !q.IsZero() {
			return false
		}
	}
	return true
}

// short returns the resources of need that free has less of, in the
// order of names.
func short(need, free v1.ResourceList) []v1.ResourceName {
	var out []v1.ResourceName
	for _, n := range names(need) {
		if q := need[n]; q.Sign() > 0 && q.Cmp(free[n]) > 0 {
			out = append(out, n)
		}
	}
	return out
}

// podRequests is the pod's effective request as the scheduler of
// Kubernetes 1.35 accounts it on its node (containers, init and sidecar
// containers, overhead, pod-level resources, resized requests), plus one pod.
func podRequests(pod *v1.Pod) v1.ResourceList {
	rl := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{UseStatusResources: true})
	return add(rl, onePod())
}

func onePod() v1.ResourceList {
	return v1.ResourceList{v1.ResourcePods: *resource.NewQuantity(1, resource.DecimalSI)}
}

// names returns the names in l: cpu, memory, pods first, then the rest
// sorted.
func names(l v1.ResourceList) []v1.ResourceName {
	out := make([]v1.ResourceName, 0, len(l))
	for n := range l {
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b v1.ResourceName) int {
		if c := rank(a) - rank(b); c != 0 {
			return c
		}
		return strings.Compare(string(a), string(b))
	})
	return out
}

func rank(n v1.ResourceName) int {
	switch n {
	case v1.ResourceCPU:
		return 0
	case v1.ResourceMemory:
		return 1
	case v1.ResourcePods:
		return 2
	}
	return 3
}

// format renders l the way tandem's events and the sizing annotation write
// sizes, "cpu=2,memory=4Gi,pods=1"; "-" for nothing.
func format(l v1.ResourceList) string {
	parts := make([]string, 0, len(l))
	for _, n := range names(l) {
		q := l[n]
		if q.IsZero() {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s=%s", n, q.String()))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ",")
}

// formatWithoutPods is format without the pod count, as tandem's
// scheduling messages write a pod's size.
func formatWithoutPods(l v1.ResourceList) string {
	l = l.DeepCopy()
	delete(l, v1.ResourcePods)
	return format(l)
}

// quantity renders one resource of l; "0" when l has none.
func quantity(l v1.ResourceList, n v1.ResourceName) string {
	q, ok := l[n]
	if !ok {
		return "0"
	}
	return q.String()
}

// parseResourceList parses a size as the sizing annotations write it,
// "cpu=2,memory=4Gi,nvidia.com/gpu=1".
func parseResourceList(s string) (v1.ResourceList, error) {
	rl := v1.ResourceList{}
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, value, ok := strings.Cut(part, "=")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || name == "" || value == "" {
			return nil, fmt.Errorf("%q is not name=quantity", part)
		}
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return nil, fmt.Errorf("invalid quantity %q for %s: %w", value, name, err)
		}
		if q.Sign() < 0 {
			return nil, fmt.Errorf("negative quantity %q for %s", value, name)
		}
		if _, dup := rl[v1.ResourceName(name)]; dup {
			return nil, fmt.Errorf("resource %s given twice", name)
		}
		rl[v1.ResourceName(name)] = q
	}
	if len(rl) == 0 {
		return nil, errors.New("no resources given")
	}
	return rl, nil
}
