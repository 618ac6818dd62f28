// Package webhook is tandem-webhook's admission handler: it makes room for a
// workflow pod pinned to its runner's node before the pod is stored.
//
// In reservationMode Pods a held reservation is also a placeholder pod on the
// runner's node (pkg/controllers/placeholder). The workflow pod of
// hooks v0.7.0 is pinned there with spec.nodeName and bypasses every
// scheduler: the kubelet would reject it (OutOfcpu) while the placeholder
// still holds its room. This webhook, called on the creation of every pod
// labelled with the runner-pod label and pinned with nodeName, deletes the
// placeholder of that runner incarnation on that node (UID precondition,
// grace 0) and then allows the pod. The delete
// is stored before the pod, and the kubelet watches its node's pods in
// resourceVersion order, so it sees the room freed before the pod that takes
// it.
//
// The webhook never denies a pod: an error allows the pod with a warning, and
// tandem's leader deletes a placeholder whose workflow pod it sees (the
// fallback for a webhook that is down or failed).
package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/tandem-scheduler/tandem/contract"
)

// Paths the handler serves.
const (
	// Path is the admission endpoint (admission.k8s.io/v1 AdmissionReview).
	Path = "/release-placeholder"
	// HealthzPath answers "ok" while the server runs.
	HealthzPath = "/healthz"
	// MetricsPath serves the legacy registry (unauthenticated counters and
	// a histogram of the webhook only).
	MetricsPath = "/metrics"
)

// Defaults of Options.
const (
	// DefaultRunnerPodLabel is the label key on workflow pods naming their
	// runner pod, as ARC's container hooks set it.
	DefaultRunnerPodLabel = "runner-pod"
	// DefaultTimeout bounds the API calls of one review: below the
	// webhook configuration's 5 s, so that the webhook answers (with a
	// warning) before the apiserver gives up on it.
	DefaultTimeout = 4 * time.Second
)

// maxReviewBytes bounds an AdmissionReview's body: the webhook reviews
// creates only, which carry the pod once (no oldObject), and a pod is at
// most what etcd stores (1.5 MiB by default), with JSON's overhead. With
// DefaultMaxInFlight it bounds the bodies held at once to 64 MiB.
const maxReviewBytes = 2 << 20

// DefaultMaxInFlight is Options.MaxInFlight's default.
const DefaultMaxInFlight = 32

// Options configure the handler.
type Options struct {
	// RunnerPodLabel is the label key on workflow pods whose value is the
	// name of their runner pod. Default DefaultRunnerPodLabel.
	RunnerPodLabel string
	// Timeout bounds the API calls of one review. Default DefaultTimeout.
	Timeout time.Duration
	// MaxInFlight bounds the reviews answered at once; beyond it a review
	// is answered at once with 429 Too Many Requests, which the apiserver
	// takes as a failed call (failurePolicy Ignore: the pod is allowed),
	// before its body is read. Default DefaultMaxInFlight.
	MaxInFlight int
	// Namespaces are the runner namespaces, whose placeholders the handler
	// watches (the only namespaces the webhook configuration sends); none
	// means every namespace.
	Namespaces []string
}

// Handler answers pod admission reviews. It serves Path, HealthzPath and
// MetricsPath.
type Handler struct {
	client   kubernetes.Interface
	label    string
	timeout  time.Duration
	mux      *http.ServeMux
	reviewed atomic.Int64
	// inFlight holds a token per review being answered.
	inFlight chan struct{}
	// placeholders is the informers' view of the runner namespaces'
	// placeholders; Start starts it.
	placeholders *placeholderCache
	// sources are the addresses reviews came from, logged once each.
	sources sources
}

var _ http.Handler = &Handler{}

