package reservations

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tandem-scheduler/tandem/contract"
)

// A reservation of runner r1 (incarnation u1) on n1, in a given state.
type start func(r *Reservation)

var (
	unbound          start = func(r *Reservation) {}
	held             start = func(r *Reservation) { r.bound = true }
	claimAssumed     start = func(r *Reservation) { r.bound, r.claimedBy = true, "wf" }
	claimed          start = func(r *Reservation) { r.bound, r.claimedBy, r.claimSeen = true, "wf", true }
	claimedByOther   start = func(r *Reservation) { r.bound, r.claimedBy, r.claimSeen = true, "other", true }
	usedUpAssumed    start = func(r *Reservation) { r.bound, r.claimedBy, r.done = true, "wf", true }
	usedUp           start = func(r *Reservation) { r.bound, r.claimedBy, r.claimSeen, r.done = true, "wf", true, true }
	jobStarted       start = func(r *Reservation) { r.bound, r.jobStarted = true, time.Unix(100, 0) }
	stepsOnly        start = func(r *Reservation) { r.bound, r.jobStarted, r.noWorkflowPod = true, time.Unix(100, 0), true }
	startsByName           = map[string]start{"unbound": unbound, "held": held, "claimAssumed": claimAssumed, "claimed": claimed, "claimedByOther": claimedByOther, "usedUpAssumed": usedUpAssumed, "usedUp": usedUp, "jobStarted": jobStarted, "stepsOnly": stepsOnly}
	lifecycleRunner        = types.NamespacedName{Namespace: "arc", Name: "r1"}
	lifecycleCreated       = time.Unix(50, 0)
)

func lifecycleStore(from start) (*Store, *Reservation) {
	r := &Reservation{Runner: lifecycleRunner, RunnerUID: "u1", RunnerCreated: lifecycleCreated, Node: "n1",
		Size: contract.Amount{MilliCPU: 2000, Pods: 2}, Step: contract.Amount{MilliCPU: 500, Pods: 1}, StaleJob: "old-job", Stale: []types.UID{"stale-wf"}}
	from(r)
	s := NewStore()
	s.Take(r)
	return s, r
}

// describe is a reservation's lifecycle, as the table tests compare it.
func describe(s *Store) string {
	r, ok := s.Get(lifecycleRunner)
	if !ok {
		return "none"
	}
	return fmt.Sprintf("%s bound=%v by=%q seen=%v job=%v", r.State(), r.Bound(), r.ClaimedBy(), r.ClaimSeen(), !r.JobStarted().IsZero())
}

// heldPart is the part of a lifecycle the hold rule reads: the state and
// the claiming pod.
func heldPart(lifecycle string) string {
	f := strings.Fields(lifecycle)
	return f[0] + " " + f[2]
}

type verbCase struct {
	from start
	// do calls the verb and returns what it reported.
	do   func(s *Store, taken *Reservation) any
	want any
	// after is the reservation's lifecycle after the verb.
	after string
	// replaces: the verb puts a new reservation in place of the old one
	// (its node's cache is new with it), rather than changing it.
	replaces bool
}

func runVerbCases(t *testing.T, cases map[string]verbCase) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, r := lifecycleStore(tc.from)
			before := s.NodeVersion("n1")
			got := tc.do(s, r)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("reported %v, want %v", got, tc.want)
			}
			after := describe(s)
			if after != tc.after {
				t.Errorf("after: %s\nwant:  %s", after, tc.after)
			}
			// Filter caches what a node's reservations hold per version: a
			// change to what the hold rule reads (the state, the claiming
			// pod) must bump it; a refusal, or a change to what it does not
			// read (bound, claim seen, job started), must not.
			if changed := s.NodeVersion("n1") != before; !tc.replaces && after != "none" && changed != (heldPart(after) != heldPart(describeStart(tc.from))) {
				t.Errorf("node version changed: %v, but the lifecycle went from %q to %q", changed, describeStart(tc.from), after)
			}
			byPhase, _ := s.Counts()
			total := 0
			for _, n := range byPhase {
				total += n
			}
			if want := map[bool]int{true: 0, false: 1}[after == "none"]; total != want {
				t.Errorf("tally counts %d reservations (%v), want %d", total, byPhase, want)
			}
		})
	}
}

func describeStart(from start) string {
	s, _ := lifecycleStore(from)
	return describe(s)
}

