// Package realnode runs real Kubernetes nodes on this machine: per node one
// containerd (its own socket, root, state and CNI network) and one kubelet
// built from k8s.io/kubernetes (its own root directory, ports, cgroup root
// and node name), registered with a local kube-apiserver. Pods run as real
// containers under runc, and the kubelet admits or rejects them with its own
// admission (OutOfcpu, OutOfmemory, ...): where the simulator's kubelet
// (harness/sim/kubelet) is an imitation, this is the node itself.
//
// Nothing leaves the machine: every container runs the one image a node
// imports at start (ImageName, tandem-pause from bin/, with imagePullPolicy
// Never), which is also the CRI sandbox image, so containerd never asks a
// registry; pod networking is a bridge of the node's own with addresses of
// its own /24 and no route out (no gateway, no masquerading).
//
// What the machine needs (hack/build-kubelet.sh installs and builds it):
// containerd, runc, ctr, the CNI plugins (bridge, host-local, loopback) and
// bin/kubelet, bin/tandem-pause-image.tar; root. What was needed to make a
// kubelet run here, and why, is in the comments of kubeletConfig and
// containerdConfig.
package realnode

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/tandem-scheduler/tandem/harness/controlplane"
)

// ImageName is the image every container of a real node runs: tandem-pause
// (cmd/tandem-pause), imported from bin/ under this name. It waits until it
// is sent SIGTERM and then exits 0. Pods for a real node name it with
// imagePullPolicy Never (Localize).
const ImageName = imageRepository + ":" + imageTag

// imageRepository and imageTag make ImageName: the archive's index names the
// image by its tag (hack/build-kubelet.sh builds it with --ref local).
const (
	imageRepository = "localhost/tandem-pause"
	imageTag        = "local"
)

// ImageArchive is the OCI archive of ImageName in the bin directory, built by
// hack/build-kubelet.sh.
const ImageArchive = "tandem-pause-image.tar"

// evictionMemory is the kubelet's evictionHard memory.available: allocatable
// memory is capacity minus systemReserved minus this.
var evictionMemory = resource.MustParse("100Mi")

// Options configure one node.
type Options struct {
	// Name is the node's name (the kubelet's --hostname-override).
	Name string
	// Index (1 to 250) numbers the node among those running on the machine
	// at once: its cgroup root is /tandem-node<Index>, its pod addresses
	// 10.244.<Index>.0/24 on bridge tandem<Index>. Start claims it for the
	// node machine-wide (ClaimDir); zero claims the first free one.
	Index int
	// Dir holds the node's configuration, logs, containerd's root and state
	// and the kubelet's root. Keep it short: containerd's sockets live in it
	// (a unix socket path has at most 107 bytes).
	Dir string
	// Kubeconfig is the kubelet's credentials for the apiserver.
	Kubeconfig string
	// BinDir holds kubelet and ImageArchive (default: as
	// controlplane.ResolveBinDir).
	BinDir string
	// CPU and Memory are the node's allocatable: the kubelet reserves the
	// rest of the machine (systemReserved), so a node can be made smaller
	// than the machine but not larger. Pods is its pod capacity (maxPods).
	CPU, Memory resource.Quantity
	Pods        int
	// Labels and Taints are registered with the node.
	Labels map[string]string
	Taints []v1.Taint
	// Detach starts containerd and the kubelet in their own sessions so that
	// they outlive the caller (tandem-local).
	Detach bool
}

// Node is a running containerd and kubelet.
type Node struct {
	opts                Options
	containerd, kubelet *controlplane.Process
	ctr                 string
	// claimed is set while the node holds its index's claim (release).
	claimed bool
}

