package controlplane_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tandem-scheduler/tandem/harness/controlplane"
)

// TestControlPlane starts etcd and kube-apiserver, uses them through the REST
// config and the kubeconfig, then stops them and checks nothing is left.
func TestControlPlane(t *testing.T) {
	started := time.Now()
	cp := startForTest(t)
	t.Logf("control plane ready in %v at %s (dir %s)", time.Since(started).Round(time.Millisecond), cp.URL(), cp.Dir())
	ctx := t.Context()

	for _, path := range []string{
		cp.Dir(), cp.KubeconfigPath(),
		cp.Etcd().LogPath, cp.Etcd().PIDFile,
		cp.APIServer().LogPath, cp.APIServer().PIDFile,
	} {
		if _, err := os.Stat(path); err != nil {
			t.Errorf("while running: %v", err)
		}
	}

	client := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	version, err := client.Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("ServerVersion: %v", err)
	}
	if want := wantGitVersion(t); version.GitVersion != want {
		t.Errorf("ServerVersion().GitVersion = %q, want %q", version.GitVersion, want)
	}

	// The kubeconfig file works on its own (CA data and token embedded).
	kubeconfig, err := clientcmd.BuildConfigFromFlags("", cp.KubeconfigPath())
	if err != nil {
		t.Fatalf("loading the kubeconfig: %v", err)
	}
	kubeconfigClient := kubernetes.NewForConfigOrDie(kubeconfig)
	for _, ns := range []string{metav1.NamespaceDefault, metav1.NamespaceSystem} {
		if _, err := kubeconfigClient.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
			t.Errorf("namespace %s after Start: %v", ns, err)
		}
	}

	for range 2 { // idempotent
		if err := controlplane.EnsureNamespace(ctx, client, "tandem-test"); err != nil {
			t.Fatalf("EnsureNamespace: %v", err)
		}
	}
	if _, err := client.CoreV1().Namespaces().Get(ctx, "tandem-test", metav1.GetOptions{}); err != nil {
		t.Errorf("namespace tandem-test: %v", err)
	}

	capacity := v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse("4"),
		v1.ResourceMemory: resource.MustParse("8Gi"),
	}
	if _, err := controlplane.CreateNode(ctx, client, "node-a", capacity, map[string]string{"pool": "a"}); err != nil {
		t.Fatalf("CreateNode: %v", err)
	}
	node, err := kubeconfigClient.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading node-a back: %v", err)
	}
	wantCapacity := v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse("4"),
		v1.ResourceMemory: resource.MustParse("8Gi"),
		v1.ResourcePods:   resource.MustParse("110"),
	}
	quantityCmp := cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })
	if diff := cmp.Diff(wantCapacity, node.Status.Capacity, quantityCmp); diff != "" {
		t.Errorf("node capacity (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff(wantCapacity, node.Status.Allocatable, quantityCmp); diff != "" {
		t.Errorf("node allocatable (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"pool": "a", v1.LabelHostname: "node-a"}, node.Labels); diff != "" {
		t.Errorf("node labels (-want,+got):\n%s", diff)
	}
	if !nodeReady(node) {
		t.Errorf("node-a is not Ready: %+v", node.Status.Conditions)
	}
	if len(node.Spec.Taints) > 0 {
		t.Errorf("node-a has taints %v; TaintNodesByCondition should be disabled", node.Spec.Taints)
	}

	pids := []int{cp.Etcd().PID, cp.APIServer().PID}
	pidFiles := []string{cp.Etcd().PIDFile, cp.APIServer().PIDFile}
	ports := cp.Ports()
	dir := cp.Dir()
	stopStarted := time.Now()
	if err := cp.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	t.Logf("stopped in %v", time.Since(stopStarted).Round(time.Millisecond))
	assertGone(t, pids, pidFiles, ports)
	if err := cp.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("a directory given in Options must be kept: %v", err)
	}
}

// TestDirRestartAndStopDir covers what tandem-local relies on: a fixed
// directory, stopping through PID files only, and a restart in the same
// directory that keeps etcd's data.
func TestDirRestartAndStopDir(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()

	cp, err := controlplane.Start(ctx, controlplane.Options{Dir: dir})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	client := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	if err := controlplane.EnsureNamespace(ctx, client, "kept"); err != nil {
		t.Fatalf("EnsureNamespace: %v", err)
	}

	if _, err := controlplane.Start(ctx, controlplane.Options{Dir: dir}); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Errorf("second Start in a running directory: got error %v, want one saying it is already running", err)
	}

	pids := []int{cp.Etcd().PID, cp.APIServer().PID}
	pidFiles := []string{cp.Etcd().PIDFile, cp.APIServer().PIDFile}
	stopStarted := time.Now()
	stopped, err := controlplane.StopDir(dir, 5*time.Second)
	t.Logf("StopDir took %v", time.Since(stopStarted).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("StopDir: %v", err)
	}
	if diff := cmp.Diff([]string{controlplane.APIServerName, controlplane.EtcdName}, stopped); diff != "" {
		t.Errorf("StopDir stopped (-want,+got):\n%s", diff)
	}
	// They are our children: let our Wait reap them before checking the PIDs.
	for _, p := range []*controlplane.Process{cp.Etcd(), cp.APIServer()} {
		select {
		case <-p.Done():
		case <-time.After(5 * time.Second):
			t.Errorf("%s not reaped after StopDir", p.Name)
		}
	}
	assertGone(t, pids, pidFiles, cp.Ports())

	cp2, err := controlplane.Start(ctx, controlplane.Options{Dir: dir})
	if err != nil {
		t.Fatalf("restart in the same directory: %v", err)
	}
	t.Cleanup(func() { _ = cp2.Stop() })
	client2 := kubernetes.NewForConfigOrDie(cp2.RESTConfig())
	if _, err := client2.CoreV1().Namespaces().Get(ctx, "kept", metav1.GetOptions{}); err != nil {
		t.Errorf("namespace created before the restart: %v", err)
	}
	if err := cp2.Stop(); err != nil {
		t.Errorf("Stop after restart: %v", err)
	}
}

