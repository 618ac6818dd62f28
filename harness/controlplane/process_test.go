package controlplane

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestStartProcessEnv(t *testing.T) {
	t.Setenv("TANDEM_TEST_INHERITED", "kept")
	dir := t.TempDir()
	p, err := StartProcess(ProcessSpec{
		Name: "env",
		Path: "/bin/sh",
		Args: []string{"-c", `echo "inherited=$TANDEM_TEST_INHERITED added=$TANDEM_TEST_ADDED"`},
		Dir:  dir,
		Env:  []string{"TANDEM_TEST_ADDED=yes"},
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("sh did not exit")
	}
	log, err := os.ReadFile(p.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	if want := "inherited=kept added=yes"; !strings.Contains(string(log), want) {
		t.Errorf("log = %q, want it to contain %q", log, want)
	}
}
