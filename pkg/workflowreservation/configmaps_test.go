package workflowreservation

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/apis/config"
	"github.com/tandem-scheduler/tandem/pkg/fwk"
	"github.com/tandem-scheduler/tandem/pkg/sizing"
	"github.com/tandem-scheduler/tandem/pkg/sizing/sizingtest"
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
		return profileOf(pl).Sizer.ConfigMaps().(sizing.NamespacedConfigMaps).Listed("arc")
	})

	cached, err := profileOf(pl).Sizer.ConfigMaps().List(labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if len(cached) != 1 || cached[0].Namespace != "arc" {
		t.Errorf("ConfigMaps held: %v, want arc/hooks only", cached)
	}

	// A runner of a listed namespace is sized from its template.
	inArc := sizingtest.WithHookTemplate(runnerPod("r").Obj(), "hooks", "/home/runner/pod-templates/default.yaml")
	if status := runnerCycle(inArc)(ctx, klog.Background(), pl); !status.IsSuccess() {
		t.Fatalf("runner in arc: %v", status)
	}
	if r, ok := pl.store.Get(key("r")); !ok || r.Source != contract.SourceHookTemplate {
		t.Errorf("runner in arc: reservation %+v (found %v), want one sized from its hook template", r, ok)
	}

	// One elsewhere is not, and says why.
	elsewhere := sizingtest.WithHookTemplate(runnerPod("r2").Namespace("elsewhere").Obj(), "hooks", "/home/runner/pod-templates/default.yaml")
	status := runnerCycle(elsewhere)(ctx, klog.Background(), pl)
	if status.IsSuccess() || !strings.Contains(status.Message(), "ConfigMaps of namespace elsewhere are not watched: hookTemplateNamespaces lists arc") {
		t.Errorf("runner elsewhere: status %v, want one saying its namespace is not watched", status)
	}
	if events := strings.Join(drainEvents(h), "\n"); !strings.Contains(events, "Warning "+contract.ReasonInvalidWorkflowSize) {
		t.Errorf("events:\n%s\nwant an %s warning", events, contract.ReasonInvalidWorkflowSize)
	}

	// A runner waiting for its template is retried when it is created in a
	// listed namespace: the namespace's informer has the handler.
	waiting := sizingtest.WithHookTemplate(runnerPod("r3").Obj(), "later", "/home/runner/pod-templates/default.yaml")
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

// A namespace whose ConfigMaps are not listed (yet, or ever: RBAC) holds up
// only the runners whose template is there: they wait, with the reason,
// instead of being sized by the next source; other pods are scheduled.
func TestHookTemplateNamespaceNotListed(t *testing.T) {
	ctx := context.Background()
	args := defaultArgs()
	args.HookTemplateNamespaces = []string{"arc"}
	args.DefaultWorkflowRequests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m")}
	pl, h := newTestPlugin(t, args, true)
	cms := profileOf(pl).Sizer.ConfigMaps().(sizing.NamespacedConfigMaps)
	profileOf(pl).Sizer.SetConfigMaps(cms.WithSynced(map[string]cache.InformerSynced{"arc": func() bool { return false }}))

	runner := sizingtest.WithHookTemplate(runnerPod("r").Obj(), "hooks", "/home/runner/pod-templates/default.yaml")
	_, status := pl.PreFilter(ctx, framework.NewCycleState(), runner, nil)
	if status.Code() != fwk.Unschedulable || !strings.Contains(status.Message(), "ConfigMaps of namespace arc (hookTemplateNamespaces) are not listed yet") {
		t.Errorf("runner: status %v, want Unschedulable saying its namespace is not listed yet", status)
	}
	if got := feederOf(pl).Waiting().Matching(func(p *v1.Pod, _ time.Time) bool { return p.UID == runner.UID }); len(got) != 1 {
		t.Error("the runner does not wait for its namespace's ConfigMaps")
	}
	if got := heldReservations(pl); len(got) != 0 {
		t.Errorf("reservations %v: the runner was sized by another source", got)
	}
	if events := drainEvents(h); len(events) != 0 {
		t.Errorf("events %q: waiting for a listing is not a broken size source", events)
	}
	// A runner sized by its annotation and an ordinary pod go on.
	annotated := runnerPod("a").Annotation(contract.WorkflowRequestsAnnotation, "cpu=1").Obj()
	if status := runnerCycle(annotated)(ctx, klog.Background(), pl); !status.IsSuccess() {
		t.Errorf("annotated runner: %v", status)
	}
	other := st.MakePod().Namespace("arc").Name("p").UID("p").Obj()
	if _, status := pl.PreFilter(ctx, framework.NewCycleState(), other, nil); !status.IsSuccess() && status.Code() != fwk.Skip {
		t.Errorf("ordinary pod: %v", status)
	}
}

// notListedArgs watches the hook templates of namespace "arc" only, with a
// default size for runners whose template is not there.
func notListedArgs() *config.WorkflowReservationArgs {
	args := defaultArgs()
	args.HookTemplateNamespaces = []string{"arc"}
	args.DefaultWorkflowRequests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m")}
	return args
}

// templatedRunner is a runner of namespace whose hook template is in ConfigMap "hooks".
func templatedRunner(name, namespace string) *v1.Pod {
	return sizingtest.WithHookTemplate(runnerPod(name).Namespace(namespace).Obj(), "hooks", "/home/runner/pod-templates/default.yaml")
}

// A runner that waits for its namespace's listing is retried once the
// namespace is listed (here the list is refused, as RBAC would, then
// allowed), also when its template does not exist and another source sizes
// it.
func TestNotListedRunnerRetriedWhenListed(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(st.MakeNode().Name("n1").Obj())
	var refused atomic.Bool
	refused.Store(true)
	client.PrependReactor("list", "configmaps", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetNamespace() == "arc" && refused.Load() {
			return true, nil, apierrors.NewForbidden(v1.Resource("configmaps"), "", errors.New("not yet"))
		}
		return false, nil, nil
	})
	pl, h := newTestPluginOn(t, client, notListedArgs(), nil, "", true)

	runner := templatedRunner("r", "arc")
	if _, status := pl.PreFilter(ctx, framework.NewCycleState(), runner, nil); status.Code() != fwk.Unschedulable {
		t.Fatalf("runner: status %v, want Unschedulable (not listed yet)", status)
	}
	if got := h.activatedPods(); len(got) != 0 {
		t.Fatalf("activated %v before the namespace was listed", got)
	}
	refused.Store(false)
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return slices.Contains(h.activatedPods(), "arc/r"), nil
	}); err != nil {
		t.Fatalf("runner not activated once its namespace was listed: activated %v", h.activatedPods())
	}
	if got := runnerCycle(runner)(ctx, klog.Background(), pl); !got.IsSuccess() {
		t.Errorf("runner retried after the listing: %v, want sized by defaultWorkflowRequests", got)
	}
}

