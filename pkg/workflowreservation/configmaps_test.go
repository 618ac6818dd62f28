package workflowreservation

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/framework"
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
	eventually(t, "the namespace's informer synced", pl.synced)

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
