package arc

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"

	"github.com/tandem-scheduler/tandem/contract"
)

// ARC keeps one EphemeralRunner per runner (actions.github.com/v1alpha1),
// named like its pod, which it owns. The listener writes the job a runner
// took into its status (HandleJobStarted: jobRequestId, jobId and the
// job's repository, workflow run and name); ARC deletes the EphemeralRunner
// when the runner is done, and its pod and the pods labelled
// runner-pod=<name> with it.

// EphemeralRunner is the object ARC's EphemeralRunnerSet controller creates
// for a runner of set.
func EphemeralRunner(set *ScaleSet, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "actions.github.com/v1alpha1",
		"kind":       "EphemeralRunner",
		"metadata": map[string]any{
			"name": name, "namespace": set.Namespace,
			"labels": map[string]any{
				LabelScaleSetName: set.Name, LabelScaleSetNamespace: set.Namespace,
			},
			"annotations": map[string]any{AnnotationRunnerGroupName: "default", AnnotationPatchID: "0"},
		},
		"spec": map[string]any{
			"githubConfigSecret":     set.Name + "-gha-rs-github-secret",
			"runnerScaleSetId":       int64(1),
			"ephemeralRunnerSetName": set.Name + "-" + set.Suffix,
		},
	}}
}

// JobStartedStatus is the status patch of HandleJobStarted for job id.
func JobStartedStatus(id int) map[string]any {
	return map[string]any{"status": map[string]any{
		"jobRequestId":      int64(id),
		"jobId":             strconv.Itoa(id),
		"jobRepositoryName": "sim/repo",
		"jobWorkflowRef":    "sim/repo/.github/workflows/ci.yaml@refs/heads/main",
		"workflowRunId":     int64(id),
		"jobDisplayName":    fmt.Sprintf("job %d", id),
	}}
}

func (e *Emulator) ephemeralRunnerClient(namespace string) dynamic.ResourceInterface {
	return e.ephemeralRunners.Resource(contract.EphemeralRunnerResource).Namespace(namespace)
}

// ensureEphemeralRunner creates r's EphemeralRunner unless it exists; it
// reports whether the runner's pod may be created (its owner is there).
func (e *Emulator) ensureEphemeralRunner(ctx context.Context, s *setState, r *runner) bool {
	if e.ephemeralRunners == nil || r.erUID != "" {
		return true
	}
	client := e.ephemeralRunnerClient(s.set.Namespace)
	created, err := client.Create(ctx, EphemeralRunner(s.set, r.name), metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// An earlier try went through; an older one of the same name that
		// is going is waited for.
		created, err = client.Get(ctx, r.name, metav1.GetOptions{})
		if err == nil && created.GetDeletionTimestamp() != nil {
			return false
		}
	}
	if err != nil {
		klog.FromContext(ctx).V(4).Info("Creating EphemeralRunner failed; retrying", "runner", klog.KRef(s.set.Namespace, r.name), "err", err)
		return false
	}
	r.erUID = created.GetUID()
	return true
}

// jobStarted is the listener's HandleJobStarted: the job r took goes into
// its EphemeralRunner's status (retried until it goes through).
func (e *Emulator) jobStarted(ctx context.Context, s *setState, r *runner) {
	if e.ephemeralRunners == nil || r.erUID == "" || r.job == nil {
		return
	}
	patch, err := json.Marshal(JobStartedStatus(r.job.job.ID))
	if err != nil {
		return
	}
	name, uid, client := r.name, r.erUID, e.ephemeralRunnerClient(s.set.Namespace)
	e.writes.Do(ctx, "erstatus/"+string(uid)+"/"+strconv.Itoa(r.job.job.ID), func(ctx context.Context) error {
		_, err := client.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}

// deleteEphemeralRunner deletes r's EphemeralRunner (retried).
func (e *Emulator) deleteEphemeralRunner(ctx context.Context, s *setState, r *runner) {
	if e.ephemeralRunners == nil || r.erUID == "" {
		return
	}
	name, uid, client := r.name, r.erUID, e.ephemeralRunnerClient(s.set.Namespace)
	e.writes.Do(ctx, "erdelete/"+string(uid), func(ctx context.Context) error {
		err := client.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return err
	})
}
