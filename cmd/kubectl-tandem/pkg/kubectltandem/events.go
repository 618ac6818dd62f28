package kubectltandem

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// Event is an event regarding a pod, from either events API.
type Event struct {
	UID    types.UID `json:"uid"`
	Type   string    `json:"type"`
	Reason string    `json:"reason"`
	Note   string    `json:"note"`
	Count  int32     `json:"count"`
	// Last is when it was last seen.
	Last time.Time `json:"last"`
	// From is the component that reported it.
	From string `json:"from"`
	// Meaning is what a tandem reason means (docs/troubleshooting.md).
	Meaning string `json:"meaning,omitempty"`
}

// tandemReasons are the event reasons of tandem's plugin, with what each
// means, as docs/troubleshooting.md lists them.
var tandemReasons = map[string]string{
	"WorkflowCapacityReserved":       "room for the workflow pod was reserved on the runner's node",
	"WorkflowReservationClaimed":     "the workflow pod took its runner's reservation",
	"WorkflowReservationReleased":    "the room was given back unclaimed (runner gone, node gone, or a job without a container)",
	"InvalidWorkflowSize":            "a size source is broken; tandem used the next one",
	"WorkflowSizeUnknown":            "no source gave a size: the runner was placed without a reservation",
	"InvalidReservation":             "the runner's recorded reservation could not be used and holds nothing",
	"IncompleteHookTemplate":         "the hook template has no $job container: only its other containers are reserved",
	"WorkflowRequestsIgnored":        "the pod carries the sizing annotation but is not a runner",
	"NoWorkflowReservation":          "the workflow pod claims nothing and is scheduled as an ordinary pod",
	"WorkflowReservationNotRecorded": "the runner is bound without a valid record (another bind plugin or scheduler bound it, or it was pinned with nodeName): no room is held for it",
	"WorkflowReservationRepaired":    "the reconciler repaired the reservation",
}

// podEvents lists the events regarding pod, of this incarnation, oldest
// first. Both events APIs serve the same events; each is asked (a user may
// read only one of them) and the answers are merged by UID.
func podEvents(ctx context.Context, client kubernetes.Interface, pod *v1.Pod) ([]Event, error) {
	byUID := map[types.UID]Event{}
	mine := func(kind, name string, uid types.UID) bool {
		return kind == "Pod" && name == pod.Name && (uid == "" || uid == pod.UID)
	}
	newer, err := client.EventsV1().Events(pod.Namespace).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
		"regarding.kind": "Pod", "regarding.name": pod.Name, "regarding.uid": string(pod.UID),
	}.String()})
	if err != nil && !apierrors.IsForbidden(err) && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("listing events: %w", err)
	}
	newerErr := err
	if err == nil {
		for i := range newer.Items {
			ev := &newer.Items[i]
			if mine(ev.Regarding.Kind, ev.Regarding.Name, ev.Regarding.UID) {
				byUID[ev.UID] = fromEventsV1(ev)
			}
		}
	}
	older, err := client.CoreV1().Events(pod.Namespace).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
		"involvedObject.kind": "Pod", "involvedObject.name": pod.Name, "involvedObject.uid": string(pod.UID),
	}.String()})
	switch {
	case err == nil:
		for i := range older.Items {
			ev := &older.Items[i]
			if _, seen := byUID[ev.UID]; !seen && mine(ev.InvolvedObject.Kind, ev.InvolvedObject.Name, ev.InvolvedObject.UID) {
				byUID[ev.UID] = fromCoreV1(ev)
			}
		}
	case newerErr != nil:
		return nil, fmt.Errorf("listing events: %w", err)
	}
	out := make([]Event, 0, len(byUID))
	for _, ev := range byUID {
		ev.Meaning = tandemReasons[ev.Reason]
		out = append(out, ev)
	}
	slices.SortFunc(out, func(a, b Event) int {
		if c := a.Last.Compare(b.Last); c != 0 {
			return c
		}
		return strings.Compare(string(a.UID), string(b.UID))
	})
	return out, nil
}

func fromEventsV1(ev *eventsv1.Event) Event {
	out := Event{UID: ev.UID, Type: ev.Type, Reason: ev.Reason, Note: ev.Note, Count: 1, From: ev.ReportingController}
	out.Last = firstSet(ev.DeprecatedLastTimestamp.Time, ev.EventTime.Time, ev.CreationTimestamp.Time)
	if ev.Series != nil {
		out.Count, out.Last = ev.Series.Count, ev.Series.LastObservedTime.Time
	}
	if ev.DeprecatedCount > out.Count {
		out.Count = ev.DeprecatedCount
	}
	if out.From == "" {
		out.From = ev.DeprecatedSource.Component
	}
	return out
}

func fromCoreV1(ev *v1.Event) Event {
	out := Event{UID: ev.UID, Type: ev.Type, Reason: ev.Reason, Note: ev.Message, Count: max(ev.Count, 1), From: ev.ReportingController}
	out.Last = firstSet(ev.LastTimestamp.Time, ev.EventTime.Time, ev.CreationTimestamp.Time)
	if ev.Series != nil {
		out.Count, out.Last = ev.Series.Count, ev.Series.LastObservedTime.Time
	}
	if out.From == "" {
		out.From = ev.Source.Component
	}
	return out
}

func firstSet(ts ...time.Time) time.Time {
	for _, t := range ts {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}
