// Package controlplane runs a real local Kubernetes control plane, etcd and
// kube-apiserver built from Go modules by hack/build-control-plane.sh, for
// integration tests and for the tandem-local command.
//
// There is no controller-manager and no kubelet: tests create Nodes with their
// status (CreateNode) and bind or run pods themselves.
package controlplane

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Process names, also the base names of their log and PID files.
const (
	EtcdName      = "etcd"
	APIServerName = "kube-apiserver"
)

// BinDirEnv names the environment variable that overrides where the etcd and
// kube-apiserver binaries are found.
const BinDirEnv = "TANDEM_BIN_DIR"

// ServiceClusterIPRange is the apiserver's --service-cluster-ip-range.
const ServiceClusterIPRange = "10.96.0.0/16"

// adminUser is the static-token user; it is in system:masters.
const adminUser = "tandem-admin"

// Options configure Start.
type Options struct {
	// Dir holds data, certificates, keys, logs, PID files and the kubeconfig.
	// Empty means a new temporary directory that Stop removes. A given Dir is
	// created if needed and kept; keys and certificates in it are reused and
	// so is etcd's data.
	Dir string
	// BinDir holds etcd and kube-apiserver. Empty means $TANDEM_BIN_DIR, else
	// bin/ in the directory of the go.mod found from the working directory up.
	BinDir string
	// Detach starts the processes in their own sessions, without Pdeathsig, so
	// that they outlive the caller; stop them with Stop or StopDir(Dir).
	Detach bool
	// StartTimeout bounds each process's wait for readiness; default 60s.
	StartTimeout time.Duration
	// StopGracePeriod is how long Stop waits after SIGTERM before SIGKILL;
	// default DefaultStopGracePeriod.
	StopGracePeriod time.Duration
	// ExtraAPIServerArgs are appended to kube-apiserver's arguments (later
	// flags win), e.g. "--feature-gates=...".
	ExtraAPIServerArgs []string
}

// ControlPlane is a running etcd and kube-apiserver.
type ControlPlane struct {
	opts    Options
	dir     string
	ownsDir bool

	etcd, apiServer *Process
	etcdClientPort  int
	etcdPeerPort    int
	apiServerPort   int

	token          string
	caData         []byte
	kubeconfigPath string
	stopped        bool
}

// Start starts etcd and kube-apiserver on free loopback ports and waits until
// the apiserver's /readyz is ok and the default and kube-system namespaces
// exist. ctx bounds the start only; the processes run until Stop.
func Start(ctx context.Context, opts Options) (*ControlPlane, error) {
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 60 * time.Second
	}
	if opts.StopGracePeriod == 0 {
		opts.StopGracePeriod = DefaultStopGracePeriod
	}
	binDir, err := ResolveBinDir(opts.BinDir)
	if err != nil {
		return nil, err
	}
	opts.BinDir = binDir
	for _, name := range []string{EtcdName, APIServerName} {
		if _, err := os.Stat(filepath.Join(binDir, name)); err != nil {
			return nil, fmt.Errorf("%s not found in %s (run hack/build-control-plane.sh, or set %s): %w", name, binDir, BinDirEnv, err)
		}
	}

	cp := &ControlPlane{opts: opts, dir: opts.Dir}
	if cp.dir == "" {
		if cp.dir, err = os.MkdirTemp("", "tandem-controlplane-"); err != nil {
			return nil, err
		}
		cp.ownsDir = true
	} else {
		if cp.dir, err = filepath.Abs(cp.dir); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(cp.dir, 0o755); err != nil {
			return nil, err
		}
		for _, name := range []string{EtcdName, APIServerName} {
			if f := filepath.Join(cp.dir, name+".pid"); PIDFileAlive(f) {
				return nil, fmt.Errorf("%s is already running (see %s); stop it first", name, f)
			}
		}
	}

	// A free port may be taken between our probe and the process's bind:
	// try again with other ports.
	for attempt := 1; ; attempt++ {
		err = cp.start(ctx)
		if err == nil {
			return cp, nil
		}
		_ = cp.stopProcesses()
		if !errors.Is(err, errPortInUse) || attempt == 3 {
			break
		}
	}
	if cp.ownsDir {
		err = fmt.Errorf("%w (logs kept in %s)", err, cp.dir)
	}
	return nil, err
}

var errPortInUse = errors.New("port in use")

func (cp *ControlPlane) start(ctx context.Context) error {
	cp.etcd, cp.apiServer = nil, nil
	var err error
	for _, port := range []*int{&cp.etcdClientPort, &cp.etcdPeerPort, &cp.apiServerPort} {
		if *port, err = FreePort(); err != nil {
			return err
		}
	}
	if err := cp.startEtcd(ctx); err != nil {
		return err
	}
	if err := cp.prepareAPIServerFiles(); err != nil {
		return err
	}
	if err := cp.startAPIServer(ctx); err != nil {
		return err
	}
	if err := cp.writeKubeconfig(); err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cp.RESTConfig())
	if err != nil {
		return err
	}
	// The apiserver's system-namespaces controller creates these shortly after
	// it becomes ready; do not make callers race it.
	for _, ns := range []string{metav1.NamespaceDefault, metav1.NamespaceSystem} {
		if err := EnsureNamespace(ctx, client, ns); err != nil {
			return err
		}
	}
	return nil
}

