package integration

import (
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/tandem-scheduler/tandem/contract"
)

// By default the chart watches and grants ConfigMaps only in the runner
// namespaces (hookTemplateNamespaces defaults to runnerNamespaces), and that
// is enough: a replica running as the rendered ServiceAccount sizes a
// runner there from its hook template and is denied nothing, while it can
// read no ConfigMap elsewhere.
func TestChartHookTemplateNamespacesRBAC(t *testing.T) {
	e := newEnvWithoutScheduler(t, map[string]string{"hns-n1": "4"})
	e.dedicateNode("hns-n1")
	// Installed into the test's namespace, with cluster-wide objects of
	// its own.
	const release = "tandem-hooks"
	objs := renderChart(t, "--release", release, "--namespace", e.ns, "--set", "runnerNamespaces={"+e.ns+"}")
	for _, o := range objs {
		rules, err := yaml.Marshal(o.Object["rules"])
		if err != nil {
			t.Fatal(err)
		}
		if o.GetKind() == "ClusterRole" && strings.Contains(string(rules), "configmaps") {
			t.Errorf("ClusterRole %s grants configmaps although runnerNamespaces is set", o.GetName())
		}
	}
	applyServerSide(t, e.ctx, objs, release)

	cm, err := e.client.CoreV1().ConfigMaps(e.ns).Get(e.ctx, release+"-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := e.client.AppsV1().Deployments(e.ns).Get(e.ctx, release, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sa := d.Spec.Template.Spec.ServiceAccountName
	user := "system:serviceaccount:" + e.ns + ":" + sa
	for ns, want := range map[string]bool{e.ns: true, "default": false, "": false} {
		review, err := e.client.AuthorizationV1().SubjectAccessReviews().Create(e.ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ns, Verb: "list", Resource: "configmaps",
			}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if review.Status.Allowed != want {
			t.Errorf("%s may list configmaps in namespace %q: %v, want %v", user, ns, review.Status.Allowed, want)
		}
	}

	e.ensureAuthenticationConfigMap()
	dir := t.TempDir()
	kubeconfig := serviceAccountKubeconfig(t, e, dir, e.ns, sa)
	r := startReplica(t, e.ctx, release, dir, d.Spec.Template.Spec.Containers[0].Args, []byte(cm.Data[configKey]), kubeconfig)

	e.exampleHookTemplateConfigMap()
	e.exampleRunner("k-runner", valuesKubernetes)
	e.bound("k-runner")
	if _, cpu, source := e.recordedReservation("k-runner"); cpu != "2500m" || source != string(contract.SourceHookTemplate) {
		t.Errorf("k-runner reservation = cpu %s from %s, want cpu 2500m from %s", cpu, source, contract.SourceHookTemplate)
	}
	if log := r.log(t); strings.Contains(log, "forbidden") {
		t.Errorf("%s was denied by the rendered RBAC:\n%s", r.name, grepLines(log, "forbidden"))
	}
}
