package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/tandem-scheduler/tandem/harness/controlplane"
)

// applyServerSide applies objs as the admin with server-side apply, as
// `kubectl apply --server-side --field-manager=manager` does.
func applyServerSide(t testing.TB, ctx context.Context, objs []*unstructured.Unstructured, manager string) {
	t.Helper()
	apply(t, ctx, objs, metav1.ApplyOptions{FieldManager: manager})
}

// apply applies objs server-side with opts.
func apply(t testing.TB, ctx context.Context, objs []*unstructured.Unstructured, opts metav1.ApplyOptions) {
	t.Helper()
	disco, err := discovery.NewDiscoveryClientForConfig(restConfig)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))
	dyn, err := dynamic.NewForConfig(restConfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("%s %s: %v", gvk, o.GetName(), err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			ri = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
		}
		if _, err := ri.Apply(ctx, o.GetName(), o, opts); err != nil {
			t.Fatalf("server-side apply of %s %s/%s by %s: %v", gvk.Kind, o.GetNamespace(), o.GetName(), opts.FieldManager, err)
		}
	}
}

// serviceAccountKubeconfig writes a kubeconfig into dir that authenticates
// as the ServiceAccount ns/name with a token from the TokenRequest API, as
// the projected token of a pod running as that ServiceAccount would.
func serviceAccountKubeconfig(t *testing.T, e *env, dir, ns, name string) string {
	t.Helper()
	tr, err := e.client.CoreV1().ServiceAccounts(ns).CreateToken(e.ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for ServiceAccount %s/%s: %v", ns, name, err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: controlPlane.URL(), CertificateAuthorityData: restConfig.CAData}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: name}
	cfg.CurrentContext = "local"
	path := filepath.Join(dir, name+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// replica is one tandem-scheduler process, as one pod of the Deployment.
type replica struct {
	name string
	p    *controlplane.Process
	url  string
}

// startReplica runs bin/tandem-scheduler with the Deployment container's
// args, the config file and kubeconfig in place of the in-cluster ones, and
// the HTTPS port on loopback; it waits for /healthz.
func startReplica(t *testing.T, ctx context.Context, name, dir string, args []string, config []byte, kubeconfig string) *replica {
	t.Helper()
	var cfg map[string]any
	if err := yaml.Unmarshal(config, &cfg); err != nil {
		t.Fatal(err)
	}
	// In a pod, an empty kubeconfig means the in-cluster ServiceAccount.
	cfg["clientConnection"] = map[string]any{"kubeconfig": kubeconfig}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	configPath := filepath.Join(dir, name+"-config.yaml")
	if err := os.WriteFile(configPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	port, err := controlplane.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	var local []string
	for _, a := range args {
		if strings.HasPrefix(a, "--config=") {
			a = "--config=" + configPath
		}
		local = append(local, a)
	}
	local = append(local,
		"--authentication-kubeconfig="+kubeconfig,
		"--authorization-kubeconfig="+kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(port),
	)
	bin, err := controlplane.ResolveBinDir("")
	if err != nil {
		t.Fatal(err)
	}
	p, err := controlplane.StartProcess(controlplane.ProcessSpec{
		Name: name, Path: filepath.Join(bin, controlplane.SchedulerName), Args: local, Dir: dir,
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{name: name, p: p, url: fmt.Sprintf("https://127.0.0.1:%d", port)}
	t.Cleanup(func() {
		_ = p.Stop(10 * time.Second)
		if t.Failed() {
			t.Logf("last lines of %s:\n%s", p.LogPath, controlplane.LogTail(p.LogPath, 40))
		}
	})
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := p.WaitHTTP(wctx, controlplane.InsecureHTTPClient(), r.url+"/healthz", nil); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return r
}

func (r *replica) log(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(r.p.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// status returns the HTTP status of an unauthenticated GET of path, as a
// kubelet probe sends it.
func (r *replica) status(t *testing.T, path string) int {
	t.Helper()
	resp, err := controlplane.InsecureHTTPClient().Get(r.url + path)
	if err != nil {
		t.Fatalf("%s %s: %v", r.name, path, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