// NewHandler returns a handler that finds placeholders in its informers and
// deletes them through client; Start starts the informers. It registers
// the webhook's metrics into the legacy registry.
func NewHandler(client kubernetes.Interface, opts Options) *Handler {
	RegisterMetrics()
	h := &Handler{client: client, label: opts.RunnerPodLabel, timeout: opts.Timeout, mux: http.NewServeMux(),
		placeholders: newPlaceholderCache(client, opts.Namespaces)}
	if h.label == "" {
		h.label = DefaultRunnerPodLabel
	}
	if h.timeout <= 0 {
		h.timeout = DefaultTimeout
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = DefaultMaxInFlight
	}
	h.inFlight = make(chan struct{}, opts.MaxInFlight)
	h.mux.HandleFunc("POST "+Path, h.serveReview)
	h.mux.HandleFunc("GET "+HealthzPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok")
	})
	h.mux.Handle("GET "+MetricsPath, legacyregistry.Handler())
	return h
}

// Start runs the handler's informers until ctx ends and returns once they
// have listed the placeholders; until then every review lists them from the
// apiserver. Serve the handler after Start.
func (h *Handler) Start(ctx context.Context) error {
	return h.placeholders.start(ctx)
}

// ServeHTTP serves the handler's paths.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mux.ServeHTTP(w, r)
}

// Reviewed is the number of admission reviews answered so far.
func (h *Handler) Reviewed() int64 {
	return h.reviewed.Load()
}

func (h *Handler) serveReview(w http.ResponseWriter, r *http.Request) {
	logger := klog.FromContext(r.Context())
	select {
	case h.inFlight <- struct{}{}:
		defer func() { <-h.inFlight }()
	default:
		// Saturated: answer before reading anything. A flood of reviews
		// (forged, or pods no scheduler needs) then costs what a 429 costs,
		// and the reviews in flight keep their memory and API budget.
		reviews.WithLabelValues(outcomeSaturated).Inc()
		logger.V(2).Info("Too many admission reviews in flight; answering 429 (the apiserver allows the pod)", "maxInFlight", cap(h.inFlight), "remote", r.RemoteAddr)
		http.Error(w, "tandem-webhook: too many reviews in flight", http.StatusTooManyRequests)
		return
	}
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxReviewBytes)).Decode(&review); err != nil || review.Request == nil {
		// Without the request's UID there is no answer the apiserver
		// takes: it applies the failurePolicy (Ignore: the pod is allowed).
		admissionErrors.WithLabelValues(stepDecode).Inc()
		logger.Error(err, "Malformed admission review", "remote", r.RemoteAddr)
		http.Error(w, "malformed AdmissionReview", http.StatusBadRequest)
		return
	}
	h.sources.log(logger, r.RemoteAddr)
	start := time.Now()
	ctx, cancel := context.WithTimeout(r.Context(), h.timeout)
	resp, outcome := h.Review(ctx, review.Request)
	cancel()
	reviews.WithLabelValues(outcome).Inc()
	reviewDuration.Observe(time.Since(start).Seconds())
	h.reviewed.Add(1)
	out := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Response: resp,
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(&out); err != nil {
		logger.Error(err, "Writing the admission response")
	}
}

// maxSources bounds the source addresses the handler remembers.
const maxSources = 64

// sources logs the first review from each address: where the kube-apiserver
// connects from, which the webhook's NetworkPolicy must admit, shows in the
// log (and so does any other caller).
type sources struct {
	mu    sync.Mutex
	hosts map[string]struct{}
}

func (s *sources) seenBefore(host string) (seen, full bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.hosts[host]; ok {
		return true, false
	}
	if len(s.hosts) >= maxSources {
		return true, false
	}
	if s.hosts == nil {
		s.hosts = map[string]struct{}{}
	}
	s.hosts[host] = struct{}{}
	return false, len(s.hosts) == maxSources
}

func (s *sources) log(logger klog.Logger, remote string) {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	seen, full := s.seenBefore(host)
	if !seen {
		logger.V(1).Info("Admission review from an address not seen before (the webhook's NetworkPolicy must admit your kube-apiserver's)", "source", host)
	}
	if !seen && full {
		logger.V(1).Info("Seen reviews from many addresses; no more are logged", "addresses", maxSources)
	}
}

// Review outcomes (the "outcome" label of the reviews metric).
const (
	outcomeDeleted = "deleted"
	outcomeNone    = "none"
	outcomeError   = "error"
	// outcomeSaturated: MaxInFlight reviews were being answered; this one
	// got a 429 and was not read.
	outcomeSaturated = "saturated"
)

