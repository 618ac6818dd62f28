// Package controllers keeps the cluster in step with tandem's reservations
// and tandem's reservations in step with the cluster, outside the scheduling
// cycle:
//
//   - Placeholders: in reservationMode Pods, a bound runner's reservation is
//     also a pod on its node ("<runner>-hold"), created, replaced and deleted
//     here, yielding to the workflow pod at Permit;
//   - PairPods: while a runner waits for room for itself and its workflow
//     pod, a pending pod of the pair's size stands for it, for cluster
//     autoscalers;
//   - the leader-only work queue both run on: only the leader writes;
//   - WaitingPods: the pods the plugin turned away, to activate when room
//     is freed, each no sooner than the scheduler's backoff.
//
// The informer handlers that feed the reservation store, the reconciler
// and EphemeralRunner tracking are still methods of the plugin
// (pkg/workflowreservation: handlers.go, reconcile.go, ephemeralrunner.go).
package controllers
