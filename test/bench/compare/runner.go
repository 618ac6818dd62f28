package compare

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Runner runs scheduler_perf workloads with a test binary of test/bench
// (`go test -c`), one process per run.
type Runner struct {
	// Binary is the test binary.
	Binary string
	// Dir is test/bench: the config and its templates are relative to it.
	Dir string
	// Out holds a directory per run: scheduler_perf's data items, the
	// output, and the run's record (result.json).
	Out string
	// Env is the runs' environment; scheduler_perf starts etcd from PATH.
	Env []string
	// LoadAvg reads the 1-minute load average; nil reads /proc/loadavg.
	LoadAvg func() (float64, error)
	// RunID names the invocation the runs belong to, and Commit the
	// source they measured (`git describe --always --dirty`): a report
	// rebuilt from Out reads the runs of one invocation only.
	RunID, Commit string
}

// record is a run's result.json.
type record struct {
	Rep      int       `json:"rep"`
	Order    int       `json:"order"`
	Base     string    `json:"base"`
	Workload string    `json:"workload"`
	Nodes    int       `json:"nodes"`
	Short    bool      `json:"short,omitempty"`
	Side     string    `json:"side"`
	MaxLoad1 float64   `json:"maxLoad1"`
	Start    time.Time `json:"start"`
	Seconds  float64   `json:"seconds"`
	Err      string    `json:"error,omitempty"`
	RunID    string    `json:"runID,omitempty"`
	Commit   string    `json:"commit,omitempty"`
}

// RunDir is where run's files go.
func (r *Runner) RunDir(run Run, order int) string {
	return filepath.Join(r.Out, fmt.Sprintf("r%02d-%d-%s-%s", run.Rep, order, run.Workload.TestCase(run.Side), run.Workload.Name))
}

// Run runs one side of one workload, extra appended to the test binary's
// arguments (e.g. -test.cpuprofile=FILE).
func (r *Runner) Run(ctx context.Context, run Run, order int, extra ...string) Result {
	dir := r.RunDir(run, order)
	res := Result{Run: run, Order: order, Start: time.Now()}
	if err := os.RemoveAll(dir); err != nil {
		res.Err = err.Error()
		return res
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		res.Err = err.Error()
		return res
	}
	bench := fmt.Sprintf("^BenchmarkPerfScheduling$/^%s$/^%s$", run.Workload.TestCase(run.Side), run.Workload.Name)
	filter := "performance"
	if run.Workload.Short {
		filter = "performance,short"
	}
	err := r.exec(ctx, dir, &res, bench, filter, extra...)
	res.Duration = time.Since(res.Start)
	if err != nil {
		res.Err = err.Error()
	} else if samples, err := ReadDir(dir); err != nil {
		res.Err = err.Error()
	} else {
		res.Sample, res.Err = sampleOf(samples, key(run.Workload.TestCase(run.Side), run.Workload.Name))
	}
	if err := writeRecord(dir, res, r.RunID, r.Commit); err != nil && res.Err == "" {
		res.Err = err.Error()
	}
	return res
}

// sampleOf is the sample of k, or why there is none: no data items, or no
// measured window (test/bench/window.go), without which the latencies
// would cover the warm-up.
func sampleOf(samples map[Key]Sample, k Key) (*Sample, string) {
	s, ok := samples[k]
	switch {
	case !ok:
		return nil, "no data items"
	case !s.Windowed:
		return nil, "no measured window (window-*.json): the workload lacks its window-start/window-stop markers"
	}
	return &s, ""
}

// RunAllShort runs the short variant of every workload in one process
// (cheaper than a process per run) and returns one result per side.
func (r *Runner) RunAllShort(ctx context.Context, workloads []Workload) ([]Result, error) {
	dir := filepath.Join(r.Out, "short")
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var all Result
	all.Start = time.Now()
	if err := r.exec(ctx, dir, &all, "^BenchmarkPerfScheduling$", "performance,short"); err != nil {
		return nil, err
	}
	samples, err := ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var results []Result
	for _, w := range workloads {
		if !w.Short {
			continue
		}
		for i, side := range []string{Vanilla, Tandem} {
			res := Result{Run: Run{Rep: 1, Workload: w, Side: side}, Order: i + 1, MaxLoad1: all.MaxLoad1, Start: all.Start}
			res.Sample, res.Err = sampleOf(samples, key(w.TestCase(side), w.Name))
			results = append(results, res)
		}
	}
	return results, nil
}

