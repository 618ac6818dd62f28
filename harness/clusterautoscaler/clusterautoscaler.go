// Package clusterautoscaler runs the real Cluster Autoscaler, built with only
// its KWOK cloud provider by hack/build-cluster-autoscaler.sh, against a local
// control plane: it writes the provider's two ConfigMaps (its configuration
// and one template Node per node group), and runs the autoscaler out of
// cluster with a kubeconfig, its output in a log file.
//
// Cluster Autoscaler is not a Go dependency of ours (the module proxy does
// not serve it): this package only starts the binary and writes the objects
// its documentation describes.
//
// The KWOK provider scales a node group up by creating Node objects copied
// from the group's template at once (a new name, providerID kwok:<name>, the
// template's labels, taints and status). Nothing behind them boots: the
// templates here carry the not-ready taint the kubelet registers a node with,
// so that nothing lands on a node before it "boots", and no hostname label
// (the provider would copy one hostname onto every node of a group). Register
// plays the kubelet's registration after the boot delay; harness/sim/kubelet's
// AdoptNodes(IsRegisteredNode) then reports the node Ready.
package clusterautoscaler

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/tandem-scheduler/tandem/harness/controlplane"
)

// Name is the binary's name in the bin directory, and the base name of the
// process's log and PID files.
const Name = "cluster-autoscaler"

// VersionFile is the file, in the bin directory, that holds the version
// hack/build-cluster-autoscaler.sh built.
const VersionFile = Name + ".version"

// Options configure Start.
type Options struct {
	// Kubeconfig is the kubeconfig file the autoscaler uses (required).
	Kubeconfig string
	// Dir receives the log (cluster-autoscaler.log) and PID files (required).
	Dir string
	// BinDir holds cluster-autoscaler. Empty means what
	// controlplane.ResolveBinDir finds ($TANDEM_BIN_DIR, else bin/).
	BinDir string
	// Namespace holds the KWOK provider's ConfigMaps (its POD_NAMESPACE);
	// default kube-system.
	Namespace string
	// NodeGroups are the node groups the provider may grow (required).
	NodeGroups []NodeGroup
	// Flags are the autoscaler's flags beyond those Start sets itself
	// (--cloud-provider, --kubeconfig, --namespace, --address,
	// --leader-elect): Flags.Args renders them.
	Flags Flags
	// StartTimeout bounds the wait for its /health-check; default 60s.
	StartTimeout time.Duration
	// StopGracePeriod is how long Stop waits after SIGTERM; default 10s.
	StopGracePeriod time.Duration
}

// Flags are the Cluster Autoscaler flags a platform team sets. A zero field
// keeps the autoscaler's default. docs/autoscaling.md says why each matters
// next to tandem.
type Flags struct {
	// ScanInterval is --scan-interval (default 10s).
	ScanInterval time.Duration
	// Expander is --expander (default least-waste).
	Expander string
	// AllowedSchedulerNames is --allowed-scheduler-names: when set, only
	// pending pods of these schedulers trigger a scale-up.
	AllowedSchedulerNames []string
	// BypassedSchedulerNames is --bypassed-scheduler-names: pods of these
	// schedulers are acted on without waiting for them to be marked
	// Unschedulable (a subset of AllowedSchedulerNames when that is set).
	BypassedSchedulerNames []string
	// ScaleDownUnneededTime is --scale-down-unneeded-time (default 10m).
	ScaleDownUnneededTime time.Duration
	// ScaleDownDelayAfterAdd is --scale-down-delay-after-add (default 10m).
	ScaleDownDelayAfterAdd time.Duration
	// ScaleDownDelayAfterDelete is --scale-down-delay-after-delete
	// (default: the scan interval).
	ScaleDownDelayAfterDelete time.Duration
	// ScaleDownUtilizationThreshold is --scale-down-utilization-threshold
	// (default 0.5); 0 keeps the default.
	ScaleDownUtilizationThreshold float64
	// UnremovableNodeRecheckTimeout is --unremovable-node-recheck-timeout
	// (default 5m): a node found unremovable is not looked at again for so
	// long.
	UnremovableNodeRecheckTimeout time.Duration
	// NodeDeleteDelayAfterTaint is --node-delete-delay-after-taint (default 5s).
	NodeDeleteDelayAfterTaint time.Duration
	// MaxNodeProvisionTime is --max-node-provision-time (default 15m).
	MaxNodeProvisionTime time.Duration
	// Verbosity is --v (default 1).
	Verbosity int
	// Extra are further flags, appended as they are.
	Extra []string
}

