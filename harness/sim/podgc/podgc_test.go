package podgc

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
)

type manualClock struct{ now time.Duration }

func (c *manualClock) Now() time.Duration                 { return c.now }
func (c *manualClock) Real(d time.Duration) time.Duration { return d }

func TestCollector(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	orphan := st.MakePod().Namespace("ns").Name("orphan").UID("orphan").Node("gone").Phase(v1.PodRunning).Obj()
	kept := st.MakePod().Namespace("ns").Name("kept").UID("kept").Node("n1").Phase(v1.PodRunning).Obj()
	pending := st.MakePod().Namespace("ns").Name("pending").UID("pending").Obj()
	client := fake.NewClientset(orphan, kept, pending, st.MakeNode().Name("n1").Obj())
	factory := informers.NewSharedInformerFactory(client, 0)
	clk := &manualClock{}
	c := New(client, clk)
	c.pods, c.nodes = factory.Core().V1().Pods().Lister(), factory.Core().V1().Nodes().Lister()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())

	c.gc(ctx) // the node is first seen missing
	clk.now = Quarantine - time.Second
	c.gc(ctx)
	if _, err := client.CoreV1().Pods("ns").Get(ctx, "orphan", metav1.GetOptions{}); err != nil {
		t.Fatalf("orphan deleted before the quarantine ended: %v", err)
	}
	clk.now = Quarantine
	c.gc(ctx)

	var patch string
	for _, a := range client.Actions() {
		if p, ok := a.(clienttesting.PatchAction); ok && p.GetName() == "orphan" && p.GetSubresource() == "status" {
			patch = string(p.GetPatch())
		}
	}
	for _, want := range []string{`"phase":"Failed"`, `"type":"DisruptionTarget"`, `"reason":"DeletionByPodGC"`} {
		if !strings.Contains(patch, want) {
			t.Errorf("orphan's status patch %s does not contain %s", patch, want)
		}
	}
	if _, err := client.CoreV1().Pods("ns").Get(ctx, "orphan", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("orphan after the quarantine: %v, want it deleted", err)
	}
	for _, name := range []string{"kept", "pending"} {
		if _, err := client.CoreV1().Pods("ns").Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("pod %s: %v, want it kept", name, err)
		}
	}
}