func workflowPodOf(uid types.UID, node string, created time.Time) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "arc", Name: "r1-workflow", UID: uid, CreationTimestamp: metav1.NewTime(created)}, Spec: v1.PodSpec{NodeName: node}}
}

func TestTake(t *testing.T) {
	runVerbCases(t, map[string]verbCase{
		// Take replaces whatever the runner had: a new incarnation's cycle.
		"replaces a used-up one": {from: usedUp, do: func(s *Store, _ *Reservation) any {
			s.Take(&Reservation{Runner: lifecycleRunner, RunnerUID: "u2", Node: "n1", Size: contract.Amount{MilliCPU: 1, Pods: 1}})
			return nil
		}, want: nil, after: `Held bound=false by="" seen=false job=false`, replaces: true},
	})
}

func TestRebuild(t *testing.T) {
	runVerbCases(t, map[string]verbCase{
		"replaces and is bound": {from: unbound, do: func(s *Store, _ *Reservation) any {
			s.Rebuild(&Reservation{Runner: lifecycleRunner, RunnerUID: "u1", Node: "n1", Size: contract.Amount{MilliCPU: 1, Pods: 1}})
			return nil
		}, want: nil, after: `Held bound=true by="" seen=false job=false`, replaces: true},
	})
}

func TestReturn(t *testing.T) {
	ret := func(s *Store, taken *Reservation) any { return s.Return(taken) }
	runVerbCases(t, map[string]verbCase{
		"the unbound reservation taken": {from: unbound, do: ret, want: true, after: "none"},
		// A bind that reported a failure went through.
		"refused once bound": {from: held, do: ret, want: false, after: `Held bound=true by="" seen=false job=false`},
		"refused once replaced": {from: unbound, do: func(s *Store, taken *Reservation) any {
			c := *taken
			s.Take(&c)
			return s.Return(taken)
		}, want: false, after: `Held bound=false by="" seen=false job=false`},
	})
}

func TestMarkBound(t *testing.T) {
	runVerbCases(t, map[string]verbCase{
		"unbound":             {from: unbound, do: func(s *Store, _ *Reservation) any { return s.MarkBound(lifecycleRunner, "u1") }, want: true, after: `Held bound=true by="" seen=false job=false`},
		"already bound":       {from: held, do: func(s *Store, _ *Reservation) any { return s.MarkBound(lifecycleRunner, "u1") }, want: false, after: `Held bound=true by="" seen=false job=false`},
		"another incarnation": {from: unbound, do: func(s *Store, _ *Reservation) any { return s.MarkBound(lifecycleRunner, "u2") }, want: false, after: `Held bound=false by="" seen=false job=false`},
	})
}

func TestClaim(t *testing.T) {
	claim := func(runnerUID types.UID, node string) func(*Store, *Reservation) any {
		return func(s *Store, _ *Reservation) any {
			claimed, wasUsedUp := s.Claim(lifecycleRunner, runnerUID, "wf", node)
			return [2]bool{claimed, wasUsedUp}
		}
	}
	runVerbCases(t, map[string]verbCase{
		"held, on the reserved node": {from: held, do: claim("u1", "n1"), want: [2]bool{true, false}, after: `Claimed bound=true by="wf" seen=false job=false`},
		// Issue 20: scheduled to another node, a pod claims nothing (it used
		// up the reservation, which any pod labelled with the runner's name
		// could do).
		"refused: another node":        {from: held, do: claim("u1", "n2"), want: [2]bool{false, false}, after: `Held bound=true by="" seen=false job=false`},
		"steps only":                   {from: stepsOnly, do: claim("u1", "n1"), want: [2]bool{true, false}, after: `Claimed bound=true by="wf" seen=false job=true`},
		"runner not seen bound yet":    {from: unbound, do: claim("u1", "n1"), want: [2]bool{true, false}, after: `Claimed bound=false by="wf" seen=false job=false`},
		"refused: claimed":             {from: claimedByOther, do: claim("u1", "n1"), want: [2]bool{false, false}, after: `Claimed bound=true by="other" seen=true job=false`},
		"refused: used up":             {from: usedUp, do: claim("u1", "n1"), want: [2]bool{false, false}, after: `UsedUp bound=true by="wf" seen=true job=false`},
		"refused: another incarnation": {from: held, do: claim("u2", "n1"), want: [2]bool{false, false}, after: `Held bound=true by="" seen=false job=false`},
	})
}

