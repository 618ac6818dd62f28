package webhook

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	certutil "k8s.io/client-go/util/cert"
)

// Local is the webhook served in-process on a loopback port with a
// self-signed certificate, next to a local apiserver (tests, the simulator).
type Local struct {
	handler  *Handler
	url      string
	caBundle []byte
	cancel   context.CancelFunc
	done     chan error
}

// StartLocal serves a Handler with opts (started: its informers have
// listed), reading and deleting through client, on
// 127.0.0.1 (a free port) over TLS with a certificate for 127.0.0.1 signed by
// a new CA, until ctx ends or Stop. Register it with the apiserver with
// Register.
func StartLocal(ctx context.Context, client kubernetes.Interface, opts Options) (*Local, error) {
	loopback := net.ParseIP("127.0.0.1")
	// The certificate is followed by its CA's: the whole is the CA bundle.
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(loopback.String(), []net.IP{loopback}, nil)
	if err != nil {
		return nil, fmt.Errorf("generating the webhook's certificate: %w", err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(loopback.String(), "0"))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	handler := NewHandler(client, opts)
	if err := handler.Start(ctx); err != nil {
		cancel()
		_ = ln.Close()
		return nil, err
	}
	l := &Local{
		handler:  handler,
		url:      "https://" + ln.Addr().String() + Path,
		caBundle: certPEM,
		cancel:   cancel,
		done:     make(chan error, 1),
	}
	config := TLSConfig(func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &pair, nil })
	go func() { l.done <- Serve(ctx, ln, config, l.handler) }()
	return l, nil
}

// URL is the admission endpoint's URL, https://127.0.0.1:PORT/release-placeholder.
func (l *Local) URL() string { return l.url }

// CABundle is the PEM bundle that verifies the server's certificate.
func (l *Local) CABundle() []byte { return l.caBundle }

// Handler is the handler served.
func (l *Local) Handler() *Handler { return l.handler }

// Configuration is the ValidatingWebhookConfiguration named name that calls
// this server (URL and CABundle) for pods labelled runnerPodLabel in
// runnerNamespaces (every namespace if none).
func (l *Local) Configuration(name, runnerPodLabel string, runnerNamespaces []string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	return Configuration(name, admissionregistrationv1.WebhookClientConfig{URL: &l.url, CABundle: l.caBundle}, runnerPodLabel, runnerNamespaces)
}

// Register creates (or replaces) the configuration named name, for the
// runner namespace namespace, and waits until the apiserver calls the
// webhook: it dry-runs the creation of a labelled, pinned probe pod in
// namespace until a review arrives. The
// apiserver picks new configurations up asynchronously; pods created before
// Register returns may not be reviewed.
func (l *Local) Register(ctx context.Context, client kubernetes.Interface, name, runnerPodLabel, namespace string) error {
	config := l.Configuration(name, runnerPodLabel, []string{namespace})
	configs := client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	if _, err := configs.Create(ctx, config, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		old, err := configs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		config.ResourceVersion = old.ResourceVersion
		if _, err := configs.Update(ctx, config, metav1.UpdateOptions{}); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	label := runnerPodLabel
	if label == "" {
		label = DefaultRunnerPodLabel
	}
	probe := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "tandem-webhook-probe", Namespace: namespace, Labels: map[string]string{label: "tandem-webhook-probe"}},
		Spec: v1.PodSpec{
			NodeName:   "tandem-webhook-probe",
			Containers: []v1.Container{{Name: "probe", Image: "pause"}},
		},
	}
	before := l.handler.Reviewed()
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Pods(namespace).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return false, fmt.Errorf("dry-run creating a probe pod: %w", err)
		}
		return l.handler.Reviewed() > before, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the apiserver to call the webhook %s: %w", l.url, err)
	}
	return nil
}

// Stop stops serving (the apiserver then applies the failurePolicy) and
// waits until the server is down.
func (l *Local) Stop() error {
	l.cancel()
	err := <-l.done
	l.done <- err // a second Stop returns the same
	return err
}
