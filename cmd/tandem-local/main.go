// Command tandem-local runs a local control plane (etcd, kube-apiserver and
// optionally tandem-scheduler) from the binaries in bin/, detached, for
// manual work and make targets.
//
//	tandem-local up [--dir _output/local] [--scheduler-config FILE] [-- SCHEDULER-ARGS...]
//	tandem-local down [--dir _output/local]
//
// up prints `export KUBECONFIG=...` on stdout (everything else goes to
// stderr), so `eval "$(tandem-local up)"` works.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/tandem-scheduler/tandem/test/controlplane"
)

const (
	defaultDir    = "_output/local"
	schedulerName = "tandem-scheduler"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "up":
		err = up(os.Args[2:])
	case "down":
		err = down(os.Args[2:])
	case "-h", "--help", "help":
		usage()
	default:
		fmt.Fprintf(os.Stderr, "unknown command %q\n", os.Args[1])
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "tandem-local %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintf(os.Stderr, `usage:
  tandem-local up [--dir DIR] [--bin-dir DIR] [--scheduler-config FILE] [-- SCHEDULER-ARGS...]
  tandem-local down [--dir DIR]
`)
	os.Exit(2)
}

func up(args []string) error {
	fs := flag.NewFlagSet("up", flag.ExitOnError)
	dir := fs.String("dir", defaultDir, "directory for data, logs, PID files and the kubeconfig")
	binDir := fs.String("bin-dir", "", "directory with etcd, kube-apiserver and tandem-scheduler (default $"+controlplane.BinDirEnv+", else bin/ at the module root)")
	schedulerConfig := fs.String("scheduler-config", "", "if set, also start bin/tandem-scheduler with this KubeSchedulerConfiguration file")
	_ = fs.Parse(args)
	schedulerArgs := fs.Args() // after "--"

	absDir, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	resolvedBinDir, err := controlplane.ResolveBinDir(*binDir)
	if err != nil {
		return err
	}
	if files, _ := controlplane.PIDFiles(absDir); len(files) > 0 {
		for _, f := range files {
			if controlplane.PIDFileAlive(f) {
				return fmt.Errorf("%s is running (%s): run `tandem-local down --dir %s` first", filepath.Base(f), f, *dir)
			}
		}
	}

	// Check the scheduler's inputs before starting anything.
	var schedulerBin, schedulerConfigPath string
	if *schedulerConfig != "" {
		schedulerBin = filepath.Join(resolvedBinDir, schedulerName)
		if _, err := os.Stat(schedulerBin); err != nil {
			return fmt.Errorf("%s is missing: build the scheduler first (go build -o %s ./cmd/tandem-scheduler, with the ldflags from hack/lib/version.sh): %w", schedulerBin, schedulerBin, err)
		}
		if schedulerConfigPath, err = filepath.Abs(*schedulerConfig); err != nil {
			return err
		}
		if _, err := os.Stat(schedulerConfigPath); err != nil {
			return fmt.Errorf("scheduler config: %w", err)
		}
	} else if len(schedulerArgs) > 0 {
		return errors.New("scheduler arguments given without --scheduler-config")
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	started := time.Now()
	cp, err := controlplane.Start(ctx, controlplane.Options{Dir: absDir, BinDir: resolvedBinDir, Detach: true})
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "%-16s pid %-7d %s  log %s\n", controlplane.EtcdName, cp.Etcd().PID, cp.EtcdURL(), cp.Etcd().LogPath)
	fmt.Fprintf(os.Stderr, "%-16s pid %-7d %s  log %s\n", controlplane.APIServerName, cp.APIServer().PID, cp.URL(), cp.APIServer().LogPath)

	if schedulerBin != "" {
		p, url, err := startScheduler(ctx, schedulerBin, schedulerConfigPath, cp, schedulerArgs)
		if err != nil {
			if _, stopErr := controlplane.StopDir(absDir, 5*time.Second); stopErr != nil {
				err = errors.Join(err, stopErr)
			}
			return err
		}
		fmt.Fprintf(os.Stderr, "%-16s pid %-7d %s  log %s\n", schedulerName, p.PID, url, p.LogPath)
	}
	fmt.Fprintf(os.Stderr, "up in %.1fs; stop with: go run ./cmd/tandem-local down --dir %s\n", time.Since(started).Seconds(), *dir)
	fmt.Printf("export KUBECONFIG=%s\n", cp.KubeconfigPath())
	return nil
}

// startScheduler starts the scheduler detached and waits for its /healthz.
func startScheduler(ctx context.Context, bin, config string, cp *controlplane.ControlPlane, extraArgs []string) (*controlplane.Process, string, error) {
	port, err := controlplane.FreePort()
	if err != nil {
		return nil, "", err
	}
	config, err = localSchedulerConfig(config, cp.KubeconfigPath(), cp.Dir())
	if err != nil {
		return nil, "", err
	}
	args := append([]string{
		"--config=" + config,
		// A bare apiserver has no extension-apiserver-authentication ConfigMap.
		"--authentication-skip-lookup=true",
		// Delegated authn/authz of /metrics requests (TokenReview and
		// SubjectAccessReview) through the admin kubeconfig.
		"--authentication-kubeconfig=" + cp.KubeconfigPath(),
		"--authorization-kubeconfig=" + cp.KubeconfigPath(),
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
	}, extraArgs...)
	p, err := controlplane.StartProcess(controlplane.ProcessSpec{
		Name: schedulerName, Path: bin, Args: args, Dir: cp.Dir(), Detach: true,
	})
	if err != nil {
		return nil, "", err
	}
	url := fmt.Sprintf("https://127.0.0.1:%d", port)
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := p.WaitHTTP(ctx, controlplane.InsecureHTTPClient(), url+"/healthz", nil); err != nil {
		return nil, "", err
	}
	return p, url, nil
}

// localSchedulerConfig writes a copy of the KubeSchedulerConfiguration at
// src into dir with clientConnection.kubeconfig set to kubeconfig, and returns
// its path. kube-scheduler ignores its --kubeconfig flag when --config is set.
func localSchedulerConfig(src, kubeconfig, dir string) (string, error) {
	data, err := os.ReadFile(src)
	if err != nil {
		return "", err
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return "", fmt.Errorf("parsing %s: %w", src, err)
	}
	if cfg == nil {
		return "", fmt.Errorf("%s is empty", src)
	}
	clientConnection, _ := cfg["clientConnection"].(map[string]any)
	if clientConnection == nil {
		clientConnection = map[string]any{}
	}
	clientConnection["kubeconfig"] = kubeconfig
	cfg["clientConnection"] = clientConnection
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return "", err
	}
	out = append([]byte("# Generated by tandem-local from "+src+" with clientConnection.kubeconfig set.\n"), out...)
	path := filepath.Join(dir, schedulerName+"-config.yaml")
	return path, os.WriteFile(path, out, 0o644)
}

func down(args []string) error {
	fs := flag.NewFlagSet("down", flag.ExitOnError)
	dir := fs.String("dir", defaultDir, "directory given to up")
	grace := fs.Duration("grace", controlplane.DefaultStopGracePeriod, "how long to wait after SIGTERM before SIGKILL")
	_ = fs.Parse(args)
	started := time.Now()
	stopped, err := controlplane.StopDir(*dir, *grace)
	for _, name := range stopped {
		fmt.Fprintf(os.Stderr, "stopped %s\n", name)
	}
	if len(stopped) == 0 && err == nil {
		fmt.Fprintf(os.Stderr, "nothing was running in %s\n", *dir)
	} else {
		fmt.Fprintf(os.Stderr, "down in %.1fs\n", time.Since(started).Seconds())
	}
	return err
}
