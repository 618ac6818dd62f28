// Package podworker is what the placeholder and pair-pod workers share: a
// work queue keyed by runner incarnation that only the leader works, the
// pod that stands for room on a runner's behalf, and what a create finds
// under a name it wanted.
package podworker

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/leadership"
)

// Queue is the work queue of a worker that acts for the cluster (pair
// pods, placeholders): keyed by runner incarnation, worked on the leader
// only, failed syncs retried with backoff.
type Queue struct {
	// Keys are the runner incarnations to sync.
	Keys   workqueue.TypedRateLimitingInterface[RunnerKey]
	leader *leadership.Leadership
	// what names the objects synced, for the log.
	what string
}

// NewQueue returns the queue of a worker (name, for the workqueue's
// metrics) that syncs runners' what, worked while leader leads.
func NewQueue(name, what string, leader *leadership.Leadership) Queue {
	return Queue{
		Keys: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[RunnerKey](),
			workqueue.TypedRateLimitingQueueConfig[RunnerKey]{Name: name}),
		leader: leader,
		what:   what,
	}
}

// Leads reports whether this replica leads: only the leader works the
// queue and writes.
func (q Queue) Leads() bool { return q.leader.IsLeader() }

// Work runs sync for the queued keys once this replica leads, until ctx
// ends.
func (q Queue) Work(ctx context.Context, sync func(context.Context, RunnerKey) error) {
	defer q.Keys.ShutDown()
	select {
	case <-q.leader.Elected():
	case <-ctx.Done():
		return
	}
	go wait.UntilWithContext(ctx, func(ctx context.Context) {
		for q.next(ctx, sync) {
		}
	}, time.Second)
	<-ctx.Done()
}

func (q Queue) next(ctx context.Context, sync func(context.Context, RunnerKey) error) bool {
	key, quit := q.Keys.Get()
	if quit {
		return false
	}
	defer q.Keys.Done(key)
	if err := sync(ctx, key); err != nil {
		klog.FromContext(ctx).V(2).Info("Syncing a runner's "+q.what+" failed; retrying", "runner", klog.KRef(key.Namespace, key.Name), "err", err)
		q.Keys.AddRateLimited(key)
		return true
	}
	q.Keys.Forget(key)
	return true
}

// KeyedPods returns the pods (pair pods or placeholders, told by is) that
// index lists under key's runner name and that key's sync decides on: all
// but those of the runner pod's current incarnation, when key is an older
// one (their own key decides).
func KeyedPods(indexer cache.Indexer, index string, is func(*v1.Pod) bool, key RunnerKey, current *v1.Pod) ([]*v1.Pod, error) {
	objs, err := indexer.ByIndex(index, key.Namespace+"/"+key.Name)
	if err != nil {
		return nil, err
	}
	var out []*v1.Pod
	for _, o := range objs {
		pod, ok := o.(*v1.Pod)
		if !ok || !is(pod) {
			continue
		}
		if owner := metav1.GetControllerOf(pod).UID; owner != key.UID && current != nil && owner == current.UID {
			continue
		}
		out = append(out, pod)
	}
	return out, nil
}

// DeleteNow deletes pod at once (grace 0), only if it is still the same
// object (its UID); one gone already, or replaced by another of its name,
// is no error.
func DeleteNow(ctx context.Context, client clientset.Interface, pod *v1.Pod) (deleted bool, err error) {
	err = client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      &metav1.Preconditions{UID: &pod.UID},
	})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return false, nil
	default:
		return false, err
	}
}

// TakenName is what a create that failed AlreadyExists found under its
// name.
type TakenName int

const (
	// NameOwn means the runner incarnation's own live pod of that kind, which
	// the informer does not show yet: the create is retried.
	NameOwn TakenName = iota
	// NameGoing means one of tandem's pods of that kind that is being deleted,
	// ended, or another runner incarnation's: the name frees itself, but the
	// runner need not wait for it.
	NameGoing
	// NameSquatted means a pod that is not tandem's pod of that kind: anyone
	// who may create pods in the namespace can take a name first.
	NameSquatted
)

// WhoHasName looks up the pod named like want, whose create failed
// AlreadyExists, and says what it is for the runner incarnation uid (is
// tells tandem's pods of want's kind). A lookup that fails is NameOwn: the
// create is retried.
func WhoHasName(ctx context.Context, client clientset.Interface, want *v1.Pod, is func(*v1.Pod) bool, uid types.UID) (*v1.Pod, TakenName) {
	old, err := client.CoreV1().Pods(want.Namespace).Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case err != nil:
		return nil, NameOwn
	case !is(old):
		return old, NameSquatted
	case old.DeletionTimestamp != nil || contract.IsTerminal(old) || metav1.GetControllerOf(old).UID != uid:
		// Another incarnation's goes with its own key's sync.
		return old, NameGoing
	}
	return old, NameOwn
}