func TestUnclaim(t *testing.T) {
	unclaim := func(pod types.UID) func(*Store, *Reservation) any {
		return func(s *Store, _ *Reservation) any { return s.Unclaim(lifecycleRunner, pod, false) }
	}
	runVerbCases(t, map[string]verbCase{
		"assumed claim":          {from: claimAssumed, do: unclaim("wf"), want: true, after: `Held bound=true by="" seen=false job=false`},
		"assumed claim, used up": {from: usedUpAssumed, do: unclaim("wf"), want: true, after: `Held bound=true by="" seen=false job=false`},
		"refused: claim seen":    {from: claimed, do: unclaim("wf"), want: false, after: `Claimed bound=true by="wf" seen=true job=false`},
		"refused: another pod's": {from: claimAssumed, do: unclaim("other"), want: false, after: `Claimed bound=true by="wf" seen=false job=false`},
		"refused: unclaimed":     {from: held, do: unclaim("wf"), want: false, after: `Held bound=true by="" seen=false job=false`},
	})
}

func TestSeeWorkflowPod(t *testing.T) {
	see := func(pod *v1.Pod) func(*Store, *Reservation) any {
		return func(s *Store, _ *Reservation) any { _, seen := s.SeeWorkflowPod(lifecycleRunner, pod); return seen }
	}
	later := lifecycleCreated.Add(time.Minute)
	runVerbCases(t, map[string]verbCase{
		"claims on its node": {from: held, do: see(workflowPodOf("wf", "n1", later)), want: SeenClaim, after: `Claimed bound=true by="wf" seen=true job=false`},
		// Issue 20: a pod labelled with the runner's name bound to another
		// node used up the reservation; it claims nothing.
		"refused: on another node":         {from: held, do: see(workflowPodOf("wf", "n2", later)), want: SeenElsewhere, after: `Held bound=true by="" seen=false job=false`},
		"claims steps only":                {from: stepsOnly, do: see(workflowPodOf("wf", "n1", later)), want: SeenClaim, after: `Claimed bound=true by="wf" seen=true job=true`},
		"confirms the assumed claim":       {from: claimAssumed, do: see(workflowPodOf("wf", "n1", later)), want: SeenNothingNew, after: `Claimed bound=true by="wf" seen=true job=false`},
		"confirmed already":                {from: claimed, do: see(workflowPodOf("wf", "n1", later)), want: SeenNothingNew, after: `Claimed bound=true by="wf" seen=true job=false`},
		"refused: claimed by another":      {from: claimedByOther, do: see(workflowPodOf("wf", "n1", later)), want: SeenNothingNew, after: `Claimed bound=true by="other" seen=true job=false`},
		"refused: created before runner":   {from: held, do: see(workflowPodOf("wf", "n1", lifecycleCreated.Add(-time.Second))), want: SeenStale, after: `Held bound=true by="" seen=false job=false`},
		"refused: an earlier runner's pod": {from: held, do: see(workflowPodOf("stale-wf", "n1", later)), want: SeenStale, after: `Held bound=true by="" seen=false job=false`},
	})
}

func TestWorkflowPodGone(t *testing.T) {
	gone := func(pod types.UID) func(*Store, *Reservation) any {
		return func(s *Store, _ *Reservation) any { return s.WorkflowPodGone(lifecycleRunner, pod) }
	}
	runVerbCases(t, map[string]verbCase{
		"claimed":                {from: claimed, do: gone("wf"), want: true, after: `UsedUp bound=true by="wf" seen=true job=false`},
		"assumed claim":          {from: claimAssumed, do: gone("wf"), want: true, after: `UsedUp bound=true by="wf" seen=true job=false`},
		"refused: used up":       {from: usedUp, do: gone("wf"), want: false, after: `UsedUp bound=true by="wf" seen=true job=false`},
		"refused: another pod's": {from: claimedByOther, do: gone("wf"), want: false, after: `Claimed bound=true by="other" seen=true job=false`},
		"refused: unclaimed":     {from: held, do: gone("wf"), want: false, after: `Held bound=true by="" seen=false job=false`},
	})
}

