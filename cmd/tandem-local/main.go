// Command tandem-local runs a local control plane (etcd, kube-apiserver and
// optionally tandem-scheduler) from the binaries in bin/, detached, for
// manual work and make targets.
//
//	tandem-local up [--dir _output/local] [--scheduler-config FILE] [--real-nodes N] [-- SCHEDULER-ARGS...]
//	tandem-local down [--dir _output/local]
//
// up prints `export KUBECONFIG=...` on stdout (everything else goes to
// stderr), so `eval "$(tandem-local up)"` works.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tandem-scheduler/tandem/harness/controlplane"
	"github.com/tandem-scheduler/tandem/harness/realnode"
)

const (
	defaultDir = "_output/local"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "up":
		err = up(os.Args[2:])
	case "down":
		err = down(os.Args[2:])
	case "-h", "--help", "help":
		usage()
	default:
		fmt.Fprintf(os.Stderr, "unknown command %q\n", os.Args[1])
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "tandem-local %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintf(os.Stderr, `usage:
  tandem-local up [--dir DIR] [--bin-dir DIR] [--scheduler-config FILE] [--real-nodes N] [-- SCHEDULER-ARGS...]
  tandem-local down [--dir DIR]
`)
	os.Exit(2)
}

func up(args []string) error {
	fs := flag.NewFlagSet("up", flag.ExitOnError)
	dir := fs.String("dir", defaultDir, "directory for data, logs, PID files and the kubeconfig")
	binDir := fs.String("bin-dir", "", "directory with etcd, kube-apiserver and tandem-scheduler (default $"+controlplane.BinDirEnv+", else bin/ at the module root)")
	schedulerConfig := fs.String("scheduler-config", "", "if set, also start bin/tandem-scheduler with this KubeSchedulerConfiguration file")
	nodes := fs.Int("nodes", 3, "Ready Node objects (no kubelet) to create if missing, named local-node-N")
	nodeCPU := fs.String("node-cpu", "4", "cpu capacity of each node")
	nodeMemory := fs.String("node-memory", "16Gi", "memory capacity of each node")
	realNodes := fs.Int("real-nodes", 0, "real nodes to start, kl-1..kl-N: a kubelet and a containerd each on this machine (make kubelet; root), in DIR/nodes/")
	realCPU := fs.String("real-node-cpu", "750m", "allocatable cpu of each real node (all of them together within the machine's cpus)")
	realMemory := fs.String("real-node-memory", "2Gi", "allocatable memory of each real node")
	_ = fs.Parse(args)
	schedulerArgs := fs.Args() // after "--"

	absDir, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	resolvedBinDir, err := controlplane.ResolveBinDir(*binDir)
	if err != nil {
		return err
	}
	if files, _ := controlplane.PIDFiles(absDir); len(files) > 0 {
		for _, f := range files {
			if controlplane.PIDFileAlive(f) {
				return fmt.Errorf("%s is running (%s): run `tandem-local down --dir %s` first", filepath.Base(f), f, *dir)
			}
		}
	}

	// Check the scheduler's inputs before starting anything.
	var schedulerBin, schedulerConfigPath string
	if *schedulerConfig != "" {
		schedulerBin = filepath.Join(resolvedBinDir, controlplane.SchedulerName)
		if _, err := os.Stat(schedulerBin); err != nil {
			return fmt.Errorf("%s is missing: build the scheduler first (go build -o %s ./cmd/tandem-scheduler, with the ldflags from hack/lib/version.sh): %w", schedulerBin, schedulerBin, err)
		}
		if schedulerConfigPath, err = filepath.Abs(*schedulerConfig); err != nil {
			return err
		}
		if _, err := os.Stat(schedulerConfigPath); err != nil {
			return fmt.Errorf("scheduler config: %w", err)
		}
	} else if len(schedulerArgs) > 0 {
		return errors.New("scheduler arguments given without --scheduler-config")
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	started := time.Now()
	cp, err := controlplane.Start(ctx, controlplane.Options{Dir: absDir, BinDir: resolvedBinDir, Detach: true})
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "%-16s pid %-7d %s  log %s\n", controlplane.EtcdName, cp.Etcd().PID, cp.EtcdURL(), cp.Etcd().LogPath)
	fmt.Fprintf(os.Stderr, "%-16s pid %-7d %s  log %s\n", controlplane.APIServerName, cp.APIServer().PID, cp.URL(), cp.APIServer().LogPath)

	if schedulerBin != "" {
		p, url, err := controlplane.StartScheduler(ctx, cp, schedulerBin, schedulerConfigPath, true, schedulerArgs...)
		if err != nil {
			if _, stopErr := controlplane.StopDir(absDir, 5*time.Second); stopErr != nil {
				err = errors.Join(err, stopErr)
			}
			return err
		}
		fmt.Fprintf(os.Stderr, "%-16s pid %-7d %s  log %s\n", controlplane.SchedulerName, p.PID, url, p.LogPath)
	}
	fmt.Fprintf(os.Stderr, "up in %.1fs; stop with: go run ./cmd/tandem-local down --dir %s\n", time.Since(started).Seconds(), *dir)
	if err := ensureNodes(ctx, cp, *nodes, *nodeCPU, *nodeMemory); err != nil {
		return err
	}
	if err := startRealNodes(ctx, cp, absDir, resolvedBinDir, *realNodes, *realCPU, *realMemory); err != nil {
		if downErr := down([]string{"--dir", absDir}); downErr != nil {
			err = errors.Join(err, downErr)
		}
		return err
	}
	fmt.Printf("export KUBECONFIG=%s\n", cp.KubeconfigPath())
	return nil
}

// ensureNodes creates local-node-1..n unless they exist.
func ensureNodes(ctx context.Context, cp *controlplane.ControlPlane, n int, cpu, memory string) error {
	if n == 0 {
		return nil
	}
	capacity := v1.ResourceList{}
	for name, value := range map[v1.ResourceName]string{v1.ResourceCPU: cpu, v1.ResourceMemory: memory} {
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return fmt.Errorf("node %s: %w", name, err)
		}
		capacity[name] = q
	}
	client, err := kubernetes.NewForConfig(cp.RESTConfig())
	if err != nil {
		return err
	}
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("local-node-%d", i)
		if _, err := controlplane.CreateNode(ctx, client, name, capacity, nil); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating node %s: %w", name, err)
		}
	}
	fmt.Fprintf(os.Stderr, "%d node(s) local-node-N with cpu %s, memory %s (Node objects, no kubelet)\n", n, cpu, memory)
	return nil
}

// startRealNodes starts n real nodes kl-1..kl-n, detached, in dir/nodes/.
func startRealNodes(ctx context.Context, cp *controlplane.ControlPlane, dir, binDir string, n int, cpu, memory string) error {
	if n == 0 {
		return nil
	}
	cpuQ, err := resource.ParseQuantity(cpu)
	if err != nil {
		return fmt.Errorf("--real-node-cpu: %w", err)
	}
	memoryQ, err := resource.ParseQuantity(memory)
	if err != nil {
		return fmt.Errorf("--real-node-memory: %w", err)
	}
	client, err := kubernetes.NewForConfig(cp.RESTConfig())
	if err != nil {
		return err
	}
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("kl-%d", i)
		node, err := realnode.Start(ctx, client, realnode.Options{
			Name: name, Dir: filepath.Join(dir, "nodes", name), Kubeconfig: cp.KubeconfigPath(), BinDir: binDir,
			CPU: cpuQ, Memory: memoryQ, Detach: true,
		})
		if err != nil {
			return fmt.Errorf("starting real node %s: %w", name, err)
		}
		fmt.Fprintf(os.Stderr, "%-16s real node (kubelet + containerd), allocatable cpu %s, memory %s; logs in %s; its image: %s\n", name, cpu, memory, node.Dir(), realnode.ImageName)
	}
	return nil
}

func down(args []string) error {
	fs := flag.NewFlagSet("down", flag.ExitOnError)
	dir := fs.String("dir", defaultDir, "directory given to up")
	grace := fs.Duration("grace", controlplane.DefaultStopGracePeriod, "how long to wait after SIGTERM before SIGKILL")
	_ = fs.Parse(args)
	started := time.Now()
	// Real nodes first: a kubelet without its apiserver only retries. Their
	// Node objects go too (etcd's data stays): nothing would mark them
	// NotReady, and a later local-up would schedule onto them.
	nodeDirs, _ := filepath.Glob(filepath.Join(*dir, "nodes", "*"))
	var nodeErrs []error
	var client kubernetes.Interface
	if cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(*dir, "kubeconfig")); err == nil && len(nodeDirs) > 0 {
		client, _ = kubernetes.NewForConfig(cfg)
	}
	for _, d := range nodeDirs {
		if err := realnode.StopDir(d); err != nil {
			// Its files are what a retry needs, and it may still mount.
			nodeErrs = append(nodeErrs, err)
			continue
		}
		if client != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := realnode.DeleteNode(ctx, client, filepath.Base(d)); err != nil {
				nodeErrs = append(nodeErrs, fmt.Errorf("deleting node %s: %w", filepath.Base(d), err))
			}
			cancel()
		}
		if err := os.RemoveAll(d); err != nil {
			nodeErrs = append(nodeErrs, err)
		}
		fmt.Fprintf(os.Stderr, "stopped real node %s\n", filepath.Base(d))
	}
	stopped, err := controlplane.StopDir(*dir, *grace)
	err = errors.Join(append(nodeErrs, err)...)
	for _, name := range stopped {
		fmt.Fprintf(os.Stderr, "stopped %s\n", name)
	}
	if len(stopped) == 0 && err == nil {
		fmt.Fprintf(os.Stderr, "nothing was running in %s\n", *dir)
	} else {
		fmt.Fprintf(os.Stderr, "down in %.1fs\n", time.Since(started).Seconds())
	}
	return err
}
