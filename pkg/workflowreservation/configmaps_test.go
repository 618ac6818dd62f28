package workflowreservation

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
)

func hookTemplateIn(namespace string) *v1.ConfigMap {
	return &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "hooks"},
		Data:       map[string]string{"default.yaml": "spec:\n  containers:\n  - name: $job\n    resources:\n      requests: {cpu: \"1\"}\n"},
	}
}

// With hookTemplateNamespaces, only those namespaces' ConfigMaps are held
// in memory; a runner elsewhere is told why its template is not read.
func TestHookTemplateNamespaces(t *testing.T) {
	ctx := context.Background()
	args := defaultArgs()
	args.HookTemplateNamespaces = []string{"arc"}
	pl, h := newTestPlugin(t, args, true, hookTemplateIn("arc"), hookTemplateIn("elsewhere"))
	eventually(t, "the namespace's ConfigMaps listed", func() bool {
		return pl.sizer.configMaps.(namespacedConfigMaps).listed("arc")
	})

	cached, err := pl.sizer.configMaps.List(labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if len(cached) != 1 || cached[0].Namespace != "arc" {
		t.Errorf("ConfigMaps held: %v, want arc/hooks only", cached)
	}

	// A runner of a listed namespace is sized from its template.
	inArc := withHookTemplate(runnerPod("r").Obj(), "hooks", "/home/runner/pod-templates/default.yaml")
	if status := runnerCycle(inArc)(ctx, klog.Background(), pl); !status.IsSuccess() {
		t.Fatalf("runner in arc: %v", status)
	}
	if r, ok := pl.store.get(key("r")); !ok || r.source != SourceHookTemplate {
		t.Errorf("runner in arc: reservation %+v (found %v), want one sized from its hook template", r, ok)
	}

	// One elsewhere is not, and says why.
	elsewhere := withHookTemplate(runnerPod("r2").Namespace("elsewhere").Obj(), "hooks", "/home/runner/pod-templates/default.yaml")
	status := runnerCycle(elsewhere)(ctx, klog.Background(), pl)
	if status.IsSuccess() || !strings.Contains(status.Message(), "ConfigMaps of namespace elsewhere are not watched: hookTemplateNamespaces lists arc") {
		t.Errorf("runner elsewhere: status %v, want one saying its namespace is not watched", status)
	}
	if events := strings.Join(drainEvents(h), "\n"); !strings.Contains(events, "Warning "+ReasonInvalidWorkflowSize) {
		t.Errorf("events:\n%s\nwant an %s warning", events, ReasonInvalidWorkflowSize)
	}

	// A runner waiting for its template is retried when it is created in a
	// listed namespace: the namespace's informer has the handler.
	waiting := withHookTemplate(runnerPod("r3").Obj(), "later", "/home/runner/pod-templates/default.yaml")
	if _, status := pl.PreFilter(ctx, framework.NewCycleState(), waiting, nil); status.IsSuccess() {
		t.Fatal("a runner whose template does not exist yet passed PreFilter")
	}
	later := hookTemplateIn("arc")
	later.Name = "later"
	if _, err := h.client.CoreV1().ConfigMaps("arc").Create(ctx, later, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the waiting runner is activated", func() bool {
		for _, name := range h.activatedPods() {
			if strings.HasSuffix(name, "r3") {
				return true
			}
		}
		return false
	})
}

// Profiles naming the same namespace share its informer.
func TestConfigMapInformerMadeOnce(t *testing.T) {
	sh := newShared(nil)
	made := 0
	create := func() cache.SharedIndexInformer {
		made++
		return cache.NewSharedIndexInformer(nil, &v1.ConfigMap{}, 0, nil)
	}
	first, existed := sh.configMapInformer("arc", create)
	second, existedAgain := sh.configMapInformer("arc", create)
	if made != 1 || existed || !existedAgain || first != second {
		t.Errorf("made %d informers (existed %v, then %v, same %v), want one, made by the first call", made, existed, existedAgain, first == second)
	}
}

// A namespace whose ConfigMaps are not listed (yet, or ever: RBAC) holds up
// only the runners whose template is there: they wait, with the reason,
// instead of being sized by the next source; other pods are scheduled.
func TestHookTemplateNamespaceNotListed(t *testing.T) {
	ctx := context.Background()
	args := defaultArgs()
	args.HookTemplateNamespaces = []string{"arc"}
	args.DefaultWorkflowRequests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m")}
	pl, h := newTestPlugin(t, args, true)
	cms := pl.sizer.configMaps.(namespacedConfigMaps)
	cms.synced = map[string]cache.InformerSynced{"arc": func() bool { return false }}
	pl.sizer.configMaps = cms

	runner := withHookTemplate(runnerPod("r").Obj(), "hooks", "/home/runner/pod-templates/default.yaml")
	_, status := pl.PreFilter(ctx, framework.NewCycleState(), runner, nil)
	if status.Code() != fwk.Unschedulable || !strings.Contains(status.Message(), "ConfigMaps of namespace arc (hookTemplateNamespaces) are not listed yet") {
		t.Errorf("runner: status %v, want Unschedulable saying its namespace is not listed yet", status)
	}
	if got := pl.sh.waiting.matching(func(p *v1.Pod, _ time.Time) bool { return p.UID == runner.UID }); len(got) != 1 {
		t.Error("the runner does not wait for its namespace's ConfigMaps")
	}
	if got := heldReservations(pl); len(got) != 0 {
		t.Errorf("reservations %v: the runner was sized by another source", got)
	}
	if events := drainEvents(h); len(events) != 0 {
		t.Errorf("events %q: waiting for a listing is not a broken size source", events)
	}
	// A runner sized by its annotation and an ordinary pod go on.
	annotated := runnerPod("a").Annotation(WorkflowRequestsAnnotation, "cpu=1").Obj()
	if status := runnerCycle(annotated)(ctx, klog.Background(), pl); !status.IsSuccess() {
		t.Errorf("annotated runner: %v", status)
	}
	other := st.MakePod().Namespace("arc").Name("p").UID("p").Obj()
	if _, status := pl.PreFilter(ctx, framework.NewCycleState(), other, nil); !status.IsSuccess() && status.Code() != fwk.Skip {
		t.Errorf("ordinary pod: %v", status)
	}
}