// Review answers one admission request: it always allows the pod. For the
// creation of a pod pinned with spec.nodeName and labelled with its runner's
// name, it first deletes that runner incarnation's placeholder on the same
// node. It returns the response and its outcome: "deleted", "none" or
// "error" (the response then carries a warning).
func (h *Handler) Review(ctx context.Context, req *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, string) {
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	if req.Operation != admissionv1.Create || req.SubResource != "" ||
		req.Resource.Group != "" || req.Resource.Resource != "pods" {
		return resp, outcomeNone
	}
	logger := klog.FromContext(ctx)
	var pod v1.Pod
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
		admissionErrors.WithLabelValues(stepDecode).Inc()
		logger.Error(err, "Decoding the pod of an admission request", "namespace", req.Namespace, "name", req.Name)
		resp.Warnings = []string{"tandem-webhook: cannot decode the pod; its runner's placeholder was not released"}
		return resp, outcomeError
	}
	if pod.Namespace == "" {
		pod.Namespace = req.Namespace
	}
	if pod.Name == "" {
		pod.Name = req.Name // empty when the name is generated
	}
	runnerName := pod.Labels[h.label]
	// Only a pod pinned with nodeName bypasses the schedulers: a workflow
	// pod that a scheduler places takes the placeholder's room when tandem
	// binds it (or waits for the fallback); deleting the placeholder now
	// would leave the room free for anyone until then.
	if runnerName == "" || pod.Spec.NodeName == "" || contract.IsPlaceholder(&pod) {
		return resp, outcomeNone
	}
	if ptr.Deref(req.DryRun, false) {
		return resp, outcomeNone // sideEffects: NoneOnDryRun
	}
	logger = klog.LoggerWithValues(logger, "pod", klog.KObj(&pod), "runner", klog.KRef(pod.Namespace, runnerName))
	pods := h.client.CoreV1().Pods(pod.Namespace)

	// The placeholders on the pod's node: from the informers, and from the
	// apiserver where the informers show none, as they would for a
	// placeholder created within their lag before the pod (tandem re-creates
	// one that was lost): a placeholder missed is a job failed. A namespace
	// the webhook does not watch holds no runner (the configuration sends
	// only the runner namespaces): a review from elsewhere (forged) costs no
	// API call. Those being deleted are left to go. Found by label and
	// annotation, not by name: a placeholder whose name someone took first
	// has a generated one.
	cached, watched := h.placeholders.on(pod.Namespace, pod.Spec.NodeName)
	if !watched {
		logger.V(2).Info("Pinned pod of a namespace the webhook does not watch (--namespaces); nothing released")
		return resp, outcomeNone
	}
	list := func() ([]*v1.Pod, error) {
		list, err := pods.List(ctx, metav1.ListOptions{
			LabelSelector: contract.PlaceholderLabel + "=true",
			FieldSelector: fields.OneTermEqualSelector("spec.nodeName", pod.Spec.NodeName).String(),
		})
		if err != nil {
			return nil, err
		}
		listed := make([]*v1.Pod, len(list.Items))
		for i := range list.Items {
			listed[i] = &list.Items[i]
		}
		return placeholdersOf(listed, runnerName, pod.Spec.NodeName), nil
	}
	holds := placeholdersOf(cached, runnerName, pod.Spec.NodeName)
	fromCache := len(holds) > 0
	if !fromCache {
		var err error
		if holds, err = list(); err != nil {
			return h.failed(logger, resp, stepGetPlaceholder, err, "cannot list the placeholders of runner "+runnerName)
		}
	}
	if len(holds) == 0 {
		logger.V(4).Info("No placeholder to release")
		return resp, outcomeNone
	}
	runner, err := pods.Get(ctx, runnerName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		// Its placeholder goes with it (garbage collection).
		logger.V(2).Info("Runner pod not found; placeholder left to garbage collection", "placeholder", klog.KObj(holds[0]))
		return resp, outcomeNone
	}
	if err != nil {
		return h.failed(logger, resp, stepGetRunner, err, "cannot read the runner pod "+runnerName)
	}
	tried := map[types.UID]bool{}
	deleted, err := h.release(ctx, logger, pods, holds, runner, tried)
	if err == nil && len(deleted) == 0 && fromCache {
		// What the cache showed was stale: a placeholder since replaced
		// under its name (tandem re-creates a lost one), or one of an
		// earlier runner of the name while the new one's is not shown yet.
		// The apiserver says what is there now.
		if holds, err = list(); err != nil {
			return h.failed(logger, resp, stepGetPlaceholder, err, "cannot list the placeholders of runner "+runnerName)
		}
		deleted, err = h.release(ctx, logger, pods, holds, runner, tried)
	}
	if err != nil {
		return h.failed(logger, resp, stepDelete, err, "cannot delete a placeholder of runner "+runnerName)
	}
	if len(deleted) == 0 {
		return resp, outcomeNone
	}
	resp.AuditAnnotations = map[string]string{"placeholder-deleted": strings.Join(deleted, ",")}
	return resp, outcomeDeleted
}

