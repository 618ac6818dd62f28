// Package controllers keeps tandem's reservations in step with the cluster
// and the cluster in step with tandem's reservations, outside the scheduling
// cycle. The Feeder is one scheduler's: every tandem profile's plugin
// instance joins it (Join) and gets the profile's two seams, a Classifier
// (what a pod is to tandem, classify.go) and a Holder (the store's verbs
// and what goes with them, seams.go); the scheduler's command runs its
// controllers (Run) next to the scheduler.
//
//   - the informer handlers (handlers.go): rebuild the reservations recorded
//     on bound runner pods, note workflow pods' claims, release what is gone;
//   - the reconciler (reconcile.go), on every replica: repairs what the
//     handlers missed, tells a runner bound without a record that it holds
//     nothing;
//   - EphemeralRunner identity (owners.go, ephemeralrunner.go): which pods
//     ARC made, and the workflow room of a job without a container, which
//     goes after noWorkflowPodGrace;
//   - the hook-template ConfigMap informers (configmaps.go), which retry
//     the runners waiting for a template;
//   - WaitingPods and their activation (waiting.go, activation.go): the pods
//     the plugin turned away, activated when room is freed, each no sooner
//     than the scheduler's backoff;
//   - the reservation gauges and the leader-only speech (observe.go).
//
// Two workers have packages of their own, on the leader-only queue of
// pkg/controllers/podworker: pkg/controllers/placeholder (reservationMode
// Pods: a bound runner's reservation is also a pod on its node,
// "<runner>-hold", yielding to the workflow pod) and pkg/controllers/pairpod
// (while a runner waits for room for itself and its workflow pod, a pending
// pod of the pair's size stands for it, for cluster autoscalers). The Feeder
// tells them what a runner should have and when to look.
//
// It depends on the model (pkg/reservations), sizing and a small Cluster
// interface (clients, informers, Activate, events) that the framework's
// Handle satisfies, not on the plugin.
package controllers
