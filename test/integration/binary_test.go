package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/harness/controlplane"
	"github.com/tandem-scheduler/tandem/pkg/skew"
)

// The shipped binary with the shipped configuration: it reports a real
// version, decodes manifests/scheduler-config.yaml (typed args included),
// leads through its own lease and schedules a runner with a reservation.
func TestBinaryWithShippedConfig(t *testing.T) {
	bin, err := controlplane.ResolveBinDir("")
	if err != nil {
		t.Fatal(err)
	}
	binary := filepath.Join(bin, controlplane.SchedulerName)
	out, err := exec.Command(binary, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v\n%s (run `make build` first)", binary, err, out)
	}
	if want := "Kubernetes " + wantVersion(t); !strings.Contains(string(out), want) {
		t.Errorf("--version printed %q, want %q", out, want)
	}

	// No in-process scheduler: the binary is the only one serving tandem-scheduler.
	e := newEnvWithoutScheduler(t, map[string]string{"bin-n1": "6"})
	// Runners only in runnerNamespaces: this test's namespace, in place of
	// the shipped arc-runners.
	shipped := string(readFile(t, "manifests/scheduler-config.yaml"))
	const runnerNamespaces = "runnerNamespaces: [arc-runners]"
	if !strings.Contains(shipped, runnerNamespaces) {
		t.Fatalf("the shipped config does not set %q", runnerNamespaces)
	}
	config := filepath.Join(t.TempDir(), "scheduler-config.yaml")
	if err := os.WriteFile(config, []byte(strings.Replace(shipped, runnerNamespaces, "runnerNamespaces: ["+e.ns+"]", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	p, _, err := controlplane.StartScheduler(e.ctx, controlPlane, binary, config, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(10 * time.Second) })

	// It checked the apiserver against its version-skew policy and said so:
	// within it here, outside it under make test-compat's newest apiserver.
	server, err := e.client.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	wantLog := "kube-apiserver is within this build's version-skew policy"
	if skew.Check(wantVersion(t), server.GitVersion) != nil {
		wantLog = "Unsupported kube-apiserver version"
	}
	e.poll("the scheduler logs its version-skew check", func() (bool, error) {
		log, err := os.ReadFile(p.LogPath)
		return strings.Contains(string(log), wantLog), err
	})

	// The shipped config adds defaultStepRequests (cpu 500m) to every
	// workflow size, and its defaultWorkflowRequests (cpu 1) sizes a runner
	// that says nothing itself.
	e.runner("r1", "1", "1")
	e.bound("r1")
	if _, cpu, source := e.recordedReservation("r1"); cpu != "1500m" || source != string(contract.SourceAnnotation) {
		t.Errorf("reservation = cpu %s from %s, want cpu 1500m from annotation", cpu, source)
	}
	// The shipped profile binds runners through WorkflowReservation, which
	// records the reservation in the Binding itself. The apiserver tracks no
	// managed fields for a binding, while the fallback (a patch after
	// DefaultBinder bound the pod) would show up as tandem-scheduler's.
	for _, mf := range e.get("r1").ManagedFields {
		if strings.Contains(mf.FieldsV1.String(), contract.ReservationAnnotation) {
			t.Errorf("the reservation was patched after the bind (%s %s), not recorded by the binding", mf.Manager, mf.Operation)
		}
	}
	e.create("r2", podSpec{cpu: "1", runner: true})
	e.bound("r2")
	if _, cpu, source := e.recordedReservation("r2"); cpu != "1500m" || source != string(contract.SourceDefault) {
		t.Errorf("reservation = cpu %s from %s, want cpu 1500m from default", cpu, source)
	}

	lease, err := e.client.CoordinationV1().Leases("kube-system").Get(e.ctx, "tandem-scheduler", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("tandem's own leader-election lease: %v", err)
	}
	if holder := holderOf(lease); holder == "" {
		t.Error("lease tandem-scheduler has no holder")
	}
}

func holderOf(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// wantVersion is the Kubernetes version the scheduler binary under test is
// built against: $TANDEM_KUBE_VERSION if set (make test-versions sets it for
// each minor's bin/vX.Y), else go.mod's, which make build stamps. (A test
// binary records no module versions: debug.ReadBuildInfo lists no deps.)
func wantVersion(t *testing.T) string {
	t.Helper()
	if v := os.Getenv("TANDEM_KUBE_VERSION"); v != "" {
		return v
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "k8s.io/kubernetes").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}