func (cp *ControlPlane) startEtcd(ctx context.Context) error {
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", cp.etcdClientPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", cp.etcdPeerPort)
	p, err := StartProcess(ProcessSpec{
		Name: EtcdName,
		Path: filepath.Join(cp.opts.BinDir, EtcdName),
		Args: []string{
			"--name=tandem",
			"--data-dir=" + filepath.Join(cp.dir, "etcd-data"),
			"--listen-client-urls=" + clientURL,
			"--advertise-client-urls=" + clientURL,
			"--listen-peer-urls=" + peerURL,
			"--initial-advertise-peer-urls=" + peerURL,
			"--initial-cluster=tandem=" + peerURL,
			"--unsafe-no-fsync",
			"--log-level=warn",
		},
		Dir:    cp.dir,
		Detach: cp.opts.Detach,
	})
	if err != nil {
		return err
	}
	cp.etcd = p
	ctx, cancel := context.WithTimeout(ctx, cp.opts.StartTimeout)
	defer cancel()
	return portError(p, p.WaitHTTP(ctx, http.DefaultClient, clientURL+"/health", nil))
}

// prepareAPIServerFiles writes the static token file and, unless it exists,
// the service-account signing key.
func (cp *ControlPlane) prepareAPIServerFiles() error {
	token := make([]byte, 16)
	if _, err := rand.Read(token); err != nil {
		return err
	}
	cp.token = hex.EncodeToString(token)
	line := fmt.Sprintf("%s,%s,%s,%q\n", cp.token, adminUser, adminUser, "system:masters")
	if err := os.WriteFile(cp.tokenFile(), []byte(line), 0o600); err != nil {
		return err
	}
	if _, err := os.Stat(cp.serviceAccountKeyFile()); err == nil {
		return nil
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	block := &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}
	return os.WriteFile(cp.serviceAccountKeyFile(), pem.EncodeToMemory(block), 0o600)
}

func (cp *ControlPlane) startAPIServer(ctx context.Context) error {
	args := []string{
		"--etcd-servers=" + cp.EtcdURL(),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(cp.apiServerPort),
		"--cert-dir=" + cp.certDir(),
		"--token-auth-file=" + cp.tokenFile(),
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + cp.serviceAccountKeyFile(),
		"--service-account-signing-key-file=" + cp.serviceAccountKeyFile(),
		"--service-cluster-ip-range=" + ServiceClusterIPRange,
		// No controller-manager creates service accounts, and nothing would
		// remove TaintNodesByCondition's not-ready taint from new Nodes.
		"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
		// The endpoint reconciler rejects a loopback advertise address and exits.
		"--endpoint-reconciler-type=none",
		"--allow-privileged=true",
		"--profiling=false",
	}
	args = append(args, cp.opts.ExtraAPIServerArgs...)
	p, err := StartProcess(ProcessSpec{
		Name:   APIServerName,
		Path:   filepath.Join(cp.opts.BinDir, APIServerName),
		Args:   args,
		Dir:    cp.dir,
		Detach: cp.opts.Detach,
	})
	if err != nil {
		return err
	}
	cp.apiServer = p
	ctx, cancel := context.WithTimeout(ctx, cp.opts.StartTimeout)
	defer cancel()
	header := http.Header{"Authorization": []string{"Bearer " + cp.token}}
	if err := p.WaitHTTP(ctx, InsecureHTTPClient(), cp.URL()+"/readyz", header); err != nil {
		return portError(p, err)
	}
	// The serving certificate the apiserver generated in --cert-dir is a
	// bundle ending with its self-signed CA: trust that instead of skipping
	// verification.
	cp.caData, err = os.ReadFile(filepath.Join(cp.certDir(), "apiserver.crt"))
	return err
}

// portError marks err as errPortInUse when p's log says it could not bind.
func portError(p *Process, err error) error {
	if err != nil && !p.Running() {
		if log, _ := os.ReadFile(p.LogPath); strings.Contains(string(log), "address already in use") {
			return fmt.Errorf("%w: %w", errPortInUse, err)
		}
	}
	return err
}

func (cp *ControlPlane) writeKubeconfig() error {
	cp.kubeconfigPath = filepath.Join(cp.dir, "kubeconfig")
	const name = "tandem-local"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: cp.URL(), CertificateAuthorityData: cp.caData}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: cp.token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	cfg.CurrentContext = name
	return clientcmd.WriteToFile(*cfg, cp.kubeconfigPath)
}

