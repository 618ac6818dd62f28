package compare

import (
	"strings"
	"testing"
)

func TestParseCycle(t *testing.T) {
	var out strings.Builder
	out.WriteString("goos: linux\npkg: github.com/tandem-scheduler/tandem/pkg/workflowreservation\n")
	// A runner case far above its target in every run, a plain-pod case
	// below it in every run, and one that straddles it.
	for i, r := range []struct{ slow, fast, mixed string }{
		{"1.30", "0.98", "1.00"}, {"1.25", "1.01", "1.12"}, {"1.28", "0.97", "1.02"}, {"1.31", "1.00", "1.15"}, {"1.27", "0.99", "1.04"},
	} {
		procs := "-2"
		if i == 0 {
			procs = "" // GOMAXPROCS 1 prints no suffix
		}
		out.WriteString("BenchmarkCycle/500Nodes/20000Held/Runner/tandem" + procs + " \t 100\t 650000 ns/op\t 170000 B/op\t 1200 allocs/op\t " + r.slow + " tandem/vanilla\t 1100 vanilla-allocs/op\t 500000 vanilla-ns/op\n")
		out.WriteString("BenchmarkCycle/500Nodes/0Held/PlainPod/tandem-pods-2 \t 100\t 500000 ns/op\t 1100 allocs/op\t " + r.fast + " tandem/vanilla\t 1100 vanilla-allocs/op\t 500000 vanilla-ns/op\n")
		out.WriteString("BenchmarkCycle/5000Nodes/1000Held/Runner/tandem-least-2 \t 100\t 1000000 ns/op\t 1100 allocs/op\t " + r.mixed + " tandem/vanilla\t 1100 vanilla-allocs/op\t 950000 vanilla-ns/op\n")
	}
	// A log line between a name and its results: that run is lost.
	out.WriteString("BenchmarkCycle/500Nodes/20000Held/Runner/tandem-2 \tI1205 08:48:37.356155   11088 plugin.go:119] \"Warning\"\n")
	out.WriteString(" \t 100\t 650000 ns/op\t 0.5 tandem/vanilla\t 1100 vanilla-allocs/op\t 500000 vanilla-ns/op\n")
	out.WriteString("PASS\nok  \tgithub.com/tandem-scheduler/tandem/pkg/workflowreservation\t60.1s\n")
	cases, err := ParseCycle(strings.NewReader(out.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) != 3 {
		t.Fatalf("%d cases, want 3: %+v", len(cases), cases)
	}
	want := []struct {
		name, kind, profile string
		nodes, held         int
		ratio, target       float64
		verdict             string
	}{
		{"500Nodes/20000Held/Runner/tandem", "Runner", "tandem", 500, 20000, 1.28, CycleRunnerTarget, NotMet},
		{"500Nodes/0Held/PlainPod/tandem-pods", "PlainPod", "tandem-pods", 500, 0, 0.99, CyclePlainPodTarget, Met},
		{"5000Nodes/1000Held/Runner/tandem-least", "Runner", "tandem-least", 5000, 1000, 1.04, CycleRunnerTarget, NotEstablished},
	}
	for i, w := range want {
		c := cases[i]
		if c.Name != w.name || c.Kind != w.kind || c.Profile != w.profile || c.Nodes != w.nodes || c.Held != w.held {
			t.Errorf("case %d = %s (%s, %s, %d nodes, %d held), want %s", i, c.Name, c.Kind, c.Profile, c.Nodes, c.Held, w.name)
		}
		if c.Runs != 5 || c.Ratio != w.ratio || c.Target != w.target || c.Verdict != w.verdict {
			t.Errorf("%s: %d runs, ratio %v, target %v, verdict %q; want 5, %v, %v, %q", c.Name, c.Runs, c.Ratio, c.Target, c.Verdict, w.ratio, w.target, w.verdict)
		}
		if c.RatioInterval == nil || c.RatioInterval.Low > c.Ratio || c.RatioInterval.High < c.Ratio {
			t.Errorf("%s: interval %v does not hold the median %v", c.Name, c.RatioInterval, c.Ratio)
		}
	}
	// The lost run is reported, and so is every case short of -count.
	err = CheckRuns(cases, 5)
	if err == nil || !strings.Contains(err.Error(), "500Nodes/20000Held/Runner/tandem: 5 runs (1 lost to a log line), want 5") ||
		strings.Contains(err.Error(), "PlainPod") {
		t.Errorf("CheckRuns(5) = %v, want the lost run reported, and only it", err)
	}
	if err := CheckRuns(cases[1:], 5); err != nil {
		t.Errorf("CheckRuns of the cases with 5 runs each = %v", err)
	}
	if err := CheckRuns(cases[1:], 6); err == nil || !strings.Contains(err.Error(), "500Nodes/0Held/PlainPod/tandem-pods: 5 runs (0 lost to a log line), want 6") {
		t.Errorf("CheckRuns(6) = %v, want the cases short of 6 runs reported", err)
	}
	if c := cases[0]; c.TandemNs != 650000 || c.VanillaNs != 500000 || c.TandemAllocs != 1200 || c.VanillaAllocs != 1100 {
		t.Errorf("%s: medians %+v", c.Name, c)
	}

	// Two runs make no interval: not established, whatever the ratio.
	two := strings.Join(strings.SplitAfter(out.String(), "\n")[2:8], "")
	cases, err = ParseCycle(strings.NewReader(two))
	if err != nil {
		t.Fatal(err)
	}
	if cases[0].Runs != 2 || cases[0].RatioInterval != nil || cases[0].Verdict != NotEstablished {
		t.Errorf("two runs: %+v, want no interval and %q", cases[0], NotEstablished)
	}
}

func TestParseCycleRejects(t *testing.T) {
	for name, line := range map[string]string{
		"no ratio":     "BenchmarkCycle/500Nodes/0Held/Runner/tandem-2 \t 1\t 500000 ns/op\t 500000 vanilla-ns/op\n",
		"unnamed case": "BenchmarkCycle/Runner-2 \t 1\t 500000 ns/op\t 1.0 tandem/vanilla\t 500000 vanilla-ns/op\n",
		"bad value":    "BenchmarkCycle/500Nodes/0Held/Runner/tandem-2 \t 1\t fast ns/op\t 1.0 tandem/vanilla\t 500000 vanilla-ns/op\n",
	} {
		if _, err := ParseCycle(strings.NewReader(line)); err == nil {
			t.Errorf("%s: no error for %q", name, line)
		}
	}
}
