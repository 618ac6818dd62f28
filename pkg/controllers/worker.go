package controllers

import (
	"cmp"
	"context"
	"slices"
	"strings"
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

// leaderQueue is the work queue of a worker that acts for the cluster (pair
// pods, placeholders): keyed by runner incarnation, worked on the leader
// only, failed syncs retried with backoff.
type leaderQueue struct {
	queue  workqueue.TypedRateLimitingInterface[RunnerKey]
	leader *leadership.Leadership
	// what names the objects synced, for the log.
	what string
}

func newLeaderQueue(name, what string, leader *leadership.Leadership) leaderQueue {
	return leaderQueue{
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[RunnerKey](),
			workqueue.TypedRateLimitingQueueConfig[RunnerKey]{Name: name}),
		leader: leader,
		what:   what,
	}
}

// work runs sync for the queued keys once this replica leads, until ctx
// ends.
func (q leaderQueue) work(ctx context.Context, sync func(context.Context, RunnerKey) error) {
	defer q.queue.ShutDown()
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

func (q leaderQueue) next(ctx context.Context, sync func(context.Context, RunnerKey) error) bool {
	key, quit := q.queue.Get()
	if quit {
		return false
	}
	defer q.queue.Done(key)
	if err := sync(ctx, key); err != nil {
		klog.FromContext(ctx).V(2).Info("Syncing a runner's "+q.what+" failed; retrying", "runner", klog.KRef(key.Namespace, key.Name), "err", err)
		q.queue.AddRateLimited(key)
		return true
	}
	q.queue.Forget(key)
	return true
}

// keyedPods returns the pods (pair pods or placeholders, told by is) that
// index lists under key's runner name and that key's sync decides on: all
// but those of the runner pod's current incarnation, when key is an older
// one (their own key decides).
func keyedPods(indexer cache.Indexer, index string, is func(*v1.Pod) bool, key RunnerKey, current *v1.Pod) ([]*v1.Pod, error) {
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

// deleteNow deletes pod at once (grace 0), only if it is still the same
// object (its UID); one gone already, or replaced by another of its name,
// is no error.
func deleteNow(ctx context.Context, client clientset.Interface, pod *v1.Pod) (deleted bool, err error) {
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

// takenName is what a create that failed AlreadyExists found under its
// name.
type takenName int

const (
	// nameOwn: the runner incarnation's own live pod of that kind, which
	// the informer does not show yet: the create is retried.
	nameOwn takenName = iota
	// nameGoing: one of tandem's pods of that kind that is being deleted,
	// ended, or another runner incarnation's: the name frees itself, but the
	// runner need not wait for it.
	nameGoing
	// nameSquatted: a pod that is not tandem's pod of that kind: anyone
	// who may create pods in the namespace can take a name first.
	nameSquatted
)

// whoHasName looks up the pod named like want, whose create failed
// AlreadyExists, and says what it is for the runner incarnation uid (is
// tells tandem's pods of want's kind). A lookup that fails is nameOwn: the
// create is retried.
func whoHasName(ctx context.Context, client clientset.Interface, want *v1.Pod, is func(*v1.Pod) bool, uid types.UID) (*v1.Pod, takenName) {
	old, err := client.CoreV1().Pods(want.Namespace).Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case err != nil:
		return nil, nameOwn
	case !is(old):
		return old, nameSquatted
	case old.DeletionTimestamp != nil || contract.IsTerminal(old) || metav1.GetControllerOf(old).UID != uid:
		// Another incarnation's goes with its own key's sync.
		return old, nameGoing
	}
	return old, nameOwn
}

// withGeneratedName is want named by the apiserver: its name, a dash and
// five random characters (the base cut to 58 characters).
func withGeneratedName(want *v1.Pod) *v1.Pod {
	pod := want.DeepCopy()
	pod.GenerateName, pod.Name = want.Name+"-", ""
	return pod
}

// ownFirst orders pods, tandem's pods of one kind for one runner, so that
// the one to keep comes first: the one of uid (what this worker's create
// returned), then the one named name, then one named from it by the
// apiserver (withGeneratedName). A pod that only claims to be tandem's
// (labels, annotations and an owner reference are anyone's to write where
// the admission policy is off) comes last and goes as a duplicate.
func ownFirst(pods []*v1.Pod, uid types.UID, name string) {
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

// holdsAsMuch reports whether pod requests at least what want does, for
// every resource want requests: admission may add to a pod's requests, not
// take from them, and a pod that claims to be tandem's may request
// nothing.
func holdsAsMuch(pod, want *v1.Pod) bool {
	have := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	for name, q := range resourcehelper.PodRequests(want, resourcehelper.PodResourcesOptions{}) {
		if h, ok := have[name]; !ok || h.Cmp(q) < 0 {
			return false
		}
	}
	return true
}