func TestWorkflowPodFinished(t *testing.T) {
	finished := func(runnerUID, pod types.UID) func(*Store, *Reservation) any {
		return func(s *Store, _ *Reservation) any { return s.WorkflowPodFinished(lifecycleRunner, runnerUID, pod) }
	}
	runVerbCases(t, map[string]verbCase{
		"unclaimed":                    {from: held, do: finished("u1", "wf"), want: true, after: `UsedUp bound=true by="wf" seen=true job=false`},
		"claimed by it":                {from: claimed, do: finished("u1", "wf"), want: true, after: `UsedUp bound=true by="wf" seen=true job=false`},
		"refused: claimed by another":  {from: claimedByOther, do: finished("u1", "wf"), want: false, after: `Claimed bound=true by="other" seen=true job=false`},
		"refused: used up":             {from: usedUp, do: finished("u1", "wf"), want: false, after: `UsedUp bound=true by="wf" seen=true job=false`},
		"refused: another incarnation": {from: held, do: finished("u2", "wf"), want: false, after: `Held bound=true by="" seen=false job=false`},
	})
}

func TestJobStarted(t *testing.T) {
	started := func(job string) func(*Store, *Reservation) any {
		return func(s *Store, _ *Reservation) any { return s.JobStarted(lifecycleRunner, job, time.Unix(200, 0)) }
	}
	runVerbCases(t, map[string]verbCase{
		"held":                   {from: held, do: started("j1"), want: types.UID("u1"), after: `Held bound=true by="" seen=false job=true`},
		"refused: the stale job": {from: held, do: started("old-job"), want: types.UID(""), after: `Held bound=true by="" seen=false job=false`},
		"refused: a start noted": {from: jobStarted, do: started("j1"), want: types.UID(""), after: `Held bound=true by="" seen=false job=true`},
		"refused: claimed":       {from: claimed, do: started("j1"), want: types.UID(""), after: `Claimed bound=true by="wf" seen=true job=false`},
		"refused: used up":       {from: usedUp, do: started("j1"), want: types.UID(""), after: `UsedUp bound=true by="wf" seen=true job=false`},
	})
}

func TestReleaseWorkflowRoom(t *testing.T) {
	release := func(uid types.UID) func(*Store, *Reservation) any {
		return func(s *Store, _ *Reservation) any { _, ok := s.ReleaseWorkflowRoom(lifecycleRunner, uid); return ok }
	}
	runVerbCases(t, map[string]verbCase{
		"job started, no workflow pod": {from: jobStarted, do: release("u1"), want: true, after: `StepsOnly bound=true by="" seen=false job=true`},
		"refused: steps only already":  {from: stepsOnly, do: release("u1"), want: false, after: `StepsOnly bound=true by="" seen=false job=true`},
		"refused: claimed":             {from: claimed, do: release("u1"), want: false, after: `Claimed bound=true by="wf" seen=true job=false`},
		"refused: used up":             {from: usedUp, do: release("u1"), want: false, after: `UsedUp bound=true by="wf" seen=true job=false`},
		"refused: another incarnation": {from: jobStarted, do: release("u2"), want: false, after: `Held bound=true by="" seen=false job=true`},
	})
}

func TestRelease(t *testing.T) {
	release := func(uid types.UID) func(*Store, *Reservation) any {
		return func(s *Store, _ *Reservation) any { _, ok := s.Release(lifecycleRunner, uid); return ok }
	}
	runVerbCases(t, map[string]verbCase{
		"held":                         {from: held, do: release("u1"), want: true, after: "none"},
		"claimed":                      {from: claimed, do: release("u1"), want: true, after: "none"},
		"any incarnation":              {from: usedUp, do: release(""), want: true, after: "none"},
		"refused: another incarnation": {from: held, do: release("u2"), want: false, after: `Held bound=true by="" seen=false job=false`},
	})
}

func TestReleaseNode(t *testing.T) {
	runVerbCases(t, map[string]verbCase{
		"its node":     {from: claimed, do: func(s *Store, _ *Reservation) any { return len(s.ReleaseNode("n1")) }, want: 1, after: "none"},
		"another node": {from: held, do: func(s *Store, _ *Reservation) any { return len(s.ReleaseNode("n2")) }, want: 0, after: `Held bound=true by="" seen=false job=false`},
	})
}

// Every start state the tables use is one the verbs can reach, and is
// named by State as the package doc says.
func TestStartStates(t *testing.T) {
	want := map[string]State{"unbound": StateHeld, "held": StateHeld, "claimAssumed": StateClaimed, "claimed": StateClaimed, "claimedByOther": StateClaimed,
		"usedUpAssumed": StateUsedUp, "usedUp": StateUsedUp, "jobStarted": StateHeld, "stepsOnly": StateStepsOnly}
	for name, from := range startsByName {
		_, r := lifecycleStore(from)
		if got := r.State(); got != want[name] {
			t.Errorf("%s: State() = %s, want %s", name, got, want[name])
		}
	}
}
