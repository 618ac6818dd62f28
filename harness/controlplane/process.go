package controlplane

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// DefaultStopGracePeriod is how long Stop waits after SIGTERM before it sends
// SIGKILL. kube-apiserver lingers 10+ s after SIGTERM while watches are open.
const DefaultStopGracePeriod = 15 * time.Second

// ProcessSpec describes a process to start with StartProcess.
type ProcessSpec struct {
	// Name names the process; its log is Dir/<Name>.log, its PID file Dir/<Name>.pid.
	Name string
	// Path is the executable.
	Path string
	// Args are the arguments, without the executable.
	Args []string
	// Env is appended to the caller's environment (later entries win).
	Env []string
	// Dir receives the log and PID files; it is also the working directory.
	Dir string
	// Detach starts the process in its own session so that it outlives the
	// caller. Otherwise it gets its own process group and SIGKILL when the
	// caller dies (Pdeathsig), so a killed test binary leaks nothing.
	Detach bool
}

// Process is a child process running in its own process group, its output
// going to a log file.
type Process struct {
	Name    string
	Path    string
	PID     int
	LogPath string
	PIDFile string

	done    chan struct{}
	waitErr error
}

// StartProcess starts spec's executable with stdout and stderr appended to
// Dir/<Name>.log and writes its PID to Dir/<Name>.pid.
func StartProcess(spec ProcessSpec) (*Process, error) {
	p := &Process{
		Name:    spec.Name,
		Path:    spec.Path,
		LogPath: filepath.Join(spec.Dir, spec.Name+".log"),
		PIDFile: filepath.Join(spec.Dir, spec.Name+".pid"),
		done:    make(chan struct{}),
	}
	logFile, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child has its own copy
	fmt.Fprintf(logFile, "=== %s starting %s %s\n", time.Now().Format(time.RFC3339), spec.Path, strings.Join(spec.Args, " "))

	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Dir = spec.Dir
	if len(spec.Env) > 0 {
		cmd.Env = append(os.Environ(), spec.Env...)
	}
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	if spec.Detach {
		// A new session: no controlling terminal, so no SIGHUP when it closes.
		// The session leader is also the leader of a new process group.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	} else {
		// Pdeathsig fires when the thread that started the child exits. Go
		// only ends threads whose goroutine exits while locked to them
		// (runtime.LockOSThread); do not call StartProcess from such a goroutine.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", spec.Name, err)
	}
	p.PID = cmd.Process.Pid
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	// /proc/<pid>/exe names the executable with symlinks resolved.
	exe, err := filepath.Abs(spec.Path)
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err == nil {
		err = writePIDFile(p.PIDFile, p.PID, exe)
	}
	if err != nil {
		_ = p.Stop(0)
		return nil, err
	}
	return p, nil
}

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Running reports whether the process has not exited yet.
func (p *Process) Running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Stop sends SIGTERM to the process group, waits up to grace for the process
// to exit, then sends SIGKILL to the group and waits for the exit. It removes
// the PID file. Stopping a process that has exited only removes the PID file.
func (p *Process) Stop(grace time.Duration) error {
	if p.Running() {
		_ = syscall.Kill(-p.PID, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(grace):
			_ = syscall.Kill(-p.PID, syscall.SIGKILL)
			select {
			case <-p.done:
			case <-time.After(10 * time.Second):
				return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.Name, p.PID)
			}
		}
	}
	if err := os.Remove(p.PIDFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// Kill sends SIGKILL to the process group at once, without the SIGTERM that
// Stop sends first (so the process gets no chance to clean up, as when a
// node or container runtime kills it), and waits for the process to exit. It
// removes the PID file.
func (p *Process) Kill() error {
	if p.Running() {
		_ = syscall.Kill(-p.PID, syscall.SIGKILL)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.Name, p.PID)
		}
	}
	if err := os.Remove(p.PIDFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// ExitError returns how the process ended (nil for exit status 0) once
// Done is closed; nil while it runs.
func (p *Process) ExitError() error {
	if p.Running() {
		return nil
	}
	return p.waitErr
}

// exitError describes the exit of a process that should still be running.
func (p *Process) exitError() error {
	return fmt.Errorf("%s exited (%v); last lines of %s:\n%s", p.Name, p.waitErr, p.LogPath, LogTail(p.LogPath, 20))
}

// WaitHTTP polls url with client until it answers 200 OK, ctx ends or the
// process exits; the last two return an error that includes the log's tail.
func (p *Process) WaitHTTP(ctx context.Context, client *http.Client, url string, header http.Header) error {
	var lastErr error
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	for {
		lastErr = probe(ctx, client, url, header)
		if lastErr == nil {
			return nil
		}
		select {
		case <-p.done:
			return p.exitError()
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s at %s: %w (last error: %v); last lines of %s:\n%s",
				p.Name, url, ctx.Err(), lastErr, p.LogPath, LogTail(p.LogPath, 20))
		case <-ticker.C:
		}
	}
}