// release deletes those of holds that are placeholders of the runner
// incarnation runner and not in tried, noting each UID in tried, and
// returns those it deleted ("namespace/name"). Every one of them: more than
// one holds the runner's room twice (one the worker made under another name
// when the first's was taken, or one that is not tandem's and claims to be).
func (h *Handler) release(ctx context.Context, logger klog.Logger, pods typedcorev1.PodInterface, holds []*v1.Pod, runner *v1.Pod, tried map[types.UID]bool) ([]string, error) {
	var deleted []string
	for _, hold := range holds {
		if tried[hold.UID] {
			continue
		}
		tried[hold.UID] = true
		if !contract.IsPlaceholderOf(hold, runner) {
			// Another incarnation's placeholder: not ours to delete.
			logger.V(2).Info("Pod is not the placeholder of this runner incarnation; left alone", "placeholder", klog.KObj(hold), "runnerUID", runner.UID)
			continue
		}
		err := pods.Delete(ctx, hold.Name, metav1.DeleteOptions{
			GracePeriodSeconds: ptr.To[int64](0),
			Preconditions:      &metav1.Preconditions{UID: &hold.UID},
		})
		switch {
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
			// Gone already (tandem's fallback, garbage collection), or
			// replaced by another pod of that name since it was read.
			logger.V(2).Info("Placeholder already gone", "placeholder", klog.KObj(hold), "err", err)
			continue
		case err != nil:
			return deleted, fmt.Errorf("deleting placeholder %s: %w", hold.Name, err)
		}
		placeholdersDeleted.Inc()
		logger.V(2).Info("Released the runner's placeholder for its pinned pod", "placeholder", klog.KObj(hold), "node", hold.Spec.NodeName)
		deleted = append(deleted, hold.Namespace+"/"+hold.Name)
	}
	return deleted, nil
}

// placeholdersOf returns the pods of pods that are placeholders of the
// runner named runner on node and not being deleted.
func placeholdersOf(pods []*v1.Pod, runner, node string) []*v1.Pod {
	var holds []*v1.Pod
	for _, p := range pods {
		if contract.IsPlaceholder(p) && p.Annotations[contract.PlaceholderOfAnnotation] == runner && p.DeletionTimestamp == nil && p.Spec.NodeName == node {
			holds = append(holds, p)
		}
	}
	return holds
}

// failed allows the pod with a warning about what failed.
func (h *Handler) failed(logger klog.Logger, resp *admissionv1.AdmissionResponse, step string, err error, what string) (*admissionv1.AdmissionResponse, string) {
	admissionErrors.WithLabelValues(step).Inc()
	logger.Error(err, "Releasing the runner's placeholder failed; pod allowed", "step", step)
	resp.Warnings = []string{fmt.Sprintf("tandem-webhook: %s: %v; the pod may be rejected by the kubelet until tandem releases the room", what, truncate(err.Error(), 120))}
	return resp, outcomeError
}

// truncate cuts s to at most n bytes.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