// Start starts the node's containerd, imports ImageName, starts its kubelet
// and waits until the Node is Ready with the allocatable asked for. On error
// whatever started is stopped.
func Start(ctx context.Context, client kubernetes.Interface, opts Options) (*Node, error) {
	if opts.Index < 0 || opts.Index > maxIndex {
		return nil, fmt.Errorf("node %s: index %d is not in [1, %d]", opts.Name, opts.Index, maxIndex)
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("node %s: a real node needs root (containerd, runc, cgroups, mounts)", opts.Name)
	}
	if opts.Pods == 0 {
		opts.Pods = 110
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	opts.Dir = dir
	binDir, err := controlplane.ResolveBinDir(opts.BinDir)
	if err != nil {
		return nil, err
	}
	opts.BinDir = binDir
	kubelet, err := controlplane.BinaryIn(binDir, "kubelet", "make kubelet")
	if err != nil {
		return nil, err
	}
	archive := filepath.Join(binDir, ImageArchive)
	if _, err := os.Stat(archive); err != nil {
		return nil, fmt.Errorf("%s is missing: run make kubelet: %w", archive, err)
	}
	n := &Node{opts: opts}
	if n.ctr, err = exec.LookPath("ctr"); err != nil {
		return nil, fmt.Errorf("ctr (containerd's client) is not installed: run make kubelet: %w", err)
	}
	containerd, err := exec.LookPath("containerd")
	if err != nil {
		return nil, fmt.Errorf("containerd is not installed: run make kubelet: %w", err)
	}
	if len(n.socket()) > 100 {
		return nil, fmt.Errorf("node %s: directory %s is too long for containerd's socket", opts.Name, opts.Dir)
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	// The index names the node's cgroups and bridge, which Stop removes
	// with everything in them: claim it machine-wide first.
	if n.opts.Index, err = claim(opts.Dir, opts.Index); err != nil {
		return nil, fmt.Errorf("node %s: %w", opts.Name, err)
	}
	n.claimed = true
	if pids := n.cgroupPIDs(); len(pids) > 0 {
		n.release()
		return nil, fmt.Errorf("node %s: %d processes run in cgroup %s, which no node claims: stop them first", opts.Name, len(pids), n.cgroupRoot())
	}
	state, err := json.Marshal(Options{Name: opts.Name, Index: n.opts.Index})
	if err == nil {
		err = os.WriteFile(n.path(stateFile), state, 0o644)
	}
	for _, d := range []string{n.path("containerd-root"), n.path("containerd-state"), n.path("cni"), n.path("kubelet"), n.path("pod-logs")} {
		if err == nil {
			err = os.MkdirAll(d, 0o755)
		}
	}
	if err == nil {
		err = n.writeContainerdConfig()
	}
	if err != nil {
		n.release()
		return nil, err
	}
	if n.containerd, err = controlplane.StartProcess(controlplane.ProcessSpec{
		Name: "containerd", Path: containerd, Args: []string{"--config", n.path("containerd.toml")},
		// Every image a node runs is imported (ImageName): a pull of any
		// other goes to a proxy that is not there and fails at once, so
		// no pod of a real node reaches a registry.
		Env: []string{"HTTP_PROXY=" + noProxy, "HTTPS_PROXY=" + noProxy, "NO_PROXY=", "http_proxy=" + noProxy, "https_proxy=" + noProxy, "no_proxy="},
		Dir: opts.Dir, Detach: opts.Detach,
	}); err != nil {
		n.release()
		return nil, err
	}
	if err := n.importImage(ctx, archive); err != nil {
		n.Stop()
		return nil, err
	}
	if err := n.makeCgroups(); err != nil {
		n.Stop()
		return nil, err
	}
	config, err := n.kubeletConfig()
	if err != nil {
		n.Stop()
		return nil, err
	}
	if err := os.WriteFile(n.path("kubelet.yaml"), []byte(config), 0o644); err != nil {
		n.Stop()
		return nil, err
	}
	args := []string{
		"--config", n.path("kubelet.yaml"), "--kubeconfig", opts.Kubeconfig,
		"--hostname-override", opts.Name, "--root-dir", n.path("kubelet"), "--cert-dir", n.path("kubelet", "pki"),
	}
	if len(opts.Labels) > 0 {
		var labels []string
		for k, v := range opts.Labels {
			labels = append(labels, k+"="+v)
		}
		slices.Sort(labels)
		args = append(args, "--node-labels", strings.Join(labels, ","))
	}
	if n.kubelet, err = controlplane.StartProcess(controlplane.ProcessSpec{
		Name: "kubelet", Path: kubelet, Args: args, Dir: opts.Dir, Detach: opts.Detach,
	}); err != nil {
		n.Stop()
		return nil, err
	}
	if err := n.waitReady(ctx, client); err != nil {
		n.Stop()
		// It may have registered: a Node without a kubelet stays Ready.
		delCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		if delErr := DeleteNode(delCtx, client, opts.Name); delErr != nil {
			err = errors.Join(err, delErr)
		}
		cancel()
		return nil, err
	}
	return n, nil
}

// noProxy is where a real node's containerd sends image pulls: a closed
// port on loopback (discard).
const noProxy = "http://127.0.0.1:9"

// Name is the node's name.
func (n *Node) Name() string { return n.opts.Name }

// Allocatable is the allocatable the kubelet reports for the node.
func (n *Node) Allocatable(ctx context.Context, client kubernetes.Interface) (v1.ResourceList, error) {
	node, err := client.CoreV1().Nodes().Get(ctx, n.opts.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return node.Status.Allocatable, nil
}

// Dir is the node's directory (logs: containerd.log, kubelet.log).
func (n *Node) Dir() string { return n.opts.Dir }

func (n *Node) path(elem ...string) string {
	return filepath.Join(append([]string{n.opts.Dir}, elem...)...)
}

func (n *Node) socket() string { return n.path("containerd.sock") }

func (n *Node) cgroupRoot() string { return "/tandem-node" + strconv.Itoa(n.opts.Index) }

func (n *Node) bridge() string { return "tandem" + strconv.Itoa(n.opts.Index) }

// writeContainerdConfig writes the node's containerd configuration and CNI
// network. Why each setting:
//   - root, state, sockets, runc's state, CNI configuration and IPAM data
//     of the node's own, so that one kubelet never cleans up another's
//     containers (containerd 1.6 still keeps its shims' sockets in
//     /run/containerd/s, and libcni its cache in /var/lib/cni);
//   - restrict_oom_score_adj: a process without CAP_SYS_RESOURCE cannot
//     lower oom_score_adj, and without it every sandbox fails (runc only
//     says "can't get final child's PID from pipe: EOF");
//   - sandbox_image: the local image, or containerd pulls registry.k8s.io/pause;
//   - netns_mounts_under_state_dir: the pods' network namespaces are mounted
//     in the node's state directory, not in /var/run/netns, so that Stop
//     removes what a kubelet stopped mid-way leaves;
//   - the bridge has no gateway and no masquerading: pods reach nothing
//     beyond their node's bridge.
func (n *Node) writeContainerdConfig() error {
	config := fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = %[3]q
[ttrpc]
  address = "%[3]s.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = %[4]q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[5]q
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = %[8]q
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[6]q
    conf_dir = %[7]q
`, n.path("containerd-root"), n.path("containerd-state"), n.socket(), n.path("opt"), ImageName, cniBinDir(), n.path("cni"), n.path("runc"))
	if err := os.WriteFile(n.path("containerd.toml"), []byte(config), 0o644); err != nil {
		return err
	}
	network := fmt.Sprintf(`{"cniVersion": "0.4.0", "name": "tandem-%[1]s", "plugins": [
  {"type": "bridge", "bridge": %[2]q, "isGateway": false, "ipMasq": false,
   "ipam": {"type": "host-local", "dataDir": %[3]q, "ranges": [[{"subnet": "10.244.%[4]d.0/24"}]]}},
  {"type": "loopback"}]}
`, n.opts.Name, n.bridge(), n.path("ipam"), n.opts.Index)
	return os.WriteFile(n.path("cni", "10-tandem.conflist"), []byte(network), 0o644)
}

// cniBinDir is where the CNI plugins are installed: Debian's
// containernetworking-plugins puts them in /usr/lib/cni, upstream's
// tarball in /opt/cni/bin.
func cniBinDir() string {
	for _, d := range []string{"/usr/lib/cni", "/opt/cni/bin"} {
		if _, err := os.Stat(filepath.Join(d, "bridge")); err == nil {
			return d
		}
	}
	return "/usr/lib/cni"
}

// ctrCommand runs ctr against the node's containerd in the CRI's namespace.
func (n *Node) ctrCommand(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, n.ctr, append([]string{"--address", n.socket(), "--namespace", "k8s.io"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return out, nil
}

// importImage waits for containerd to answer and imports ImageName.
func (n *Node) importImage(ctx context.Context, archive string) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if !n.containerd.Running() {
			return false, fmt.Errorf("containerd exited (%v); last lines of %s:\n%s", n.containerd.ExitError(), n.containerd.LogPath, controlplane.LogTail(n.containerd.LogPath, 20))
		}
		_, last = n.ctrCommand(ctx, "version")
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("node %s: containerd did not answer: %w (last: %v)", n.opts.Name, err, last)
	}
	_, err = n.ctrCommand(ctx, "images", "import", "--base-name", imageRepository, archive)
	return err
}

// cgroupHierarchies returns the mounted cgroup hierarchies: every v1
// controller's directory, or the v2 root alone.
func cgroupHierarchies() ([]string, error) {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return []string{"/sys/fs/cgroup"}, nil
	}
	entries, err := os.ReadDir("/sys/fs/cgroup")
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, "/sys/fs/cgroup/"+e.Name())
		}
	}
	return dirs, nil
}

// makeCgroups creates the kubelet's cgroupRoot in every hierarchy: with the
// cgroupfs driver the kubelet requires it to exist.
func (n *Node) makeCgroups() error {
	dirs, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(d, n.cgroupRoot()), 0o755); err != nil {
			return fmt.Errorf("creating the kubelet's cgroup root: %w", err)
		}
	}
	return nil
}

// kubeletConfig is the node's KubeletConfiguration. Why each setting:
//   - failCgroupV1 false and the cgroupfs driver: this machine has cgroup v1
//     and no systemd; cgroupRoot per node, so that nodes' pods do not share
//     the kubepods cgroups;
//   - systemReserved: what the machine has beyond the node's allocatable;
//   - ports, podLogsDir, root directory per node; the server on loopback,
//     and only for callers the apiserver authenticates and authorizes (no
//     anonymous exec into a node's containers by a local user; the
//     apiserver has no client certificate for it either, so kubectl logs
//     and exec do not reach these nodes);
//   - eviction and image garbage collection thresholds that a full disk of
//     a shared machine does not cross: the node must not evict the pods or
//     delete the one image a test runs;
//   - no shutdown manager (it needs systemd-logind over D-Bus).
func (n *Node) kubeletConfig() (string, error) {
	cpus, memory, err := machine()
	if err != nil {
		return "", err
	}
	reservedCPU := cpus.DeepCopy()
	reservedCPU.Sub(n.opts.CPU)
	reservedMemory := memory.DeepCopy()
	reservedMemory.Sub(n.opts.Memory)
	reservedMemory.Sub(evictionMemory)
	if n.opts.CPU.Sign() <= 0 || reservedCPU.Sign() < 0 || n.opts.Memory.Sign() <= 0 || reservedMemory.Sign() < 0 {
		return "", fmt.Errorf("node %s: allocatable cpu %s, memory %s does not fit this machine (cpu %s, memory %s less %s for eviction)",
			n.opts.Name, n.opts.CPU.String(), n.opts.Memory.String(), cpus.String(), memory.String(), evictionMemory.String())
	}
	port, err := controlplane.FreePort()
	if err != nil {
		return "", err
	}
	healthz, err := controlplane.FreePort()
	if err != nil {
		return "", err
	}
	var taints strings.Builder
	for _, t := range n.opts.Taints {
		fmt.Fprintf(&taints, "\n- {key: %q, value: %q, effect: %q}", t.Key, t.Value, t.Effect)
	}
	registerWithTaints := "[]"
	if taints.Len() > 0 {
		registerWithTaints = taints.String()
	}
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
containerRuntimeEndpoint: unix://%s
imageServiceEndpoint: unix://%s
cgroupDriver: cgroupfs
cgroupRoot: %s
cgroupsPerQOS: true
failCgroupV1: false
failSwapOn: false
podLogsDir: %s
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
authorization:
  mode: Webhook
systemReserved: {cpu: %dm, memory: "%d"}
evictionHard: {memory.available: %q, nodefs.available: "1%%", imagefs.available: "1%%", nodefs.inodesFree: "1%%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
maxPods: %d
serializeImagePulls: false
nodeStatusUpdateFrequency: 10s
shutdownGracePeriod: 0s
registerWithTaints: %s
`, port, healthz, n.socket(), n.socket(), n.cgroupRoot(), n.path("pod-logs"),
		reservedCPU.MilliValue(), reservedMemory.Value(), evictionMemory.String(), n.opts.Pods, registerWithTaints), nil
}

// machine returns the machine's cpus and memory as the kubelet reads them
// (cadvisor: the online cpus, MemTotal of /proc/meminfo).
func machine() (resource.Quantity, resource.Quantity, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return resource.Quantity{}, resource.Quantity{}, err
	}
	defer f.Close()
	var kib int64
	s := bufio.NewScanner(f)
	for s.Scan() {
		if fields := strings.Fields(s.Text()); len(fields) >= 2 && fields[0] == "MemTotal:" {
			kib, err = strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return resource.Quantity{}, resource.Quantity{}, fmt.Errorf("reading MemTotal: %w", err)
			}
		}
	}
	if kib == 0 {
		return resource.Quantity{}, resource.Quantity{}, errors.New("no MemTotal in /proc/meminfo")
	}
	online, err := onlineCPUs()
	if err != nil {
		return resource.Quantity{}, resource.Quantity{}, err
	}
	return *resource.NewMilliQuantity(int64(online)*1000, resource.DecimalSI), *resource.NewQuantity(kib*1024, resource.BinarySI), nil
}

