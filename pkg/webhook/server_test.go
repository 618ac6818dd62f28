package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2/ktesting"

	"github.com/tandem-scheduler/tandem/pkg/internal/metricstest"
)

// writePair writes a new self-signed key pair for host into dir with the
// given modification time and returns the certificate's PEM.
func writePair(t *testing.T, dir, host string, mod time.Time) []byte {
	t.Helper()
	cert, key, err := certutil.GenerateSelfSignedCertKey(host, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"tls.crt": cert, "tls.key": key} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	return cert
}

func leafCN(t *testing.T, c *tls.Certificate) string {
	t.Helper()
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf.Subject.CommonName
}

// A renewed pair is served once the check interval passed; a broken one is
// not, and the last good pair stays.
func TestCertificateFilesReload(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	dir := t.TempDir()
	start := time.Now()
	writePair(t, dir, "first.example", start.Add(-time.Hour))
	c, err := LoadCertificateFiles(logger, filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	now := c.lastCheck
	c.now = func() time.Time { return now }
	get := func() string {
		got, err := c.GetCertificate(nil)
		if err != nil {
			t.Fatal(err)
		}
		return leafCN(t, got)
	}
	if cn := get(); !hasHost(cn, "first.example") {
		t.Fatalf("serving %s, want first.example", cn)
	}

	writePair(t, dir, "second.example", start)
	if cn := get(); !hasHost(cn, "first.example") {
		t.Errorf("serving %s before the check interval, want still first.example", cn)
	}
	now = now.Add(certCheckInterval)
	if cn := get(); !hasHost(cn, "second.example") {
		t.Errorf("serving %s after the files changed, want second.example", cn)
	}

	if err := os.WriteFile(filepath.Join(dir, "tls.key"), []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	now = now.Add(certCheckInterval)
	if cn := get(); !hasHost(cn, "second.example") {
		t.Errorf("serving %s after a broken key was written, want the last good pair second.example", cn)
	}
}

// hasHost reports whether a self-signed certificate's CN ("host@timestamp")
// is for host.
func hasHost(cn, host string) bool {
	return strings.HasPrefix(cn, host+"@")
}

// StartLocal serves HTTPS with a certificate for 127.0.0.1 that its
// CABundle verifies, at URL; after Stop the port is closed.
func TestStartLocal(t *testing.T) {
	wh, err := StartLocal(t.Context(), fake.NewClientset(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(wh.CABundle()) {
		t.Fatal("CABundle holds no certificate")
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}}
	base := wh.URL()[:len(wh.URL())-len(Path)]
	resp, err := client.Get(base + HealthzPath)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "ok" {
		t.Errorf("GET %s = %d %q, want 200 ok", HealthzPath, resp.StatusCode, body)
	}
	if got := wh.Configuration("x", "", nil).Webhooks[0].ClientConfig; got.URL == nil || *got.URL != wh.URL() || !bytes.Equal(got.CABundle, wh.CABundle()) {
		t.Errorf("configuration's clientConfig = %+v, want the server's URL and CA bundle", got)
	}
	client.CloseIdleConnections()
	if err := wh.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	host := base[len("https://"):]
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", host); err == nil {
		_ = conn.Close()
		t.Errorf("%s still accepts connections after Stop", host)
	}
	if err := wh.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

// LabelNames says what the registered collectors describe, so that the
// chart's alerts checked against it check the real thing.
func TestLabelNamesMatchTheCollectors(t *testing.T) {
	RegisterMetrics()
	metricstest.LabelNamesMatch(t, LabelNames, reviews, placeholdersDeleted, admissionErrors)
	if labels, ok := LabelNames("tandem_webhook_admission_duration_seconds_bucket"); !ok || !slices.Equal(labels, []string{"le"}) {
		t.Errorf("LabelNames(admission_duration_seconds_bucket) = %q, %v; want [le]", labels, ok)
	}
	if _, ok := LabelNames("tandem_webhook_admission_reviews"); ok {
		t.Error("LabelNames(tandem_webhook_admission_reviews): exported, but the counter is _total")
	}
}
