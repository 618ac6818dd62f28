// Package storage plays the controllers a real cluster runs for ARC's work
// volume, so that the scheduler's volume plugins see what they would see in
// a cluster with a WaitForFirstConsumer StorageClass (the usual default:
// gp3 on EKS, standard-rwo on GKE, local-path):
//   - the ephemeral volume controller creates "<pod>-<volume>" PVCs for
//     generic ephemeral volumes, owned by the pod;
//   - a dynamic provisioner plus the PV controller's binding: once the
//     scheduler selects a node (annotation volume.kubernetes.io/selected-node)
//     it creates a PV with node affinity to that node (or its zone, see
//     Controller.TopologyKey), or for a ReadWriteMany claim a shared file
//     system every node reaches, and binds the claim; a selected node that
//     is gone is dropped so the scheduler picks another;
//   - the garbage collector, pvc-protection and the Delete reclaim policy:
//     a deleted pod's claims go, and their volumes with them.
//
// Like the real controllers, it retries a write that fails until it goes
// through (an apiserver restart loses none), and it creates a pod's claim
// once an older claim of the same name, owned by a previous pod of the same
// name, is gone (ARC recreates a failed runner pod under its name).
package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	clientretry "k8s.io/client-go/util/retry"
	"k8s.io/component-helpers/storage/ephemeral"
	"k8s.io/component-helpers/storage/volume"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/tandem-scheduler/tandem/harness/sim/retry"
)

// Provisioner is the provisioner name of the simulator's StorageClass.
const Provisioner = "sim.tandem.dev/local"

// StorageClass is a WaitForFirstConsumer class served by Controller.
func StorageClass(name string) *storagev1.StorageClass {
	return &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: name},
		Provisioner:       Provisioner,
		ReclaimPolicy:     ptr.To(v1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
	}
}

// Controller serves one StorageClass.
type Controller struct {
	client kubernetes.Interface
	class  string
	// TopologyKey is the node label the volumes it provisions are pinned to:
	// kubernetes.io/hostname (node-local disks, local-path; the default) or
	// topology.kubernetes.io/zone (zonal disks: EBS gp3, GKE standard-rwo).
	TopologyKey string
	// LocalRoot, when set, is a directory of this machine under which the
	// local volumes are made (real kubelets on this machine mount them); when
	// empty they are paths no kubelet mounts.
	LocalRoot string
	pods      corelisters.PodLister
	nodes     corelisters.NodeLister
	writes    *retry.Queue
}

// New returns a controller for the StorageClass class.
func New(client kubernetes.Interface, class string) *Controller {
	return &Controller{client: client, class: class, TopologyKey: v1.LabelHostname, writes: retry.New(0)}
}

// Start registers the handlers on factory's informers and retries failed
// writes until ctx ends; the caller starts the factory.
func (c *Controller) Start(ctx context.Context, factory informers.SharedInformerFactory) error {
	logger := klog.FromContext(ctx)
	c.pods = factory.Core().V1().Pods().Lister()
	c.nodes = factory.Core().V1().Nodes().Lister()
	go c.writes.Run(ctx)
	if _, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.onPodAdd(ctx, obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			c.onPodDelete(ctx, obj)
		},
	}); err != nil {
		return err
	}
	_, err := factory.Core().V1().PersistentVolumeClaims().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onClaim(ctx, logger, obj) },
		UpdateFunc: func(_, obj any) { c.onClaim(ctx, logger, obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			c.onClaimDelete(ctx, obj)
		},
	})
	return err
}

// onPodAdd is the ephemeral volume controller.
func (c *Controller) onPodAdd(ctx context.Context, obj any) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if vol.Ephemeral == nil || vol.Ephemeral.VolumeClaimTemplate == nil {
			continue
		}
		tmpl := vol.Ephemeral.VolumeClaimTemplate
		claim := &v1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{
				Name:        ephemeral.VolumeClaimName(pod, vol),
				Namespace:   pod.Namespace,
				Labels:      tmpl.Labels,
				Annotations: tmpl.Annotations,
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
					Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
				}},
			},
			Spec: *tmpl.Spec.DeepCopy(),
		}
		c.writes.Do(ctx, "claim/"+string(pod.UID)+"/"+claim.Name, func(ctx context.Context) error {
			_, err := c.client.CoreV1().PersistentVolumeClaims(pod.Namespace).Create(ctx, claim, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return c.claimTaken(ctx, pod, claim.Name)
			}
			return err
		})
	}
}

var errClaimGone = errors.New("claim deleted meanwhile, create it again")

