package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The built binary keeps running until it is sent SIGTERM, then exits 0: a
// placeholder stops at once and never shows as failed.
func TestStopsOnSIGTERM(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "tandem-pause")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		cmd := exec.Command(bin)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// It says so once its handler is installed; a signal before would
		// kill it.
		if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || !strings.Contains(line, "until SIGTERM") {
			t.Fatalf("tandem-pause's first line = %q (%v), want it to say it waits for SIGTERM", line, err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("tandem-pause on %v: %v, want exit status 0", sig, err)
			}
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Signal(os.Kill)
			t.Fatalf("tandem-pause did not exit within 10s of %v", sig)
		}
	}
}
