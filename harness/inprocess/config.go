package inprocess

import (
	"fmt"
	"strings"
	"time"

	"github.com/tandem-scheduler/tandem/pkg/workflowreservation"
)

// Profile describes the one profile of a KubeSchedulerConfiguration built by
// Config.
type Profile struct {
	// SchedulerName is the profile's schedulerName.
	SchedulerName string
	// Tandem enables WorkflowReservation as manifests/scheduler-config.yaml
	// ships it: at multiPoint, at bind ahead of DefaultBinder, and in place
	// of NodeResourcesFit (which it runs).
	Tandem bool
	// Scoring is LeastAllocated (default) or MostAllocated, for
	// NodeResourcesFit, or for WorkflowReservation's score with Tandem.
	Scoring string
	// ReservationMode sets WorkflowReservation's reservationMode.
	ReservationMode string
	// Args are more WorkflowReservation args, as YAML lines at the args
	// level (e.g. "defaultWorkflowRequests: {cpu: 500m}"); Tandem only.
	Args []string
	// VolumeBinding, when set, names a plugin the profile runs in place of
	// the in-tree VolumeBinding (the simulator's storage.VolumeBindingName,
	// registered with WithRegistry).
	VolumeBinding string
	// BackoffSeconds sets podInitialBackoffSeconds and podMaxBackoffSeconds
	// when not zero.
	BackoffSeconds int
	// LeaderElection turns kube-scheduler's leader election on, on the
	// Lease it names; nil keeps it off.
	LeaderElection *LeaderElection
}

// LeaderElection is kube-scheduler's leader election on a Lease, for
// replicas that fail over to each other.
type LeaderElection struct {
	// ResourceName and ResourceNamespace name the Lease; the shipped profile
	// uses tandem-scheduler in kube-system.
	ResourceName, ResourceNamespace string
	// LeaseDuration, RenewDeadline and RetryPeriod; zero keeps
	// kube-scheduler's defaults (15s, 10s, 2s).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// Config renders p as a KubeSchedulerConfiguration for Start. With Tandem,
// Scoring MostAllocated and no Args it is manifests/scheduler-config.yaml
// except for what TestConfigMatchesShipped lists as the only differences
// (without Scoring it is LeastAllocated, kube-scheduler's default):
//   - leader election is off unless LeaderElection is set: one scheduler
//     per run, which a test may stop and start again at once, without
//     waiting for a lease;
//   - no defaultWorkflowRequests or defaultStepRequests: every test and
//     scenario states its runners' sizes, so a reservation never comes from
//     a default nobody asked for;
//   - no runnerNamespaces or hookTemplateNamespaces: every test and
//     scenario has namespaces of its own;
//   - no placeholderImage: no container runs on the local control plane,
//     so the plugin's default does.
func Config(p Profile) string {
	scoring := p.Scoring
	if scoring == "" {
		scoring = "LeastAllocated"
	}
	var b strings.Builder
	b.WriteString("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nleaderElection:\n")
	if le := p.LeaderElection; le != nil {
		fmt.Fprintf(&b, "  leaderElect: true\n  resourceName: %s\n  resourceNamespace: %s\n", le.ResourceName, le.ResourceNamespace)
		for _, d := range []struct {
			key   string
			value time.Duration
		}{{"leaseDuration", le.LeaseDuration}, {"renewDeadline", le.RenewDeadline}, {"retryPeriod", le.RetryPeriod}} {
			if d.value > 0 {
				fmt.Fprintf(&b, "  %s: %s\n", d.key, d.value)
			}
		}
	} else {
		b.WriteString("  leaderElect: false\n")
	}
	if p.BackoffSeconds > 0 {
		fmt.Fprintf(&b, "podInitialBackoffSeconds: %d\npodMaxBackoffSeconds: %d\n", p.BackoffSeconds, p.BackoffSeconds)
	}
	fmt.Fprintf(&b, "profiles:\n- schedulerName: %s\n", p.SchedulerName)
	plugin, args := "NodeResourcesFit", []string{}
	var enabled, disabled []string
	if p.Tandem {
		plugin, args = workflowreservation.Name, p.Args
		enabled = append(enabled, plugin)
	}
	if p.VolumeBinding != "" {
		enabled, disabled = append(enabled, p.VolumeBinding), append(disabled, "VolumeBinding")
	}
	if len(enabled) > 0 {
		b.WriteString("  plugins:\n    multiPoint:\n")
		writePlugins(&b, "enabled", enabled)
		writePlugins(&b, "disabled", disabled)
	}
	if p.Tandem {
		fmt.Fprintf(&b, `    bind:
      enabled:
      - name: %[1]s
    preFilter:
      disabled:
      - name: NodeResourcesFit
    filter:
      disabled:
      - name: NodeResourcesFit
    preScore:
      disabled:
      - name: NodeResourcesFit
    score:
      disabled:
      - name: NodeResourcesFit
`, plugin)
		if p.ReservationMode != "" {
			args = append([]string{"reservationMode: " + p.ReservationMode}, args...)
		}
	}
	b.WriteString("  pluginConfig:\n")
	if p.Tandem {
		// As the shipped profile: no default spreading, which turns off
		// opportunistic batching.
		b.WriteString("  - name: PodTopologySpread\n    args:\n      defaultingType: List\n")
	}
	fmt.Fprintf(&b, `  - name: %s
    args:
      scoringStrategy:
        type: %s
        resources:
        - {name: cpu, weight: 1}
        - {name: memory, weight: 1}
`, plugin, scoring)
	if p.Tandem && p.BackoffSeconds > 0 {
		// The plugin waits out the scheduler's backoff when it activates.
		args = append(append([]string(nil), args...), fmt.Sprintf("podInitialBackoffSeconds: %d", p.BackoffSeconds), fmt.Sprintf("podMaxBackoffSeconds: %d", p.BackoffSeconds))
	}
	for _, line := range args {
		fmt.Fprintf(&b, "      %s\n", line)
	}
	return b.String()
}

// writePlugins writes a plugin set's enabled or disabled list, if any.
func writePlugins(b *strings.Builder, key string, names []string) {
	if len(names) == 0 {
		return
	}
	fmt.Fprintf(b, "      %s:\n", key)
	for _, name := range names {
		fmt.Fprintf(b, "      - name: %s\n", name)
	}
}
