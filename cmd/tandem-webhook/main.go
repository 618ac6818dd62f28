// Command tandem-webhook serves tandem's admission webhook (pkg/webhook): on
// the creation of a workflow pod pinned to its runner's node, it deletes the
// runner's placeholder pod (reservationMode Pods) before the pod is stored,
// so that the kubelet admits the workflow pod into the room it held. It
// never denies a pod.
package main

import (
	"context"
	goflag "flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/component-base/version"
	"k8s.io/component-base/version/verflag"
	"k8s.io/klog/v2"

	"github.com/tandem-scheduler/tandem/pkg/webhook"

	// client-go and version metrics on /metrics, as tandem-scheduler has them.
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "tandem-webhook:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := pflag.NewFlagSet("tandem-webhook", pflag.ContinueOnError)
	certFile := fs.String("tls-cert-file", "", "PEM serving certificate (reloaded when the file changes); required")
	keyFile := fs.String("tls-private-key-file", "", "PEM private key of --tls-cert-file; required")
	bindAddress := fs.String("bind-address", "0.0.0.0", "address to serve HTTPS on")
	port := fs.Int("port", 9443, "port to serve HTTPS on: "+webhook.Path+" (admission), "+webhook.HealthzPath+", "+webhook.MetricsPath)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file; empty means the in-cluster configuration")
	label := fs.String("runner-pod-label", webhook.DefaultRunnerPodLabel, "label key on workflow pods naming their runner pod (the scheduler's runnerPodLabel)")
	namespaces := fs.StringSlice("namespaces", nil, "the runner namespaces, whose placeholders the webhook watches (it needs pods list and watch there); empty means every namespace (a ClusterRole)")
	verflag.AddFlags(fs)
	klogFlags := goflag.NewFlagSet("klog", goflag.ContinueOnError)
	klog.InitFlags(klogFlags)
	fs.AddGoFlagSet(klogFlags)
	if err := fs.Parse(args); err != nil {
		return err
	}
	verflag.PrintAndExitIfRequested()
	if *certFile == "" || *keyFile == "" {
		return fmt.Errorf("--tls-cert-file and --tls-private-key-file are required")
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	logger := klog.Background().WithName("tandem-webhook")
	ctx = klog.NewContext(ctx, logger)

	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	// A burst of job starts is up to three calls per workflow pod.
	config.QPS, config.Burst = 50, 100
	config.UserAgent = "tandem-webhook/" + version.Get().GitVersion
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	certs, err := webhook.LoadCertificateFiles(logger, *certFile, *keyFile)
	if err != nil {
		return err
	}
	handler := webhook.NewHandler(client, webhook.Options{RunnerPodLabel: *label, Namespaces: *namespaces})
	// The placeholders are listed before the port opens: the probes fail
	// (connection refused) until then.
	if err := handler.Start(ctx); err != nil {
		return err
	}
	address := net.JoinHostPort(*bindAddress, strconv.Itoa(*port))
	ln, err := net.Listen("tcp", address)
	if err != nil {
		return err
	}
	logger.Info("Serving", "address", address, "runnerPodLabel", *label, "namespaces", *namespaces, "version", version.Get().GitVersion)
	return webhook.Serve(ctx, ln, webhook.TLSConfig(certs.GetCertificate), handler)
}