// claimTaken handles a claim name already taken: by ours (an earlier try
// went through), or by the claim of an older pod of the same name. If that
// pod is gone, the claim is deleted, as the garbage collector would, and the
// create is retried; if it is not gone yet, onClaimDelete creates ours once
// its claim goes.
func (c *Controller) claimTaken(ctx context.Context, pod *v1.Pod, name string) error {
	claims := c.client.CoreV1().PersistentVolumeClaims(pod.Namespace)
	existing, err := claims.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return errClaimGone
	case err != nil:
		return err
	case metav1.IsControlledBy(existing, pod):
		return nil
	}
	owner := metav1.GetControllerOf(existing)
	if owner == nil || owner.Kind != "Pod" {
		return nil
	}
	if current, err := c.pods.Pods(pod.Namespace).Get(owner.Name); err == nil && current.UID == owner.UID {
		return nil // its pod still runs
	}
	if err := c.dropFinalizers(ctx, name, pod.Namespace, false); err != nil {
		return fmt.Errorf("removing claim finalizers: %w", err)
	}
	err = claims.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &existing.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return err
	}
	return errClaimGone
}

// onPodDelete is the garbage collector for the pod's ephemeral claims: it
// deletes the claims the pod owns (not a newer pod's of the same name).
func (c *Controller) onPodDelete(ctx context.Context, obj any) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if vol.Ephemeral == nil {
			continue
		}
		name := ephemeral.VolumeClaimName(pod, vol)
		c.writes.Do(ctx, "gc/"+string(pod.UID)+"/"+name, func(ctx context.Context) error {
			return c.deleteOwnedClaim(ctx, pod, name)
		})
	}
}

func (c *Controller) deleteOwnedClaim(ctx context.Context, pod *v1.Pod, name string) error {
	claims := c.client.CoreV1().PersistentVolumeClaims(pod.Namespace)
	claim, err := claims.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !metav1.IsControlledBy(claim, pod) {
		return nil
	}
	// pvc-protection: no other pod uses it once its runner is gone (the
	// hook deleted the workflow pod first).
	if err := c.dropFinalizers(ctx, name, pod.Namespace, false); err != nil {
		return fmt.Errorf("removing claim finalizers: %w", err)
	}
	err = claims.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &claim.UID}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// onClaim provisions and binds a claim of our class once a node is selected.
func (c *Controller) onClaim(ctx context.Context, logger klog.Logger, obj any) {
	claim, ok := obj.(*v1.PersistentVolumeClaim)
	if !ok || ptr.Deref(claim.Spec.StorageClassName, "") != c.class || claim.DeletionTimestamp != nil {
		return
	}
	node := claim.Annotations[volume.AnnSelectedNode]
	if node == "" || claim.Spec.VolumeName != "" {
		return
	}
	c.writes.Do(ctx, "provision/"+string(claim.UID), func(ctx context.Context) error {
		if err := c.provision(ctx, claim, node); err != nil {
			return fmt.Errorf("provisioning claim %s on node %s: %w", klog.KObj(claim), node, err)
		}
		logger.V(4).Info("Provisioned and bound", "claim", klog.KObj(claim), "node", node)
		return nil
	})
}

func pvName(claim *v1.PersistentVolumeClaim) string { return "pvc-" + string(claim.UID) }