func assertGone(t *testing.T, pids []int, pidFiles []string, ports []int) {
	t.Helper()
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process %d after stop: kill(pid, 0) = %v, want ESRCH", pid, err)
		}
	}
	for _, f := range pidFiles {
		if _, err := os.Stat(f); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("PID file %s after stop: %v, want it removed", f, err)
		}
	}
	for _, port := range ports {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Errorf("port %d after stop: %v", port, err)
			continue
		}
		l.Close()
	}
}

func nodeReady(node *v1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// apiServerVersionEnv names the kube-apiserver version the tests expect when
// TANDEM_BIN_DIR holds another version's binaries (hack/test-compat.sh sets
// both).
const apiServerVersionEnv = "TANDEM_APISERVER_VERSION"

// wantGitVersion returns $TANDEM_APISERVER_VERSION if set, else the
// k8s.io/kubernetes version required by go.mod, the one
// hack/build-control-plane.sh stamps into kube-apiserver.
func wantGitVersion(t *testing.T) string {
	t.Helper()
	if v := os.Getenv(apiServerVersionEnv); v != "" {
		return v
	}
	root, err := controlplane.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	goMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/kubernetes\s+(v\S+)`).FindSubmatch(goMod)
	if m == nil {
		t.Fatal("no k8s.io/kubernetes requirement in go.mod")
	}
	return string(m[1])
}

// startForTest starts a control plane in a new temporary directory and
// registers its Stop with t.Cleanup. It fails the test if the start fails.
// When the test has failed, Cleanup logs the tail of both logs and keeps the
// directory.
func startForTest(t testing.TB) *controlplane.ControlPlane {
	t.Helper()
	dir, err := os.MkdirTemp("", "tandem-controlplane-")
	if err != nil {
		t.Fatal(err)
	}
	cp, err := controlplane.Start(t.Context(), controlplane.Options{Dir: dir})
	if err != nil {
		t.Fatalf("starting the control plane (logs in %s): %v", dir, err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Errorf("stopping the control plane: %v", err)
		}
		if t.Failed() {
			for _, name := range []string{controlplane.EtcdName, controlplane.APIServerName} {
				log := filepath.Join(dir, name+".log")
				t.Logf("last lines of %s:\n%s", log, controlplane.LogTail(log, 30))
			}
			t.Logf("control plane directory kept: %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	return cp
}

// TestRestartAPIServer restarts kube-apiserver alone: etcd's data is kept,
// the same REST config works afterwards, and an informer started before the
// restart sees objects created after it.
func TestRestartAPIServer(t *testing.T) {
	cp := startForTest(t)
	ctx, cancel := context.WithCancel(t.Context())
	client := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	if err := controlplane.EnsureNamespace(ctx, client, "before"); err != nil {
		t.Fatalf("EnsureNamespace: %v", err)
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	lister := factory.Core().V1().Namespaces().Lister()
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	defer cancel() // before Shutdown, which waits for the informers to stop
	factory.WaitForCacheSync(ctx.Done())

	oldPID, url := cp.APIServer().PID, cp.URL()
	if err := cp.RestartAPIServer(ctx, 5*time.Second); err != nil {
		t.Fatalf("RestartAPIServer: %v", err)
	}
	if cp.APIServer().PID == oldPID || cp.URL() != url {
		t.Errorf("after the restart: pid %d (was %d), URL %s (was %s); want a new process on the same URL", cp.APIServer().PID, oldPID, cp.URL(), url)
	}
	if _, err := client.CoreV1().Namespaces().Get(ctx, "before", metav1.GetOptions{}); err != nil {
		t.Errorf("namespace created before the restart, through the old client: %v", err)
	}
	if err := controlplane.EnsureNamespace(ctx, client, "after"); err != nil {
		t.Fatalf("EnsureNamespace after the restart: %v", err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		_, err := lister.Get("after")
		return err == nil, nil
	})
	if err != nil {
		t.Errorf("the informer started before the restart did not see namespace %q: %v", "after", err)
	}
}
