package storage

import (
	"context"
	"fmt"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/component-helpers/storage/volume"
	"k8s.io/klog/v2"
	configv1api "k8s.io/kube-scheduler/config/v1"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	configv1 "k8s.io/kubernetes/pkg/scheduler/apis/config/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/volumebinding"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/tandem-scheduler/tandem/pkg/fwk"
)

// VolumeBindingName is the simulator's VolumeBinding: the in-tree plugin
// with a binder that waits for the provisioner by watching, not by polling
// once per real second. A profile uses it in place of VolumeBinding
// (harness/inprocess Profile.VolumeBinding).
const VolumeBindingName = "SimVolumeBinding"

// BindPollInterval is how often the simulator's binder looks at the
// scheduler's informer cache for the claim to be bound. The in-tree binder
// asks once per second (wait.PollUntilContextTimeout(ctx, time.Second, ...)
// in BindPodVolumes): in simulated time, scaled 20 or 30 times, that is 20
// or 30 s of every runner's start, an artefact of the emulation that has
// nothing to do with scheduling.
const BindPollInterval = 5 * time.Millisecond

// Registry registers VolumeBindingName, for an in-process scheduler built
// with it (inprocess.WithRegistry).
func Registry() frameworkruntime.Registry {
	return frameworkruntime.Registry{VolumeBindingName: NewVolumeBinding}
}

// volumeBinding is the in-tree VolumeBinding under another name: its
// PreFilter, Filter, Reserve, Unreserve, Score and events are the in-tree
// plugin's; only its Binder's BindPodVolumes is replaced.
type volumeBinding struct {
	*volumebinding.VolumeBinding
}

// Name is VolumeBindingName.
func (volumeBinding) Name() string { return VolumeBindingName }

// NewVolumeBinding builds the in-tree VolumeBinding with its default args
// (the profile's pluginConfig for VolumeBinding does not apply under
// another name) and wraps its binder.
func NewVolumeBinding(ctx context.Context, _ runtime.Object, fh fwk.Handle) (fwk.Plugin, error) {
	versioned := &configv1api.VolumeBindingArgs{}
	scheme.Scheme.Default(versioned)
	args := &config.VolumeBindingArgs{}
	if err := configv1.Convert_v1_VolumeBindingArgs_To_config_VolumeBindingArgs(versioned, args, nil); err != nil {
		return nil, err
	}
	p, err := volumebinding.New(ctx, args, fh, feature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate))
	if err != nil {
		return nil, err
	}
	vb := p.(*volumebinding.VolumeBinding)
	factory := fh.SharedInformerFactory().Core().V1()
	vb.Binder = &binder{
		SchedulerVolumeBinder: vb.Binder,
		client:                fh.ClientSet(),
		claims:                factory.PersistentVolumeClaims().Lister(),
		volumes:               factory.PersistentVolumes().Lister(),
		nodes:                 factory.Nodes().Lister(),
		pods:                  factory.Pods().Lister(),
		timeout:               time.Duration(args.BindTimeoutSeconds) * time.Second,
	}
	return volumeBinding{vb}, nil
}

// binder is the in-tree binder but for BindPodVolumes of claims to
// provision, which makes the same API updates and checks the same
// conditions as the in-tree one (binder.go, bindAPIUpdate and
// checkBindings), every BindPollInterval instead of every second.
type binder struct {
	volumebinding.SchedulerVolumeBinder
	client  kubernetes.Interface
	claims  corelisters.PersistentVolumeClaimLister
	volumes corelisters.PersistentVolumeLister
	nodes   corelisters.NodeLister
	pods    corelisters.PodLister
	timeout time.Duration
}

// BindPodVolumes sets the selected node on each claim to provision (the
// assumed claims carry it) and waits until the provisioner has bound each
// to a volume the node can reach. Static bindings, which the simulator
// never has, go to the in-tree binder.
func (b *binder) BindPodVolumes(ctx context.Context, pod *v1.Pod, podVolumes *volumebinding.PodVolumes) error {
	if len(podVolumes.StaticBindings) > 0 {
		return b.SchedulerVolumeBinder.BindPodVolumes(ctx, pod, podVolumes)
	}
	updated := make([]*v1.PersistentVolumeClaim, 0, len(podVolumes.DynamicProvisions))
	for _, p := range podVolumes.DynamicProvisions {
		claim, err := b.client.CoreV1().PersistentVolumeClaims(p.PVC.Namespace).Update(ctx, p.PVC, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		updated = append(updated, claim)
	}
	err := wait.PollUntilContextTimeout(ctx, BindPollInterval, b.timeout, true, func(context.Context) (bool, error) {
		return b.bound(pod, updated)
	})
	if err != nil {
		return fmt.Errorf("binding volumes: %w", err)
	}
	klog.FromContext(ctx).V(4).Info("All PVCs for pod are bound", "pod", klog.KObj(pod))
	return nil
}

// bound reports whether every claim is bound, or fails as checkBindings
// does: the pod is gone, the provisioner dropped the selected node, or the
// volume is out of the node's reach.
func (b *binder) bound(pod *v1.Pod, updated []*v1.PersistentVolumeClaim) (bool, error) {
	node, err := b.nodes.Get(pod.Spec.NodeName)
	if err != nil {
		return false, fmt.Errorf("failed to get node %q: %w", pod.Spec.NodeName, err)
	}
	if _, err := b.pods.Pods(pod.Namespace).Get(pod.Name); apierrors.IsNotFound(err) {
		return false, fmt.Errorf("pod does not exist any more: %w", err)
	}
	for _, want := range updated {
		claim, err := b.claims.PersistentVolumeClaims(want.Namespace).Get(want.Name)
		if err != nil {
			return false, fmt.Errorf("failed to check provisioning pvc: %w", err)
		}
		if older(claim, want) {
			// The informer has not shown our update yet.
			return false, nil
		}
		if claim.Annotations[volume.AnnSelectedNode] != pod.Spec.NodeName {
			return false, fmt.Errorf("provisioning failed for PVC %q", claim.Name)
		}
		if claim.Spec.VolumeName == "" || !metav1.HasAnnotation(claim.ObjectMeta, volume.AnnBindCompleted) {
			return false, nil
		}
		pv, err := b.volumes.Get(claim.Spec.VolumeName)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("failed to get pv %q from cache: %w", claim.Spec.VolumeName, err)
		}
		if err := volume.CheckNodeAffinity(pv, node.Labels); err != nil {
			return false, fmt.Errorf("pv %q node affinity doesn't match node %q: %w", pv.Name, node.Name, err)
		}
	}
	return true, nil
}

// older reports whether got is an older version of the object than want
// (resourceVersions are etcd revisions, comparable as integers).
func older(got, want *v1.PersistentVolumeClaim) bool {
	g, err1 := strconv.ParseUint(got.ResourceVersion, 10, 64)
	w, err2 := strconv.ParseUint(want.ResourceVersion, 10, 64)
	return err1 == nil && err2 == nil && g < w
}