func (c *Controller) provision(ctx context.Context, claim *v1.PersistentVolumeClaim, node string) error {
	n, err := c.nodes.Get(node)
	if apierrors.IsNotFound(err) {
		n, err = c.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		// external-provisioner's answer to a selected node that is gone:
		// drop the annotation, so the scheduler picks another node.
		return c.reschedule(ctx, claim)
	}
	if err != nil {
		return err
	}
	key, value := c.TopologyKey, n.Labels[c.TopologyKey]
	if value == "" {
		key, value = v1.LabelHostname, node
	}
	path := "/var/lib/sim-local/" + string(claim.UID)
	if c.LocalRoot != "" {
		path = filepath.Join(c.LocalRoot, string(claim.UID))
		// Writable by the pods' users, whatever the umask.
		err := os.MkdirAll(path, 0o777)
		if err == nil {
			err = os.Chmod(path, 0o777) //nolint:gosec // a scratch volume of the run, as an emptyDir is
		}
		if err != nil {
			return fmt.Errorf("making the local volume's directory: %w", err)
		}
	}
	source := v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: path}}
	affinity := &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
		MatchExpressions: []v1.NodeSelectorRequirement{{Key: key, Operator: v1.NodeSelectorOpIn, Values: []string{value}}},
	}}}}
	if slices.Contains(claim.Spec.AccessModes, v1.ReadWriteMany) {
		// A shared file system (EFS, Filestore, NFS): every node reaches it.
		source, affinity = v1.PersistentVolumeSource{NFS: &v1.NFSVolumeSource{Server: "nfs.sim.invalid", Path: "/" + string(claim.UID)}}, nil
	}
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        pvName(claim),
			Annotations: map[string]string{volume.AnnDynamicallyProvisioned: Provisioner},
		},
		Spec: v1.PersistentVolumeSpec{
			Capacity:                      v1.ResourceList{v1.ResourceStorage: claim.Spec.Resources.Requests[v1.ResourceStorage]},
			AccessModes:                   claim.Spec.AccessModes,
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimDelete,
			StorageClassName:              c.class,
			ClaimRef: &v1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID,
			},
			PersistentVolumeSource: source,
			NodeAffinity:           affinity,
		},
	}
	created, err := c.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		created, err = c.client.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
	}
	if err != nil {
		return fmt.Errorf("creating volume: %w", err)
	}
	created.Status.Phase = v1.VolumeBound
	if _, err := c.client.CoreV1().PersistentVolumes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("volume status: %w", err)
	}
	return clientretry.RetryOnConflict(clientretry.DefaultRetry, func() error {
		cur, err := c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Get(ctx, claim.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil // deleted meanwhile
		}
		if err != nil {
			return err
		}
		if cur.UID != claim.UID {
			return nil
		}
		cur.Spec.VolumeName = pv.Name
		metav1.SetMetaDataAnnotation(&cur.ObjectMeta, volume.AnnBindCompleted, "yes")
		metav1.SetMetaDataAnnotation(&cur.ObjectMeta, volume.AnnBoundByController, "yes")
		metav1.SetMetaDataAnnotation(&cur.ObjectMeta, volume.AnnStorageProvisioner, Provisioner)
		updated, err := c.client.CoreV1().PersistentVolumeClaims(cur.Namespace).Update(ctx, cur, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		updated.Status = v1.PersistentVolumeClaimStatus{
			Phase: v1.ClaimBound, AccessModes: pv.Spec.AccessModes, Capacity: pv.Spec.Capacity,
		}
		_, err = c.client.CoreV1().PersistentVolumeClaims(cur.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
		return err
	})
}

// reschedule removes the claim's selected-node annotation.
func (c *Controller) reschedule(ctx context.Context, claim *v1.PersistentVolumeClaim) error {
	patch := []byte(`{"metadata":{"annotations":{"` + volume.AnnSelectedNode + `":null}}}`)
	_, err := c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Patch(ctx, claim.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	klog.FromContext(ctx).V(2).Info("Selected node is gone; rescheduling the claim", "claim", klog.KObj(claim), "node", claim.Annotations[volume.AnnSelectedNode])
	return err
}

// onClaimDelete reclaims the claim's volume (policy Delete), and creates
// the claim of a newer pod of the same name that had to wait for this one to
// go.
func (c *Controller) onClaimDelete(ctx context.Context, obj any) {
	claim, ok := obj.(*v1.PersistentVolumeClaim)
	if !ok {
		return
	}
	if pv := claim.Spec.VolumeName; pv != "" {
		c.writes.Do(ctx, "reclaim/"+pv, func(ctx context.Context) error {
			if err := c.dropFinalizers(ctx, pv, "", true); err != nil {
				return fmt.Errorf("removing volume finalizers: %w", err)
			}
			err := c.client.CoreV1().PersistentVolumes().Delete(ctx, pv, metav1.DeleteOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		})
	}
	pods, err := c.pods.Pods(claim.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, pod := range pods {
		for i := range pod.Spec.Volumes {
			vol := &pod.Spec.Volumes[i]
			if vol.Ephemeral != nil && ephemeral.VolumeClaimName(pod, vol) == claim.Name && !metav1.IsControlledBy(claim, pod) {
				c.onPodAdd(ctx, pod)
			}
		}
	}
}

// dropFinalizers removes the protection finalizers that the apiserver's
// StorageObjectInUseProtection admission adds and controller-manager would
// remove once the object is unused.
func (c *Controller) dropFinalizers(ctx context.Context, name, namespace string, isPV bool) error {
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	var err error
	if isPV {
		_, err = c.client.CoreV1().PersistentVolumes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	} else {
		_, err = c.client.CoreV1().PersistentVolumeClaims(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
