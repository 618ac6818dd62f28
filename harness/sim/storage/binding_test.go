package storage

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/component-helpers/storage/volume"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/volumebinding"
)

// The simulator's binder makes the in-tree binder's API update (the
// selected node on the claim), returns once the provisioner has bound the
// claim to a volume the node reaches, and fails as the in-tree binder does
// when the provisioner gives the node up.
func TestBinderBindPodVolumes(t *testing.T) {
	tests := map[string]struct {
		// provision is what the provisioner does with the claim it was
		// asked to provision on node-1.
		provision func(ctx context.Context, t *testing.T, client *fake.Clientset, claim *v1.PersistentVolumeClaim)
		wantErr   string
	}{
		"bound on the selected node": {provision: bindTo("pv-1", "node-1")},
		"the provisioner gives the node up": {
			provision: func(ctx context.Context, t *testing.T, client *fake.Clientset, claim *v1.PersistentVolumeClaim) {
				delete(claim.Annotations, volume.AnnSelectedNode)
				update(ctx, t, client, claim)
			},
			wantErr: `provisioning failed for PVC "work"`,
		},
		"bound to a volume the node does not reach": {
			provision: bindTo("pv-2", "node-2"),
			wantErr:   `pv "pv-2" node affinity doesn't match node "node-1"`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			claim := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "work", Namespace: "ns", ResourceVersion: "1"}}
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "runner", Namespace: "ns"}, Spec: v1.PodSpec{NodeName: "node-1"}}
			node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{v1.LabelHostname: "node-1"}}}
			client := fake.NewClientset(claim, pod, node)
			// As an apiserver does, every update advances the claim's
			// resourceVersion (the fake's tracker keeps the one it is given).
			version := 1
			client.PrependReactor("update", "persistentvolumeclaims", func(action k8stesting.Action) (bool, runtime.Object, error) {
				version++
				action.(k8stesting.UpdateAction).GetObject().(*v1.PersistentVolumeClaim).ResourceVersion = strconv.Itoa(version)
				return false, nil, nil
			})
			factory := informers.NewSharedInformerFactory(client, 0)
			core := factory.Core().V1()
			b := &binder{
				client: client, claims: core.PersistentVolumeClaims().Lister(), volumes: core.PersistentVolumes().Lister(),
				nodes: core.Nodes().Lister(), pods: core.Pods().Lister(), timeout: 20 * time.Second,
			}
			factory.Start(ctx.Done())
			factory.WaitForCacheSync(ctx.Done())

			// The scheduler's assumed claim carries the selected node.
			assumed := claim.DeepCopy()
			metav1.SetMetaDataAnnotation(&assumed.ObjectMeta, volume.AnnSelectedNode, "node-1")
			done := make(chan error, 1)
			go func() {
				done <- b.BindPodVolumes(ctx, pod, &volumebinding.PodVolumes{DynamicProvisions: []*volumebinding.DynamicProvision{{PVC: assumed}}})
			}()
			// The provisioner acts once it sees the selected node.
			seen := waitForClaim(ctx, t, client, func(c *v1.PersistentVolumeClaim) bool {
				return c.Annotations[volume.AnnSelectedNode] == "node-1"
			})
			select {
			case err := <-done:
				t.Fatalf("BindPodVolumes returned %v before the claim was provisioned", err)
			default:
			}
			tc.provision(ctx, t, client, seen)
			err := <-done
			if tc.wantErr == "" && err != nil {
				t.Fatalf("BindPodVolumes: %v", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("BindPodVolumes: %v, want an error with %q", err, tc.wantErr)
			}
		})
	}
}

// bindTo provisions a volume name on node and binds the claim to it, as the
// provisioner and the PV controller do.
func bindTo(name, node string) func(ctx context.Context, t *testing.T, client *fake.Clientset, claim *v1.PersistentVolumeClaim) {
	return func(ctx context.Context, t *testing.T, client *fake.Clientset, claim *v1.PersistentVolumeClaim) {
		pv := localVolume(name, node)
		if _, err := client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		claim.Spec.VolumeName = pv.Name
		metav1.SetMetaDataAnnotation(&claim.ObjectMeta, volume.AnnBindCompleted, "yes")
		update(ctx, t, client, claim)
	}
}

// waitForClaim returns the claim once ok holds for it.
func waitForClaim(ctx context.Context, t *testing.T, client *fake.Clientset, ok func(*v1.PersistentVolumeClaim) bool) *v1.PersistentVolumeClaim {
	t.Helper()
	w, err := client.CoreV1().PersistentVolumeClaims("ns").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if c, err := client.CoreV1().PersistentVolumeClaims("ns").Get(ctx, "work", metav1.GetOptions{}); err == nil && ok(c) {
		return c
	}
	for {
		select {
		case ev := <-w.ResultChan():
			if c, is := ev.Object.(*v1.PersistentVolumeClaim); is && ok(c) {
				return c
			}
		case <-ctx.Done():
			t.Fatal("the claim never got the selected node")
		}
	}
}

// update writes the claim, as the provisioner does.
func update(ctx context.Context, t *testing.T, client *fake.Clientset, claim *v1.PersistentVolumeClaim) {
	t.Helper()
	if _, err := client.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, claim, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// localVolume is a PV reachable from node only.
func localVolume(name, node string) *v1.PersistentVolume {
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeSpec{NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{
			NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{
				Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{node},
			}}}},
		}}},
	}
}
