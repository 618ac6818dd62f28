package webhook

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// WebhookName names the webhook inside its configuration.
const WebhookName = "release-placeholder.tandem.dev"

// TimeoutSeconds is the configuration's timeoutSeconds: the apiserver stops
// waiting for the webhook after it and applies the failurePolicy.
const TimeoutSeconds = 5

// PinnedCondition is the configuration's match condition: only a pod pinned
// with spec.nodeName bypasses the schedulers, and only such a pod is sent.
const PinnedCondition = "has(object.spec.nodeName) && object.spec.nodeName != ''"

// Configuration is the ValidatingWebhookConfiguration that sends the
// creation of pods labelled runnerPodLabel and pinned with nodeName, in the
// runner namespaces (every namespace if none), to the webhook at
// clientConfig (the chart renders the same). Pods elsewhere never reach it:
// nobody outside the runner namespaces can make it work. Its failurePolicy is
// Ignore: with Fail, a webhook outage would fail the creation of every
// job's pod; with Ignore only pinned pods whose node is full are rejected
// (by the kubelet), until tandem's fallback deletes the placeholder.
func Configuration(name string, clientConfig admissionregistrationv1.WebhookClientConfig, runnerPodLabel string, runnerNamespaces []string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	if runnerPodLabel == "" {
		runnerPodLabel = DefaultRunnerPodLabel
	}
	namespaces := &metav1.LabelSelector{}
	if len(runnerNamespaces) > 0 {
		namespaces.MatchExpressions = []metav1.LabelSelectorRequirement{{
			Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: runnerNamespaces,
		}}
	}
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         WebhookName,
			ClientConfig: clientConfig,
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{
					APIGroups:   []string{""},
					APIVersions: []string{"v1"},
					Resources:   []string{"pods"},
					Scope:       ptr.To(admissionregistrationv1.NamespacedScope),
				},
			}},
			NamespaceSelector: namespaces,
			ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: runnerPodLabel, Operator: metav1.LabelSelectorOpExists,
			}}},
			MatchConditions:         []admissionregistrationv1.MatchCondition{{Name: "pinned-to-a-node", Expression: PinnedCondition}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNoneOnDryRun),
			TimeoutSeconds:          ptr.To[int32](TimeoutSeconds),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
}
