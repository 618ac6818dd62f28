package workflowreservation

import (
	"fmt"
	"strings"

	"github.com/tandem-scheduler/tandem/contract"
)

// reservedNote is the note of the event for a reservation taken.
func reservedNote(s *cycleState, node string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Reserved %s on node %s for the workflow pod (size from %s)", s.workflow, node, s.source)
	if !s.step.IsZero() {
		fmt.Fprintf(&b, "; of it %s for container-step pods", s.step)
	}
	if len(s.ports) > 0 {
		fmt.Fprintf(&b, "; host ports %s", portList(s.ports))
	}
	if s.hookMode != "" {
		fmt.Fprintf(&b, "; hook mode: %s", s.hookMode)
	}
	return b.String()
}

// portList is ports as "6379/TCP,8080/TCP".
func portList(ports []contract.HostPort) string {
	out := make([]string, 0, len(ports))
	for _, p := range ports {
		out = append(out, p.String())
	}
	return strings.Join(out, ",")
}
