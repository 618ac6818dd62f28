package kubectltandem

import (
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// sortReservations orders reservations by namespace, then runner.
func sortReservations(rs []Reservation) {
	slices.SortFunc(rs, func(a, b Reservation) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Runner, b.Runner)
	})
}

// reservationsTable renders reservations as kubectl get does; the
// namespace column with all namespaces only, as kubectl has it. Wide adds
// what each holds now, its workflow pod, step headroom, host ports and the
// runner UID it was recorded for.
func reservationsTable(rs []Reservation, allNamespaces bool, now time.Time) *metav1.Table {
	t := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		{Name: "Runner", Type: "string", Format: "name"},
		{Name: "Node", Type: "string"},
		{Name: "Size", Type: "string", Description: "the room held before the workflow pod arrives"},
		{Name: "Source", Type: "string"},
		{Name: "Phase", Type: "string"},
		{Name: "Age", Type: "string"},
		{Name: "Holds", Type: "string", Priority: 1},
		{Name: "Workflow-Pod", Type: "string", Priority: 1},
		{Name: "Step-Headroom", Type: "string", Priority: 1},
		{Name: "Host-Ports", Type: "string", Priority: 1},
		{Name: "Runner-UID", Type: "string", Priority: 1},
	}}
	if allNamespaces {
		t.ColumnDefinitions = append([]metav1.TableColumnDefinition{{Name: "Namespace", Type: "string"}}, t.ColumnDefinitions...)
	}
	for _, r := range rs {
		var cells []any
		if allNamespaces {
			cells = append(cells, r.Namespace)
		}
		cells = append(cells, r.Runner, orNone(r.Node), format(r.Requests), orNone(r.Source), string(r.Phase),
			duration.HumanDuration(now.Sub(r.Since)), format(r.Holds), orNone(r.WorkflowPod), format(r.StepRequests),
			orNone(strings.Join(r.HostPorts, ",")), orNone(string(r.RunnerUID)))
		t.Rows = append(t.Rows, metav1.TableRow{Cells: cells})
	}
	return t
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
