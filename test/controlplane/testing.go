package controlplane

import (
	"os"
	"path/filepath"
	"testing"
)

// StartForTest starts a control plane in a new temporary directory and
// registers its Stop with t.Cleanup. It fails the test if the start fails.
// When the test has failed, Cleanup logs the tail of both logs and keeps the
// directory.
func StartForTest(t testing.TB) *ControlPlane {
	t.Helper()
	dir, err := os.MkdirTemp("", "tandem-controlplane-")
	if err != nil {
		t.Fatal(err)
	}
	cp, err := Start(t.Context(), Options{Dir: dir})
	if err != nil {
		t.Fatalf("starting the control plane (logs in %s): %v", dir, err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Errorf("stopping the control plane: %v", err)
		}
		if t.Failed() {
			for _, name := range []string{EtcdName, APIServerName} {
				log := filepath.Join(dir, name+".log")
				t.Logf("last lines of %s:\n%s", log, LogTail(log, 30))
			}
			t.Logf("control plane directory kept: %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	return cp
}