// WithGeneratedName is want named by the apiserver: its name, a dash and
// five random characters (the base cut to 58 characters).
func WithGeneratedName(want *v1.Pod) *v1.Pod {
	pod := want.DeepCopy()
	pod.GenerateName, pod.Name = want.Name+"-", ""
	return pod
}

// OwnFirst orders pods, tandem's pods of one kind for one runner, so that
// the one to keep comes first: the one of uid (what this worker's create
// returned), then the one named name, then one named from it by the
// apiserver (WithGeneratedName). A pod that only claims to be tandem's
// (labels, annotations and an owner reference are anyone's to write where
// the admission policy is off) comes last and goes as a duplicate.
func OwnFirst(pods []*v1.Pod, uid types.UID, name string) {
	base := name + "-"
	if len(base) > maxGeneratedNameBase {
		base = base[:maxGeneratedNameBase]
	}
	rank := func(p *v1.Pod) int {
		switch {
		case uid != "" && p.UID == uid:
			return 0
		case p.Name == name:
			return 1
		case len(p.Name) == len(base)+generatedNameSuffix && strings.HasPrefix(p.Name, base):
			return 2
		}
		return 3
	}
	slices.SortStableFunc(pods, func(a, b *v1.Pod) int { return cmp.Compare(rank(a), rank(b)) })
}

// The apiserver's generated names: the base cut to 58 characters and 5
// random ones.
const (
	maxGeneratedNameBase = 58
	generatedNameSuffix  = 5
)

// HoldsAsMuch reports whether pod requests at least what want does, for
// every resource want requests: admission may add to a pod's requests, not
// take from them, and a pod that claims to be tandem's may request
// nothing.
func HoldsAsMuch(pod, want *v1.Pod) bool {
	have := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	for name, q := range resourcehelper.PodRequests(want, resourcehelper.PodResourcesOptions{}) {
		if h, ok := have[name]; !ok || h.Cmp(q) < 0 {
			return false
		}
	}
	return true
}

// RunnerKey names a runner incarnation that a worker syncs.
type RunnerKey struct {
	Namespace, Name string
	UID             types.UID
}

// Warned remembers, by runner incarnation and event reason, the runners
// told once of what every retry would repeat.
type Warned struct {
	mu   sync.Mutex
	told map[warnKey]bool
}

// warnKey is a runner incarnation and an event reason.
type warnKey struct {
	uid    types.UID
	reason string
}

// First reports whether the runner incarnation uid has not been told
// reason yet, and notes that it has now.
func (w *Warned) First(uid types.UID, reason string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := warnKey{uid, reason}
	if w.told[k] {
		return false
	}
	if w.told == nil {
		w.told = map[warnKey]bool{}
	}
	w.told[k] = true
	return true
}

// Forget forgets that uid was told reasons: told again when it recurs.
func (w *Warned) Forget(uid types.UID, reasons ...string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range reasons {
		delete(w.told, warnKey{uid, r})
	}
}

// HoldingPod is the pod that stands for room on behalf of runner (a pair
// pod or a placeholder): one pause container requesting requests (limits
// the same: extended resources and hugepages need them, and a LimitRange's
// default limit below the request would make the pod invalid) and the host
// ports, the runner's priority class and tolerations, owned by the runner,
// non-root, no service account token.
func HoldingPod(runner *v1.Pod, container, image string, requests v1.ResourceList, ports []contract.HostPort) *v1.Pod {
	c := v1.Container{
		Name:      container,
		Image:     image,
		Resources: v1.ResourceRequirements{Requests: requests, Limits: requests.DeepCopy()},
		SecurityContext: &v1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			Capabilities:             &v1.Capabilities{Drop: []v1.Capability{"ALL"}},
		},
	}
	for _, p := range ports {
		c.Ports = append(c.Ports, v1.ContainerPort{ContainerPort: p.Port, HostPort: p.Port, Protocol: p.Protocol})
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: runner.Namespace,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Pod", Name: runner.Name, UID: runner.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(false),
			}},
		},
		Spec: v1.PodSpec{
			SchedulerName:                 runner.Spec.SchedulerName,
			PriorityClassName:             runner.Spec.PriorityClassName,
			Tolerations:                   runner.Spec.Tolerations,
			Containers:                    []v1.Container{c},
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			SecurityContext: &v1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To[int64](65535),
				SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault},
			},
		},
	}
}