// onlineCPUs counts the cpus in /sys/devices/system/cpu/online ("0-1,3").
func onlineCPUs() (int, error) {
	data, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return 0, err
	}
	return countCPUs(string(data))
}

// countCPUs counts the cpus of a kernel cpu list ("0-1,3").
func countCPUs(data string) (int, error) {
	count := 0
	for _, r := range strings.Split(strings.TrimSpace(data), ",") {
		lo, hi, found := strings.Cut(r, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0, fmt.Errorf("parsing online cpus %q: %w", data, err)
		}
		b := a
		if found {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return 0, fmt.Errorf("parsing online cpus %q: range %q", data, r)
			}
		}
		count += b - a + 1
	}
	return count, nil
}

// waitReady waits until the Node is Ready with the allocatable asked for.
func (n *Node) waitReady(ctx context.Context, client kubernetes.Interface) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, p := range []*controlplane.Process{n.containerd, n.kubelet} {
			if !p.Running() {
				return false, fmt.Errorf("%s exited (%v); last lines of %s:\n%s", p.Name, p.ExitError(), p.LogPath, controlplane.LogTail(p.LogPath, 20))
			}
		}
		node, err := client.CoreV1().Nodes().Get(ctx, n.opts.Name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil //nolint:nilerr // not registered yet: poll again
		}
		alloc := node.Status.Allocatable
		if !ready(node) || alloc.Cpu().Cmp(n.opts.CPU) != 0 || alloc.Memory().Cmp(n.opts.Memory) != 0 {
			last = fmt.Sprintf("ready %t, allocatable cpu %s memory %s", ready(node), alloc.Cpu(), alloc.Memory())
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("node %s: %w (last: %s); last lines of %s:\n%s", n.opts.Name, err, last, n.kubelet.LogPath, controlplane.LogTail(n.kubelet.LogPath, 20))
	}
	return nil
}

