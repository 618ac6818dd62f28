package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// shutdownGrace bounds how long Serve waits for reviews in flight once its
// context ends.
const shutdownGrace = 5 * time.Second

// Serve serves handler over TLS (HTTP/2 and HTTP/1.1) on ln until ctx ends,
// then shuts down gracefully; tlsConfig needs Certificates or
// GetCertificate. Requests carry ctx's values (its logger) but not its
// cancellation. It closes ln.
func Serve(ctx context.Context, ln net.Listener, tlsConfig *tls.Config, handler http.Handler) error {
	srv := &http.Server{
		Handler:           handler,
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: 10 * time.Second,
		// The apiserver waits at most the configuration's timeoutSeconds.
		ReadTimeout:  30 * time.Second,
		WriteTimeout: 30 * time.Second,
		IdleTimeout:  90 * time.Second,
		BaseContext:  func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	done := make(chan error, 1)
	go func() { done <- srv.ServeTLS(ln, "", "") }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	err := srv.Shutdown(shutdownCtx)
	if serveErr := <-done; !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(err, serveErr)
	}
	return err
}

// TLSConfig is the server's TLS configuration: TLS 1.2 or later, the
// certificate from getCertificate.
func TLSConfig(getCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)) *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: getCertificate}
}

// CertificateFiles serves the key pair in certFile and keyFile and reloads
// it when either file changes (a renewed Secret), keeping the last good pair
// when the new one does not load.
type CertificateFiles struct {
	certFile, keyFile string
	logger            klog.Logger
	now               func() time.Time

	mu        sync.Mutex
	cert      *tls.Certificate
	certMod   time.Time
	keyMod    time.Time
	lastCheck time.Time
}

// certCheckInterval is how often CertificateFiles looks at its files.
const certCheckInterval = 10 * time.Second

// LoadCertificateFiles loads the key pair in certFile and keyFile.
func LoadCertificateFiles(logger klog.Logger, certFile, keyFile string) (*CertificateFiles, error) {
	c := &CertificateFiles{certFile: certFile, keyFile: keyFile, logger: logger, now: time.Now}
	if err := c.reload(c.now()); err != nil {
		return nil, err
	}
	return c, nil
}

// GetCertificate returns the current key pair (tls.Config.GetCertificate).
func (c *CertificateFiles) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := c.now(); now.Sub(c.lastCheck) >= certCheckInterval {
		if err := c.reload(now); err != nil {
			c.logger.Error(err, "Reloading the serving certificate; keeping the previous one")
		}
	}
	return c.cert, nil
}

// reload reads the files if they changed since the last load; mu held or
// not yet shared.
func (c *CertificateFiles) reload(now time.Time) error {
	c.lastCheck = now
	certInfo, err := os.Stat(c.certFile)
	if err != nil {
		return err
	}
	keyInfo, err := os.Stat(c.keyFile)
	if err != nil {
		return err
	}
	if c.cert != nil && certInfo.ModTime().Equal(c.certMod) && keyInfo.ModTime().Equal(c.keyMod) {
		return nil
	}
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return fmt.Errorf("loading %s and %s: %w", c.certFile, c.keyFile, err)
	}
	if c.cert != nil {
		c.logger.Info("Reloaded the serving certificate", "certFile", c.certFile)
	}
	c.cert, c.certMod, c.keyMod = &cert, certInfo.ModTime(), keyInfo.ModTime()
	return nil
}
