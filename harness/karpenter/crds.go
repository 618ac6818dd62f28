package karpenter

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// The resources of Karpenter's CRDs that this package and its callers use.
var (
	NodePoolGVR      = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodepools"}
	NodeClaimGVR     = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodeclaims"}
	KWOKNodeClassGVR = schema.GroupVersionResource{Group: "karpenter.kwok.sh", Version: "v1alpha1", Resource: "kwoknodeclasses"}
)

// InstallCRDs creates or updates every CRD in dir (*.yaml, one CRD a file, as
// hack/build-karpenter.sh copies them) and waits until each is Established.
func InstallCRDs(ctx context.Context, cfg *rest.Config, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no CRDs in %s (run make karpenter)", dir)
	}
	sort.Strings(files)
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	crds := client.Resource(crdGVR)
	var names []string
	for _, f := range files {
		crd, err := readObject(f)
		if err != nil {
			return err
		}
		if crd.GetKind() != "CustomResourceDefinition" {
			return fmt.Errorf("%s: kind %q, want CustomResourceDefinition", f, crd.GetKind())
		}
		if err := apply(ctx, crds, crd); err != nil {
			return fmt.Errorf("installing CRD %s from %s: %w", crd.GetName(), f, err)
		}
		names = append(names, crd.GetName())
	}
	for _, name := range names {
		if err := waitEstablished(ctx, crds, name); err != nil {
			return err
		}
	}
	return nil
}

func readObject(path string) (*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &obj.Object); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", path, err)
	}
	return obj, nil
}

// apply creates obj, or replaces the existing object's spec with obj's.
func apply(ctx context.Context, client dynamic.ResourceInterface, obj *unstructured.Unstructured) error {
	_, err := client.Create(ctx, obj, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	existing, err := client.Get(ctx, obj.GetName(), metav1.GetOptions{})
	if err != nil {
		return err
	}
	existing.Object["spec"] = obj.Object["spec"]
	_, err = client.Update(ctx, existing, metav1.UpdateOptions{})
	return err
}

func waitEstablished(ctx context.Context, crds dynamic.ResourceInterface, name string) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		crd, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conditions, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		for _, c := range conditions {
			m, _ := c.(map[string]any)
			if m["type"] == "Established" {
				last = fmt.Sprintf("Established=%v: %v", m["status"], m["message"])
				return m["status"] == "True", nil
			}
		}
		last = "no Established condition"
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for CRD %s to be Established (%s): %w", name, last, err)
	}
	return nil
}