func ready(node *v1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// Exit ends the running containers of pod as their process would: exit
// code 0 sends them SIGTERM (tandem-pause exits 0), any other SIGKILL (the
// kubelet reports exit code 137). The kubelet sees them exit and reports
// the pod Succeeded or Failed (restartPolicy Never).
func (n *Node) Exit(ctx context.Context, pod *v1.Pod, exitCode int32) error {
	out, err := n.ctrCommand(ctx, "containers", "list", "--quiet",
		fmt.Sprintf(`labels."io.kubernetes.pod.uid"==%s,labels."io.cri-containerd.kind"==container`, pod.UID))
	if err != nil {
		return err
	}
	ids := strings.Fields(string(out))
	if len(ids) == 0 {
		return fmt.Errorf("pod %s/%s has no container on node %s", pod.Namespace, pod.Name, n.opts.Name)
	}
	signal := "SIGTERM"
	if exitCode != 0 {
		signal = "SIGKILL"
	}
	var errs []error
	killed := 0
	for _, id := range ids {
		if _, err := n.ctrCommand(ctx, "tasks", "kill", "--signal", signal, id); err != nil {
			// An exited container has no task any more.
			errs = append(errs, err)
			continue
		}
		killed++
	}
	if killed == 0 {
		return fmt.Errorf("pod %s/%s has no running container on node %s: %w", pod.Namespace, pod.Name, n.opts.Name, errors.Join(errs...))
	}
	return nil
}

// Stop stops the kubelet, kills every process left in the node's cgroups
// (containers, and containerd's shims with them), stops containerd and
// removes the node's mounts, cgroups and bridge. The Node object stays.
func (n *Node) Stop() {
	if n.kubelet != nil {
		_ = n.kubelet.Stop(10 * time.Second)
	}
	n.clean(func() {
		if n.containerd != nil {
			_ = n.containerd.Stop(10 * time.Second)
		}
	})
}

// clean kills what is left of the node once its kubelet is stopped,
// stopping containerd with stopContainerd, and removes its mounts, cgroups
// and bridge.
func (n *Node) clean(stopContainerd func()) {
	n.killCgroups()
	n.killShims()
	stopContainerd()
	unmountUnder(n.opts.Dir)
	n.removeCgroups()
	_ = exec.Command("ip", "link", "delete", n.bridge()).Run()
	n.release()
}

// stateFile records a node's name and index in its directory, for StopDir.
const stateFile = "node.json"

// StopDir stops the node that Start ran with Detach in dir, from what it
// left there (its state and PID files), as Stop does: tandem-local down.
// A directory without a node is left alone.
func StopDir(dir string) error {
	// Absolute, as Start had it: the shims and mounts name it so.
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(filepath.Join(dir, stateFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var opts Options
	if err := json.Unmarshal(data, &opts); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(dir, stateFile), err)
	}
	return stopIn(dir, opts.Index, true)
}

// stopIn stops the node with index in dir from its PID files, as Stop does,
// and gives up its claim if release.
func stopIn(dir string, index int, release bool) error {
	n := &Node{opts: Options{Dir: dir, Index: index}, claimed: release}
	var errs []error
	if err := controlplane.StopPIDFile(n.path("kubelet.pid"), 10*time.Second); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	n.clean(func() {
		if err := controlplane.StopPIDFile(n.path("containerd.pid"), 10*time.Second); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	})
	return errors.Join(errs...)
}

// killCgroups sends SIGKILL to every process in the node's cgroup tree
// until none is left (a few rounds: a dying shim may still fork).
func (n *Node) killCgroups() {
	for range 20 {
		pids := n.cgroupPIDs()
		if len(pids) == 0 {
			return
		}
		for pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// cgroupPIDs returns the processes in the node's cgroup tree.
func (n *Node) cgroupPIDs() map[int]bool {
	dirs, _ := cgroupHierarchies()
	pids := map[int]bool{}
	for _, d := range dirs {
		_ = filepath.WalkDir(filepath.Join(d, n.cgroupRoot()), func(path string, e os.DirEntry, err error) error {
			if err != nil || e.IsDir() || e.Name() != "cgroup.procs" {
				return nil //nolint:nilerr // a cgroup removed meanwhile holds no process
			}
			data, _ := os.ReadFile(path)
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil {
					pids[pid] = true
				}
			}
			return nil
		})
	}
	return pids
}

// killShims kills the containerd shims serving the node's containerd: they
// run in their own sessions and would outlive it.
func (n *Node) killShims() {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if len(args) > 0 && strings.HasPrefix(filepath.Base(args[0]), "containerd-shim") && slices.Contains(args, n.socket()) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// removeCgroups removes the node's cgroups, deepest first.
func (n *Node) removeCgroups() {
	dirs, _ := cgroupHierarchies()
	for _, d := range dirs {
		var all []string
		_ = filepath.WalkDir(filepath.Join(d, n.cgroupRoot()), func(path string, e os.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				all = append(all, path)
			}
			return nil
		})
		for _, p := range slices.Backward(all) {
			_ = os.Remove(p)
		}
	}
}

// unmountUnder unmounts every mount point under dir, deepest first
// (volumes, the sandboxes' shm, overlay root filesystems).
func unmountUnder(dir string) {
	if resolved, err := filepath.EvalSymlinks(dir); err == nil {
		dir = resolved
	}
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var points []string
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) > 4 && (fields[4] == dir || strings.HasPrefix(fields[4], dir+"/")) {
			points = append(points, fields[4])
		}
	}
	slices.Sort(points)
	for _, p := range slices.Backward(points) {
		_ = syscall.Unmount(p, syscall.MNT_DETACH)
	}
}

