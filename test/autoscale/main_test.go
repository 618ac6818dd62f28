// Package autoscale runs the real Karpenter (its KWOK cloud provider, built
// into bin/ by `make karpenter`) against a real etcd and kube-apiserver, with
// the simulator's kubelet emulator playing the kubelet of the nodes Karpenter
// launches, and asserts on API objects. `make test-autoscale` builds what it
// needs and runs it.
package autoscale

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/tandem-scheduler/tandem/harness/clusterautoscaler"
	"github.com/tandem-scheduler/tandem/harness/controlplane"
	"github.com/tandem-scheduler/tandem/harness/karpenter"
	"github.com/tandem-scheduler/tandem/harness/sim/kubelet"
)

// The cluster shared by the package's tests (they run one at a time).
var (
	restConfig *rest.Config
	client     kubernetes.Interface
	dyn        dynamic.Interface
	kubelets   *kubelet.Kubelet
	karp       *karpenter.Karpenter
)

// registrationDelay is the KWOKNodeClass's: the modelled boot time.
const registrationDelay = 3 * time.Second

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if _, err := karpenter.BinaryPath(""); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	startCtx, startCancel := context.WithTimeout(ctx, 2*time.Minute)
	defer startCancel()
	cp, err := controlplane.Start(startCtx, controlplane.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the control plane (run `make control-plane` first):", err)
		return 1
	}
	defer cp.Stop()
	restConfig = cp.RESTConfig()
	if client, err = kubernetes.NewForConfig(restConfig); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if dyn, err = dynamic.NewForConfig(restConfig); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}

	kubelets = kubelet.New(client)
	kubelets.AdoptNodes(func(n *v1.Node) bool {
		return karpenter.IsKarpenterNode(n) || clusterautoscaler.IsRegisteredNode(n)
	}, time.Second)
	factory := informers.NewSharedInformerFactory(client, 0)
	if err := kubelets.Start(ctx, factory); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	factory.Start(ctx.Done())
	defer func() {
		cancel() // Shutdown waits for the informers, which stop with ctx
		factory.Shutdown()
	}()
	factory.WaitForCacheSync(startCtx.Done())

	// Karpenter's log outlives the run (the control plane's directory does
	// not): _output/test-autoscale/karpenter-kwok.log.
	logDir := filepath.Join(cp.Dir(), "karpenter")
	if root, err := controlplane.ModuleRoot(); err == nil {
		logDir = filepath.Join(root, "_output", "test-autoscale")
	}
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	_ = os.Remove(filepath.Join(logDir, karpenter.Name+".log"))
	karp, err = karpenter.Start(startCtx, restConfig, karpenter.Options{
		Kubeconfig: cp.KubeconfigPath(),
		Dir:        logDir,
		NodePool: karpenter.NodePool{
			InstanceCPUs:      []int{2, 4, 8},
			RegistrationDelay: registrationDelay,
		},
		InstanceTypes:     []karpenter.InstanceType{gpuInstanceType},
		BatchIdleDuration: 500 * time.Millisecond,
		BatchMaxDuration:  3 * time.Second,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting karpenter:", err)
		return 1
	}
	code := m.Run()
	if err := karp.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	fmt.Fprintln(os.Stderr, "karpenter's log:", karp.Process().LogPath)
	return code
}