// A runner whose namespace is listed during its cycle, after the check,
// activates itself: the listing and its ConfigMap events may have passed it
// by. (Once listed, the feeder activates the runners waiting there:
// controllers.TestListedNamespaceActivatesItsRunners.)
func TestNotListedRunnerListedDuringCycle(t *testing.T) {
	ctx := context.Background()
	// The plugin watches "arc"; the runners here are in "arc2", whose
	// listing the test drives.
	pl, h := newTestPlugin(t, notListedArgs(), true)
	runner := templatedRunner("r", "arc2")
	cms := profileOf(pl).Sizer.ConfigMaps().(sizing.NamespacedConfigMaps)
	// Listed right after the runner waited.
	profileOf(pl).Sizer.SetConfigMaps(cms.WithSynced(map[string]cache.InformerSynced{"arc2": func() bool {
		return len(feederOf(pl).Waiting().Matching(func(p *v1.Pod, _ time.Time) bool { return p.UID == runner.UID })) > 0
	}}))

	if _, status := pl.PreFilter(ctx, framework.NewCycleState(), runner, nil); status.Code() != fwk.Unschedulable {
		t.Fatalf("runner: status %v, want Unschedulable (not listed yet)", status)
	}
	if got := h.activatedPods(); len(got) != 1 || got[0] != "arc2/r" {
		t.Errorf("activated %v after the namespace was listed during the runner's cycle, want [arc2/r]", got)
	}
}
