// Package storage plays the controllers a real cluster runs for ARC's work
// volume, so that the scheduler's volume plugins see what they would see in
// a cluster with a WaitForFirstConsumer StorageClass (the usual default:
// gp3 on EKS, standard-rwo on GKE, local-path):
//   - the ephemeral volume controller creates "<pod>-<volume>" PVCs for
//     generic ephemeral volumes, owned by the pod;
//   - a node-local dynamic provisioner plus the PV controller's binding: once
//     the scheduler selects a node (annotation volume.kubernetes.io/selected-node)
//     it creates a PV with node affinity to that node and binds the claim;
//   - the garbage collector, pvc-protection and the Delete reclaim policy:
//     a deleted pod's claims go, and their volumes with them.
package storage

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/component-helpers/storage/ephemeral"
	"k8s.io/component-helpers/storage/volume"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
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
}

// New returns a controller for the StorageClass class.
func New(client kubernetes.Interface, class string) *Controller {
	return &Controller{client: client, class: class}
}

// Start registers the handlers on factory's informers; the caller starts it.
func (c *Controller) Start(ctx context.Context, factory informers.SharedInformerFactory) error {
	logger := klog.FromContext(ctx)
	if _, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.onPodAdd(ctx, logger, obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			c.onPodDelete(ctx, logger, obj)
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
			c.onClaimDelete(ctx, logger, obj)
		},
	})
	return err
}

// onPodAdd is the ephemeral volume controller.
func (c *Controller) onPodAdd(ctx context.Context, logger klog.Logger, obj any) {
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
		if _, err := c.client.CoreV1().PersistentVolumeClaims(pod.Namespace).Create(ctx, claim, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			logger.Error(err, "Creating ephemeral volume claim", "pod", klog.KObj(pod), "claim", claim.Name)
		}
	}
}

// onPodDelete is the garbage collector for the pod's ephemeral claims.
func (c *Controller) onPodDelete(ctx context.Context, logger klog.Logger, obj any) {
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
		// pvc-protection: no other pod uses it once its runner is gone
		// (the hook deleted the workflow pod first).
		if err := c.dropFinalizers(ctx, name, pod.Namespace, false); err != nil {
			logger.Error(err, "Removing claim finalizers", "claim", klog.KRef(pod.Namespace, name))
		}
		err := c.client.CoreV1().PersistentVolumeClaims(pod.Namespace).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			logger.Error(err, "Deleting ephemeral volume claim", "claim", klog.KRef(pod.Namespace, name))
		}
	}
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
	if err := c.provision(ctx, claim, node); err != nil {
		logger.Error(err, "Provisioning", "claim", klog.KObj(claim), "node", node)
		return
	}
	logger.V(4).Info("Provisioned and bound", "claim", klog.KObj(claim), "node", node)
}

func pvName(claim *v1.PersistentVolumeClaim) string { return "pvc-" + string(claim.UID) }

func (c *Controller) provision(ctx context.Context, claim *v1.PersistentVolumeClaim, node string) error {
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
			PersistentVolumeSource: v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: "/var/lib/sim-local/" + string(claim.UID)}},
			NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{node}}},
			}}}},
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
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Get(ctx, claim.Name, metav1.GetOptions{})
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

// onClaimDelete reclaims the claim's volume (policy Delete).
func (c *Controller) onClaimDelete(ctx context.Context, logger klog.Logger, obj any) {
	claim, ok := obj.(*v1.PersistentVolumeClaim)
	if !ok || claim.Spec.VolumeName == "" {
		return
	}
	if err := c.dropFinalizers(ctx, claim.Spec.VolumeName, "", true); err != nil {
		logger.Error(err, "Removing volume finalizers", "volume", claim.Spec.VolumeName)
	}
	if err := c.client.CoreV1().PersistentVolumes().Delete(ctx, claim.Spec.VolumeName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		logger.Error(err, "Deleting volume", "volume", claim.Spec.VolumeName)
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