// maxIndex is the largest node index.
const maxIndex = 250

// ClaimDir holds the machine's claims of node indexes: a file per index
// naming the directory of the node that holds it.
const ClaimDir = "/run/tandem-realnode"

// claimGrace is how long a claim whose node runs no kubelet nor containerd
// is taken for a node still starting rather than one left behind.
const claimGrace = 2 * time.Minute

// claim claims index (zero: the first free one) for the node in dir. An
// index claimed by a node whose processes are gone (its run was killed) is
// cleaned up (stopIn) and taken over. Claims are made under an exclusive
// lock on ClaimDir, so two processes never take over the same index.
func claim(dir string, index int) (int, error) {
	if err := os.MkdirAll(ClaimDir, 0o755); err != nil {
		return 0, err
	}
	lock, err := os.OpenFile(filepath.Join(ClaimDir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return 0, err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return 0, fmt.Errorf("locking %s: %w", ClaimDir, err)
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	if index != 0 {
		ok, err := claimIndex(dir, index)
		if err == nil && !ok {
			err = fmt.Errorf("index %d is claimed by a running node (%s)", index, filepath.Join(ClaimDir, strconv.Itoa(index)))
		}
		return index, err
	}
	var errs []error
	for i := 1; i <= maxIndex; i++ {
		ok, err := claimIndex(dir, i)
		if ok {
			return i, nil
		}
		if err != nil {
			// One index that cannot be cleaned up must not block the rest.
			errs = append(errs, err)
		}
	}
	return 0, fmt.Errorf("all %d node indexes are claimed by running nodes (%s): %w", maxIndex, ClaimDir, errors.Join(errs...))
}

// claimIndex claims index i for the node in dir, if it is free or its
// holder is gone; the caller holds ClaimDir's lock.
func claimIndex(dir string, i int) (bool, error) {
	path := filepath.Join(ClaimDir, strconv.Itoa(i))
	if f, err := os.Open(path); err == nil {
		info, statErr := f.Stat()
		owner, readErr := io.ReadAll(f)
		_ = f.Close()
		if statErr != nil || readErr != nil {
			return false, errors.Join(statErr, readErr)
		}
		switch {
		case running(string(owner)):
			if string(owner) == dir {
				return false, fmt.Errorf("a node runs in %s already", dir)
			}
			return false, nil
		case string(owner) != dir && time.Since(info.ModTime()) < claimGrace:
			return false, nil // still starting
		}
		// Left behind by a killed run (or by this directory's last
		// node): its containers, shims, mounts, cgroups and bridge go,
		// then the claim.
		if err := stopIn(string(owner), i, false); err != nil {
			return false, fmt.Errorf("cleaning up node index %d left by %s: %w", i, owner, err)
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return false, err
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return false, err
	}
	_, err = f.WriteString(dir)
	if err = errors.Join(err, f.Close()); err != nil {
		_ = os.Remove(path)
		return false, err
	}
	return true, nil
}

// running reports whether the node in dir runs a kubelet or a containerd.
func running(dir string) bool {
	return controlplane.PIDFileAlive(filepath.Join(dir, "kubelet.pid")) || controlplane.PIDFileAlive(filepath.Join(dir, "containerd.pid"))
}

// release gives the node's index up, if the node claimed it and still
// holds it.
func (n *Node) release() {
	if !n.claimed {
		return
	}
	n.claimed = false
	path := filepath.Join(ClaimDir, strconv.Itoa(n.opts.Index))
	if owner, err := os.ReadFile(path); err == nil && string(owner) == n.opts.Dir {
		_ = os.Remove(path)
	}
}

// Localize makes pod runnable on a real node of this package: every
// container and init container runs ImageName, never pulled. Commands and
// arguments are dropped (the image has one binary).
func Localize(pod *v1.Pod) {
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			cs[i].Image, cs[i].ImagePullPolicy = ImageName, v1.PullNever
			cs[i].Command, cs[i].Args = nil, nil
		}
	}
}

// DeleteNode deletes the Node object of a stopped node.
func DeleteNode(ctx context.Context, client kubernetes.Interface, name string) error {
	err := client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