// exec runs the test binary in r.Dir with output to dir/output.txt,
// recording the highest load average into res.
func (r *Runner) exec(ctx context.Context, dir string, res *Result, bench, filter string, extra ...string) error {
	out, err := os.Create(filepath.Join(dir, "output.txt"))
	if err != nil {
		return err
	}
	defer out.Close()
	args := append([]string{
		"-test.run=^$", "-test.bench=" + bench, "-test.benchtime=1x", "-test.timeout=60m",
		"-perf-scheduling-label-filter=" + filter, "-data-items-dir=" + dir,
	}, extra...)
	cmd := exec.CommandContext(ctx, r.Binary, args...)
	cmd.Dir = r.Dir
	// ARTIFACTS: scheduler_perf writes each workload's log to a file there
	// and deletes it when the workload passes.
	cmd.Env = append(append([]string{}, r.Env...), "ARTIFACTS="+dir)
	cmd.Stdout, cmd.Stderr = out, out

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { res.MaxLoad1 = r.watchLoad(stop) })
	err = cmd.Run()
	close(stop)
	wg.Wait()
	if err != nil {
		return fmt.Errorf("%s: %w (output in %s)", bench, err, out.Name())
	}
	return nil
}

// watchLoad samples the load average every 2 s until stop and returns the
// highest sample.
func (r *Runner) watchLoad(stop <-chan struct{}) float64 {
	read := r.LoadAvg
	if read == nil {
		read = ReadLoadAvg
	}
	highest := 0.0
	sample := func() {
		if l, err := read(); err == nil && l > highest {
			highest = l
		}
	}
	sample()
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			sample()
			return highest
		case <-t.C:
			sample()
		}
	}
}

// ReadLoadAvg returns the 1-minute load average from /proc/loadavg.
func ReadLoadAvg() (float64, error) {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, err
	}
	fields := strings.Fields(string(data))
	if len(fields) == 0 {
		return 0, errors.New("/proc/loadavg is empty")
	}
	return strconv.ParseFloat(fields[0], 64)
}

func writeRecord(dir string, res Result, runID, commit string) error {
	rec := record{
		Rep: res.Rep, Order: res.Order, Base: res.Workload.Base, Workload: res.Workload.Name, Nodes: res.Workload.Nodes,
		Short: res.Workload.Short, Side: res.Side, MaxLoad1: res.MaxLoad1, Start: res.Start,
		Seconds: res.Duration.Seconds(), Err: res.Err, RunID: runID, Commit: commit,
	}
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "result.json"), data, 0o644)
}

// ReadResults reads back the runs under out (their result.json and data
// items), e.g. to rebuild a report from an interrupted run: those of the
// invocation runID, or of the latest invocation when runID is empty. Runs
// of earlier invocations (another commit, other repetitions) are left out,
// and so is what a run measured outside its window. It returns the
// invocation read and the commit it measured.
func ReadResults(out, runID string) ([]Result, string, string, error) {
	files, err := filepath.Glob(filepath.Join(out, "r*-*", "result.json"))
	if err != nil {
		return nil, "", "", err
	}
	type read struct {
		file string
		rec  record
	}
	var recs []read
	var latest time.Time
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, "", "", err
		}
		var rec record
		if err := json.Unmarshal(data, &rec); err != nil {
			return nil, "", "", fmt.Errorf("%s: %w", file, err)
		}
		recs = append(recs, read{file, rec})
		if runID == "" || rec.RunID == runID {
			if rec.Start.After(latest) {
				latest = rec.Start
			}
		}
	}
	if runID == "" {
		for _, r := range recs {
			if r.rec.Start.Equal(latest) {
				runID = r.rec.RunID
			}
		}
	}
	var results []Result
	commit := ""
	for _, r := range recs {
		rec := r.rec
		if rec.RunID != runID {
			continue
		}
		commit = rec.Commit
		w := Workload{Base: rec.Base, Name: rec.Workload, Nodes: rec.Nodes, Short: rec.Short}
		res := Result{
			Run: Run{Rep: rec.Rep, Workload: w, Side: rec.Side}, Order: rec.Order, MaxLoad1: rec.MaxLoad1,
			Start: rec.Start, Duration: time.Duration(rec.Seconds * float64(time.Second)), Err: rec.Err,
		}
		if rec.Err == "" {
			samples, err := ReadDir(filepath.Dir(r.file))
			if err != nil {
				return nil, "", "", err
			}
			res.Sample, res.Err = sampleOf(samples, key(w.TestCase(rec.Side), w.Name))
		}
		results = append(results, res)
	}
	if len(results) == 0 {
		return nil, "", "", fmt.Errorf("%s holds no runs of invocation %q", out, runID)
	}
	return results, runID, commit, nil
}