// Args renders the flags that are set, in a stable order.
func (f Flags) Args() []string {
	var args []string
	dur := func(name string, d time.Duration) {
		if d > 0 {
			args = append(args, "--"+name+"="+d.String())
		}
	}
	dur("scan-interval", f.ScanInterval)
	if f.Expander != "" {
		args = append(args, "--expander="+f.Expander)
	}
	if len(f.AllowedSchedulerNames) > 0 {
		args = append(args, "--allowed-scheduler-names="+strings.Join(f.AllowedSchedulerNames, ","))
	}
	if len(f.BypassedSchedulerNames) > 0 {
		args = append(args, "--bypassed-scheduler-names="+strings.Join(f.BypassedSchedulerNames, ","))
	}
	dur("scale-down-unneeded-time", f.ScaleDownUnneededTime)
	dur("scale-down-delay-after-add", f.ScaleDownDelayAfterAdd)
	dur("scale-down-delay-after-delete", f.ScaleDownDelayAfterDelete)
	if f.ScaleDownUtilizationThreshold > 0 {
		args = append(args, "--scale-down-utilization-threshold="+strconv.FormatFloat(f.ScaleDownUtilizationThreshold, 'f', -1, 64))
	}
	dur("unremovable-node-recheck-timeout", f.UnremovableNodeRecheckTimeout)
	dur("node-delete-delay-after-taint", f.NodeDeleteDelayAfterTaint)
	dur("max-node-provision-time", f.MaxNodeProvisionTime)
	args = append(args, "--v="+strconv.Itoa(max(f.Verbosity, 1)))
	return append(args, f.Extra...)
}

// ClusterAutoscaler is a running Cluster Autoscaler process.
type ClusterAutoscaler struct {
	proc  *controlplane.Process
	grace time.Duration
	port  int
	args  []string
}

// BinaryPath returns the path of cluster-autoscaler in binDir (resolved as in
// Options.BinDir), or an error that says how to build it.
func BinaryPath(binDir string) (string, error) {
	return controlplane.BinaryIn(binDir, Name, "run make cluster-autoscaler CA_SRC=DIR with a checkout of kubernetes/autoscaler")
}

// Version returns the version recorded next to the binary in binDir, or ""
// when the build wrote none.
func Version(binDir string) string {
	path, err := BinaryPath(binDir)
	if err != nil {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(path), VersionFile))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// Start writes the KWOK provider's ConfigMaps through client, starts
// cluster-autoscaler with opts.Kubeconfig and waits until its /health-check
// answers. ctx bounds the start only; the process runs until Stop, and dies
// with the caller.
func Start(ctx context.Context, client kubernetes.Interface, opts Options) (*ClusterAutoscaler, error) {
	if opts.Kubeconfig == "" || opts.Dir == "" || len(opts.NodeGroups) == 0 {
		return nil, errors.New("clusterautoscaler: Options.Kubeconfig, Options.Dir and Options.NodeGroups are required")
	}
	if opts.Namespace == "" {
		opts.Namespace = "kube-system"
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 60 * time.Second
	}
	if opts.StopGracePeriod == 0 {
		opts.StopGracePeriod = 10 * time.Second
	}
	path, err := BinaryPath(opts.BinDir)
	if err != nil {
		return nil, err
	}
	if err := ApplyProviderConfig(ctx, client, opts.Namespace, opts.NodeGroups); err != nil {
		return nil, err
	}
	c := &ClusterAutoscaler{grace: opts.StopGracePeriod}
	if c.port, err = controlplane.FreePort(); err != nil {
		return nil, err
	}
	c.args = append([]string{
		"--cloud-provider=kwok",
		"--kubeconfig=" + opts.Kubeconfig,
		"--namespace=" + opts.Namespace,
		"--address=127.0.0.1:" + strconv.Itoa(c.port),
		// One replica out of cluster: no lease to wait for.
		"--leader-elect=false",
	}, opts.Flags.Args()...)
	if c.proc, err = controlplane.StartProcess(controlplane.ProcessSpec{
		Name: Name,
		Path: path,
		Args: c.args,
		Dir:  opts.Dir,
		Env: []string{
			// The KWOK provider builds its own client: from KUBECONFIG
			// out of cluster (local mode), else from the pod's account.
			"KWOK_PROVIDER_MODE=local",
			"KUBECONFIG=" + opts.Kubeconfig,
			"POD_NAMESPACE=" + opts.Namespace,
		},
	}); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	if err := c.proc.WaitHTTP(ctx, http.DefaultClient, c.url("/health-check"), nil); err != nil {
		_ = c.proc.Stop(0)
		return nil, fmt.Errorf("%w (log: %s)", err, controlplane.LogTail(c.proc.LogPath, 20))
	}
	return c, nil
}

func (c *ClusterAutoscaler) url(path string) string {
	return fmt.Sprintf("http://127.0.0.1:%d%s", c.port, path)
}

// Args returns the command line the process was started with (without the
// executable).
func (c *ClusterAutoscaler) Args() []string { return c.args }

// Process returns the cluster-autoscaler process (PID, log path).
func (c *ClusterAutoscaler) Process() *controlplane.Process { return c.proc }

// MetricsURL returns the URL of its Prometheus metrics.
func (c *ClusterAutoscaler) MetricsURL() string { return c.url("/metrics") }

// Stop sends SIGTERM, waits for the process to exit (SIGKILL after the grace
// period) and returns an error if it had died before.
func (c *ClusterAutoscaler) Stop() error {
	if !c.proc.Running() {
		return fmt.Errorf("cluster-autoscaler had exited: %w (see %s)", c.proc.ExitError(), c.proc.LogPath)
	}
	return c.proc.Stop(c.grace)
}