func probe(ctx context.Context, client *http.Client, url string, header http.Header) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body := make([]byte, 512)
	n, _ := resp.Body.Read(body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(body[:n]))
	}
	return nil
}

// InsecureHTTPClient is for probing loopback health endpoints served with
// self-signed certificates.
func InsecureHTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // loopback health probes only
	}}
}

// LogTail returns the last n lines of the file at path.
func LogTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// writePIDFile writes the PID on the first line and the executable on the
// second; the latter guards StopPIDFile against a recycled PID.
func writePIDFile(path string, pid int, exe string) error {
	return os.WriteFile(path, []byte(fmt.Sprintf("%d\n%s\n", pid, exe)), 0o644)
}

// readPIDFile returns the PID and executable written by writePIDFile.
func readPIDFile(path string) (int, string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, "", err
	}
	lines := strings.SplitN(strings.TrimSpace(string(data)), "\n", 2)
	pid, err := strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil || pid <= 1 {
		return 0, "", fmt.Errorf("%s: no valid PID", path)
	}
	exe := ""
	if len(lines) == 2 {
		exe = strings.TrimSpace(lines[1])
	}
	return pid, exe, nil
}

// pidAlive reports whether pid names a live (not zombie) process running exe
// (any executable if exe is empty). The init process of some sandboxes does
// not reap orphans, so zombies count as dead.
func pidAlive(pid int, exe string) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name, which may contain spaces.
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X') {
		return false
	}
	if exe == "" {
		return true
	}
	link, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return false
	}
	return strings.TrimSuffix(link, " (deleted)") == exe
}

// PIDFileAlive reports whether the PID file at path names a live process
// started from the executable it records.
func PIDFileAlive(path string) bool {
	pid, exe, err := readPIDFile(path)
	return err == nil && pidAlive(pid, exe)
}

// StopPIDFile stops the process named by the PID file at path, which need not
// be a child of the caller: SIGTERM to its process group, up to grace for it
// to exit, then SIGKILL. It removes the PID file. A PID file whose process is
// gone (or whose PID now runs another executable) is just removed.
func StopPIDFile(path string, grace time.Duration) error {
	pid, err := stopPIDFile(path, grace)
	waitReaped([]int{pid}, reapTimeout)
	return err
}

// reapTimeout bounds the wait for a stopped process that is not our child to
// disappear: it stays a zombie until its new parent (usually init) reaps it,
// and tools such as pgrep still list it until then. Some init processes reap
// only every second or so.
const reapTimeout = 3 * time.Second

// stopPIDFile is StopPIDFile without waitReaped; it returns the PID it
// stopped, 0 if none was running.
func stopPIDFile(path string, grace time.Duration) (int, error) {
	pid, exe, err := readPIDFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return 0, nil
		}
		return 0, err
	}
	if !pidAlive(pid, exe) {
		pid = 0
	} else {
		target := pid
		if pgid, err := syscall.Getpgid(pid); err == nil && pgid == pid {
			target = -pid // it leads its own group: signal the whole group
		}
		_ = syscall.Kill(target, syscall.SIGTERM)
		if !waitGone(pid, exe, grace) {
			_ = syscall.Kill(target, syscall.SIGKILL)
			if !waitGone(pid, exe, 10*time.Second) {
				return pid, fmt.Errorf("pid %d (%s) did not exit after SIGKILL", pid, exe)
			}
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return pid, err
	}
	return pid, nil
}

// waitReaped waits until /proc has no entry for any of pids (0s are
// skipped), at most timeout in all.
func waitReaped(pids []int, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for _, pid := range pids {
		if pid == 0 {
			continue
		}
		for time.Now().Before(deadline) {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); errors.Is(err, os.ErrNotExist) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func waitGone(pid int, exe string, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for pidAlive(pid, exe) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// PIDFiles returns the PID files (*.pid) in dir.
func PIDFiles(dir string) ([]string, error) {
	return filepath.Glob(filepath.Join(dir, "*.pid"))
}

// StopDir stops every process with a PID file in dir: first those that are
// not part of the control plane (its clients, such as a scheduler), then
// kube-apiserver, then etcd. It returns the names (PID file base names) of the
// processes that were still running.
func StopDir(dir string, grace time.Duration) ([]string, error) {
	files, err := PIDFiles(dir)
	if err != nil {
		return nil, err
	}
	name := func(path string) string { return strings.TrimSuffix(filepath.Base(path), ".pid") }
	rank := func(path string) int {
		// Unknown processes first: they are clients of the control plane.
		return slices.Index(stopOrder, name(path))
	}
	slices.SortStableFunc(files, func(a, b string) int { return rank(a) - rank(b) })
	var stopped []string
	var pids []int
	var errs []error
	for _, f := range files {
		pid, err := stopPIDFile(f, grace)
		if pid != 0 {
			stopped = append(stopped, name(f))
			pids = append(pids, pid)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	waitReaped(pids, reapTimeout)
	return stopped, errors.Join(errs...)
}

// stopOrder lists the control plane's processes in the order to stop them.
var stopOrder = []string{APIServerName, EtcdName}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
