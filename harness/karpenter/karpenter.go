// Package karpenter runs the real Karpenter, its KWOK cloud provider built by
// hack/build-karpenter.sh (`make karpenter`), against a local control plane:
// it installs Karpenter's CRDs, creates a KWOKNodeClass and a NodePool, and
// runs the controller out of cluster with a kubeconfig, its output in a log
// file.
//
// The KWOK cloud provider "launches" an instance by creating its Node object
// (capacity and allocatable set, phase Pending, no conditions) after the
// node class's registration delay. Nothing reports the node Ready: without a
// kubelet it stays Unknown and Karpenter never initializes it. Run
// harness/sim/kubelet with AdoptNodes(IsKarpenterNode) to play its kubelet.
package karpenter

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/tandem-scheduler/tandem/harness/controlplane"
)

// Name is the binary's name in the bin directory, and the base name of the
// process's log and PID files.
const Name = "karpenter-kwok"

// CRDDirName is the directory, in the bin directory, that holds Karpenter's
// CRDs (copied from the module cache by hack/build-karpenter.sh).
const CRDDirName = "karpenter-crds"

// Version is the Karpenter version hack/build-karpenter.sh builds.
const Version = "v1.13.0"

// Options configure Start.
type Options struct {
	// Kubeconfig is the kubeconfig file Karpenter uses (required).
	Kubeconfig string
	// Dir receives the log (karpenter-kwok.log) and PID files (required).
	Dir string
	// BinDir holds karpenter-kwok and karpenter-crds/. Empty means what
	// controlplane.ResolveBinDir finds ($TANDEM_BIN_DIR, else bin/).
	BinDir string
	// NodePool is the NodePool (and KWOKNodeClass) to create.
	NodePool NodePool
	// InstanceTypes are added to KWOK's catalogue of instance types; a
	// NodePool selects them by their instance-family label.
	InstanceTypes []InstanceType
	// BatchIdleDuration and BatchMaxDuration bound Karpenter's provisioning
	// batch window (its defaults are 1s and 10s: a lone pending pod waits 1s).
	// Zero keeps Karpenter's default.
	BatchIdleDuration, BatchMaxDuration time.Duration
	// LogLevel is debug, info (default) or error.
	LogLevel string
	// StartTimeout bounds the wait for Karpenter's /readyz; default 60s.
	StartTimeout time.Duration
	// StopGracePeriod is how long Stop waits after SIGTERM; default 10s.
	StopGracePeriod time.Duration
}

// Karpenter is a running Karpenter process.
type Karpenter struct {
	proc        *controlplane.Process
	grace       time.Duration
	healthPort  int
	metricsPort int
}

// BinaryPath returns the path of karpenter-kwok in binDir (resolved as in
// Options.BinDir), or an error that says how to build it.
func BinaryPath(binDir string) (string, error) {
	return controlplane.BinaryIn(binDir, Name, "run make karpenter")
}

// Start installs Karpenter's CRDs into the cluster cfg reaches and waits until
// they are Established, creates (or updates) the KWOKNodeClass and NodePool
// of opts.NodePool, starts karpenter-kwok with opts.Kubeconfig and waits
// until its /readyz is ok. ctx bounds the start only; the process runs until
// Stop, and dies with the caller.
func Start(ctx context.Context, cfg *rest.Config, opts Options) (*Karpenter, error) {
	if opts.Kubeconfig == "" || opts.Dir == "" {
		return nil, errors.New("karpenter: Options.Kubeconfig and Options.Dir are required")
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
	if err := InstallCRDs(ctx, cfg, filepath.Join(filepath.Dir(path), CRDDirName)); err != nil {
		return nil, err
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if err := ApplyNodePool(ctx, client, opts.NodePool); err != nil {
		return nil, err
	}
	k := &Karpenter{grace: opts.StopGracePeriod}
	if k.metricsPort, err = controlplane.FreePort(); err != nil {
		return nil, err
	}
	if k.healthPort, err = controlplane.FreePort(); err != nil {
		return nil, err
	}
	env := k.env(opts)
	if len(opts.InstanceTypes) > 0 {
		file, err := writeInstanceTypes(filepath.Dir(path), opts.Dir, opts.InstanceTypes)
		if err != nil {
			return nil, err
		}
		env = append(env, "INSTANCE_TYPES_FILE_PATH="+file)
	}
	if k.proc, err = controlplane.StartProcess(controlplane.ProcessSpec{
		Name: Name,
		Path: path,
		Dir:  opts.Dir,
		Env:  env,
	}); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", k.healthPort)
	if err := k.proc.WaitHTTP(ctx, http.DefaultClient, url, nil); err != nil {
		_ = k.proc.Stop(0)
		return nil, err
	}
	return k, nil
}

// env is Karpenter's configuration: it reads its options from the
// environment (each also has a flag).
func (k *Karpenter) env(opts Options) []string {
	env := []string{
		"KUBECONFIG=" + opts.Kubeconfig,
		// The chart sets it; v1.13.0's code does not read it.
		"SYSTEM_NAMESPACE=kube-system",
		// One replica out of cluster: no lease to wait for.
		"DISABLE_LEADER_ELECTION=true",
		// Karpenter binds these on every interface (":port"), not only loopback.
		"METRICS_PORT=" + strconv.Itoa(k.metricsPort),
		"HEALTH_PROBE_PORT=" + strconv.Itoa(k.healthPort),
		"LOG_LEVEL=" + cmpOr(opts.LogLevel, "info"),
	}
	if opts.BatchIdleDuration > 0 {
		env = append(env, "BATCH_IDLE_DURATION="+opts.BatchIdleDuration.String())
	}
	if opts.BatchMaxDuration > 0 {
		env = append(env, "BATCH_MAX_DURATION="+opts.BatchMaxDuration.String())
	}
	return env
}

// Process returns the karpenter-kwok process (PID, log path).
func (k *Karpenter) Process() *controlplane.Process { return k.proc }

// MetricsURL returns the URL of Karpenter's Prometheus metrics.
func (k *Karpenter) MetricsURL() string {
	return fmt.Sprintf("http://127.0.0.1:%d/metrics", k.metricsPort)
}

// Stop sends SIGTERM, waits for the process to exit (SIGKILL after the grace
// period) and returns an error if it had died before.
func (k *Karpenter) Stop() error {
	if !k.proc.Running() {
		return fmt.Errorf("karpenter had exited: %w (see %s)", k.proc.ExitError(), k.proc.LogPath)
	}
	return k.proc.Stop(k.grace)
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
