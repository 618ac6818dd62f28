// Package controllers keeps tandem's reservations in step with the cluster
// and the cluster in step with tandem's reservations, outside the scheduling
// cycle. The Feeder is one scheduler's: every tandem profile's plugin
// instance joins it (Join) and reads the reservations.Store it feeds; the
// scheduler's command runs its controllers (Run) next to the scheduler.
//
//   - the informer handlers (handlers.go): rebuild the reservations recorded
//     on bound runner pods, note workflow pods' claims, release what is gone;
//   - the reconciler (reconcile.go), on every replica: repairs what the
//     handlers missed, tells a runner bound without a record that it holds
//     nothing;
//   - EphemeralRunner tracking (ephemeralrunner.go): the workflow room of a
//     job without a container goes after noWorkflowPodGrace;
//   - the hook-template ConfigMap informers (configmaps.go), which retry
//     the runners waiting for a template;
//   - Placeholders: in reservationMode Pods, a bound runner's reservation is
//     also a pod on its node ("<runner>-hold"), created, replaced and deleted
//     here, yielding to the workflow pod at Permit;
//   - PairPods: while a runner waits for room for itself and its workflow
//     pod, a pending pod of the pair's size stands for it, for cluster
//     autoscalers;
//   - the leader-only work queue both run on: only the leader writes;
//   - WaitingPods and their activation (activation.go): the pods the plugin
//     turned away, activated when room is freed, each no sooner than the
//     scheduler's backoff;
//   - the reservation gauges and the leader-only speech (observe.go).
//
// It depends on the model (pkg/reservations), sizing and a small Cluster
// interface (clients, informers, Activate) that the framework's Handle
// satisfies, not on the plugin.
package controllers