// RESTConfig returns a config for the admin user (system:masters).
func (cp *ControlPlane) RESTConfig() *rest.Config {
	return &rest.Config{
		Host:            cp.URL(),
		BearerToken:     cp.token,
		TLSClientConfig: rest.TLSClientConfig{CAData: cp.caData},
		QPS:             -1, // no client-side rate limit: tests create many objects
	}
}

// KubeconfigPath returns the path of a kubeconfig file for the admin user.
func (cp *ControlPlane) KubeconfigPath() string { return cp.kubeconfigPath }

// URL returns the apiserver's URL, https://127.0.0.1:<port>.
func (cp *ControlPlane) URL() string {
	return fmt.Sprintf("https://127.0.0.1:%d", cp.apiServerPort)
}

// EtcdURL returns etcd's client URL.
func (cp *ControlPlane) EtcdURL() string {
	return fmt.Sprintf("http://127.0.0.1:%d", cp.etcdClientPort)
}

// Ports returns the TCP ports listened on: etcd client, etcd peer, apiserver.
func (cp *ControlPlane) Ports() []int {
	return []int{cp.etcdClientPort, cp.etcdPeerPort, cp.apiServerPort}
}

// Dir returns the directory with data, logs, PID files and the kubeconfig.
func (cp *ControlPlane) Dir() string { return cp.dir }

// Etcd returns the etcd process (PID, log path).
func (cp *ControlPlane) Etcd() *Process { return cp.etcd }

// APIServer returns the kube-apiserver process (PID, log path).
func (cp *ControlPlane) APIServer() *Process { return cp.apiServer }

// RestartAPIServer stops kube-apiserver (SIGTERM, then SIGKILL after grace)
// and starts it again on the same port with the same token, certificates and
// etcd, whose data is kept: clients built from RESTConfig keep working once
// it is ready again, and informers resume after their reflectors reconnect.
// It returns when the new apiserver's /readyz is ok.
func (cp *ControlPlane) RestartAPIServer(ctx context.Context, grace time.Duration) error {
	if cp.stopped {
		return errors.New("control plane is stopped")
	}
	if cp.apiServer != nil {
		if err := cp.apiServer.Stop(grace); err != nil {
			return fmt.Errorf("stopping kube-apiserver: %w", err)
		}
	}
	// The port was ours a moment ago; another process may take it meanwhile,
	// so retry a few times rather than move (clients know the old URL).
	var err error
	for attempt := 1; attempt <= 5; attempt++ {
		if err = cp.startAPIServer(ctx); err == nil || !errors.Is(err, errPortInUse) {
			break
		}
		_ = cp.apiServer.Stop(0)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	if err != nil {
		return fmt.Errorf("restarting kube-apiserver: %w", err)
	}
	return nil
}

// Stop stops the apiserver, then etcd (SIGTERM to the process group, SIGKILL
// after the grace period) and waits for both to exit. It removes the
// directory if Start created it. Calling Stop again is a no-op.
func (cp *ControlPlane) Stop() error {
	if cp.stopped {
		return nil
	}
	cp.stopped = true
	err := cp.stopProcesses()
	if cp.ownsDir && err == nil {
		err = os.RemoveAll(cp.dir)
	}
	return err
}

func (cp *ControlPlane) stopProcesses() error {
	var errs []error
	for _, p := range []*Process{cp.apiServer, cp.etcd} {
		if p != nil {
			errs = append(errs, p.Stop(cp.opts.StopGracePeriod))
		}
	}
	return errors.Join(errs...)
}

func (cp *ControlPlane) certDir() string   { return filepath.Join(cp.dir, "certs") }
func (cp *ControlPlane) tokenFile() string { return filepath.Join(cp.dir, "tokens.csv") }
func (cp *ControlPlane) serviceAccountKeyFile() string {
	return filepath.Join(cp.dir, "service-account.key")
}

// ResolveBinDir returns dir if set, else $TANDEM_BIN_DIR, else bin/ in the
// directory of the go.mod found from the working directory up.
func ResolveBinDir(dir string) (string, error) {
	if dir == "" {
		dir = os.Getenv(BinDirEnv)
	}
	if dir != "" {
		return filepath.Abs(dir)
	}
	root, err := ModuleRoot()
	if err != nil {
		return "", fmt.Errorf("%w; set %s", err, BinDirEnv)
	}
	return filepath.Join(root, "bin"), nil
}

// BinaryIn returns the path of the executable name in binDir (resolved as by
// ResolveBinDir), or an error that says how to build it (build, e.g. "run
// make karpenter").
func BinaryIn(binDir, name, build string) (string, error) {
	dir, err := ResolveBinDir(binDir)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("%s not found in %s (%s, or set %s): %w", name, dir, build, BinDirEnv, err)
	}
	return path, nil
}

// ModuleRoot returns the nearest directory from the working directory up that
// holds a go.mod.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod found from the working directory up")
		}
		dir = parent
	}
}
