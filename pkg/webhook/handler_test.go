package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	"k8s.io/utils/ptr"

	"github.com/tandem-scheduler/tandem/contract"
)

const (
	testNS   = "arc"
	runner   = "set-abcde-runner-fghij"
	node     = "n1"
	runnerID = types.UID("runner-2")
)

func runnerPod() *v1.Pod {
	return st.MakePod().Namespace(testNS).Name(runner).UID(string(runnerID)).Node(node).Label("actions-ephemeral-runner", "True").Obj()
}

// placeholderOf is the placeholder of the runner incarnation uid on node, as
// tandem's leader creates it.
func placeholderOf(uid types.UID, node string) *v1.Pod {
	pod := st.MakePod().Namespace(testNS).Name(contract.PlaceholderName(runner)).UID("hold-of-"+string(uid)).Node(node).
		Label(contract.PlaceholderLabel, "true").Annotation(contract.PlaceholderOfAnnotation, runner).Obj()
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: runner, UID: uid, Controller: ptr.To(true)}}
	return pod
}

// renamed is pod with another name and, unless empty, UID.
func renamed(pod *v1.Pod, name string, uid types.UID) *v1.Pod {
	pod.Name = name
	if uid != "" {
		pod.UID = uid
	}
	return pod
}

// workflowPod is the workflow pod of hooks v0.7.0, pinned with nodeName.
func workflowPod() *v1.Pod {
	return st.MakePod().Namespace(testNS).Name(runner+"-workflow").Node(node).Label(DefaultRunnerPodLabel, runner).Obj()
}

func createRequest(t *testing.T, pod *v1.Pod) *admissionv1.AdmissionRequest {
	t.Helper()
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	return &admissionv1.AdmissionRequest{
		UID:       "review-1",
		Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		Namespace: testNS,
		Name:      pod.Name,
		Operation: admissionv1.Create,
		Object:    runtime.RawExtension{Raw: raw},
	}
}

func TestReview(t *testing.T) {
	notPlaceholder := placeholderOf(runnerID, node)
	notPlaceholder.Labels = nil
	errBoom := errors.New("boom")
	cases := map[string]struct {
		objects []runtime.Object
		pod     *v1.Pod
		mutate  func(*admissionv1.AdmissionRequest)
		// reactors fail verb on pods with the error.
		fail map[string]error
		// notStarted: the handler's informers were not started.
		notStarted  bool
		wantOutcome string
		// wantDeleted are the pods that must be gone; the others stay.
		wantDeleted []string
		wantWarning bool
		// wantCalls are the API calls made, "verb name".
		wantCalls []string
	}{
		"pinned workflow pod releases its runner's placeholder": {
			objects:     []runtime.Object{runnerPod(), placeholderOf(runnerID, node)},
			pod:         workflowPod(),
			wantOutcome: outcomeDeleted,
			wantDeleted: []string{runner + "-hold"},
			wantCalls:   []string{"get " + runner, "delete " + runner + "-hold"},
		},
		"placeholder of an older runner incarnation is left alone": {
			objects:     []runtime.Object{runnerPod(), placeholderOf("runner-1", node)},
			pod:         workflowPod(),
			wantOutcome: outcomeNone,
			wantCalls:   []string{"get " + runner, "list pods"},
		},
		"a pod named like the placeholder that is not one is left alone": {
			objects:     []runtime.Object{runnerPod(), notPlaceholder},
			pod:         workflowPod(),
			wantOutcome: outcomeNone,
			wantCalls:   []string{"list pods"},
		},
		"a placeholder under a generated name (its name was taken) is released": {
			objects:     []runtime.Object{runnerPod(), notPlaceholder, renamed(placeholderOf(runnerID, node), runner+"-hold-x7k2q", "")},
			pod:         workflowPod(),
			wantOutcome: outcomeDeleted,
			wantDeleted: []string{runner + "-hold-x7k2q"},
			wantCalls:   []string{"get " + runner, "delete " + runner + "-hold-x7k2q"},
		},
		"every placeholder of the incarnation on the node is released": {
			objects:     []runtime.Object{runnerPod(), placeholderOf(runnerID, node), renamed(placeholderOf(runnerID, node), "forged", "forged-uid")},
			pod:         workflowPod(),
			wantOutcome: outcomeDeleted,
			wantDeleted: []string{"forged", runner + "-hold"},
			wantCalls:   []string{"get " + runner, "delete forged", "delete " + runner + "-hold"},
		},
		"placeholder on another node is left alone": {
			objects:     []runtime.Object{runnerPod(), placeholderOf(runnerID, "n2")},
			pod:         workflowPod(),
			wantOutcome: outcomeNone,
			wantCalls:   []string{"list pods"},
		},
		"no placeholder in the cache: one list": {
			objects:     []runtime.Object{runnerPod()},
			pod:         workflowPod(),
			wantOutcome: outcomeNone,
			wantCalls:   []string{"list pods"},
		},
		"runner gone: garbage collection's job": {
			objects:     []runtime.Object{placeholderOf(runnerID, node)},
			pod:         workflowPod(),
			wantOutcome: outcomeNone,
			wantCalls:   []string{"get " + runner},
		},
		"pod without the label is not looked at": {
			objects:     []runtime.Object{runnerPod(), placeholderOf(runnerID, node)},
			pod:         st.MakePod().Namespace(testNS).Name("other").Node(node).Obj(),
			wantOutcome: outcomeNone,
		},
		"pod not pinned is not looked at (a scheduler places it)": {
			objects:     []runtime.Object{runnerPod(), placeholderOf(runnerID, node)},
			pod:         st.MakePod().Namespace(testNS).Name(runner+"-workflow").Label(DefaultRunnerPodLabel, runner).Obj(),
			wantOutcome: outcomeNone,
		},
		"dry run has no side effects": {
			objects:     []runtime.Object{runnerPod(), placeholderOf(runnerID, node)},
			pod:         workflowPod(),
			mutate:      func(r *admissionv1.AdmissionRequest) { r.DryRun = ptr.To(true) },
			wantOutcome: outcomeNone,
		},
		"update is not looked at": {
			objects:     []runtime.Object{runnerPod(), placeholderOf(runnerID, node)},
			pod:         workflowPod(),
			mutate:      func(r *admissionv1.AdmissionRequest) { r.Operation = admissionv1.Update },
			wantOutcome: outcomeNone,
		},
		"a placeholder's own creation is not looked at": {
			objects: []runtime.Object{runnerPod(), placeholderOf(runnerID, node)},
			pod: func() *v1.Pod {
				p := placeholderOf(runnerID, node)
				p.Labels[DefaultRunnerPodLabel] = runner
				return p
			}(),
			wantOutcome: outcomeNone,
		},
		"placeholder gone meanwhile (NotFound on delete)": {
			objects:     []runtime.Object{runnerPod(), placeholderOf(runnerID, node)},
			pod:         workflowPod(),
			fail:        map[string]error{"delete": apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, runner+"-hold")},
			wantOutcome: outcomeNone,
			wantCalls:   []string{"get " + runner, "delete " + runner + "-hold", "list pods"},
		},
		"placeholder replaced meanwhile (UID precondition conflict)": {
			objects:     []runtime.Object{runnerPod(), placeholderOf(runnerID, node)},
			pod:         workflowPod(),
			fail:        map[string]error{"delete": apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, runner+"-hold", errBoom)},
			wantOutcome: outcomeNone,
			wantCalls:   []string{"get " + runner, "delete " + runner + "-hold", "list pods"},
		},
		"delete fails: allowed with a warning": {
			objects:     []runtime.Object{runnerPod(), placeholderOf(runnerID, node)},
			pod:         workflowPod(),
			fail:        map[string]error{"delete": apierrors.NewInternalError(errBoom)},
			wantOutcome: outcomeError,
			wantWarning: true,
			wantCalls:   []string{"get " + runner, "delete " + runner + "-hold"},
		},
		"a placeholder the informers do not show yet is listed and released": {
			objects:     []runtime.Object{runnerPod(), placeholderOf(runnerID, node)},
			pod:         workflowPod(),
			notStarted:  true,
			wantOutcome: outcomeDeleted,
			wantDeleted: []string{runner + "-hold"},
			wantCalls:   []string{"list pods", "get " + runner, "delete " + runner + "-hold"},
		},
		"list fails: allowed with a warning": {
			objects:     []runtime.Object{runnerPod(), placeholderOf(runnerID, node)},
			pod:         workflowPod(),
			notStarted:  true,
			fail:        map[string]error{"list": apierrors.NewTimeoutError("slow", 1)},
			wantOutcome: outcomeError,
			wantWarning: true,
			wantCalls:   []string{"list pods"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			client := fake.NewClientset(tc.objects...)
			h := NewHandler(client, Options{})
			if !tc.notStarted {
				startHandler(t, h)
			}
			client.ClearActions() // the informers' list and watch
			for verb, err := range tc.fail {
				client.PrependReactor(verb, "pods", func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, err })
			}
			req := createRequest(t, tc.pod)
			if tc.mutate != nil {
				tc.mutate(req)
			}
			deletedBefore := counter(t, placeholdersDeleted)
			outcomeBefore := counter(t, reviews.WithLabelValues(tc.wantOutcome))
			resp, outcome := h.Review(t.Context(), req)
			wantCount := float64(len(tc.wantDeleted))
			if got := counter(t, placeholdersDeleted) - deletedBefore; got != wantCount {
				t.Errorf("tandem_webhook_placeholders_deleted_total grew by %v, want %v", got, wantCount)
			}
			// Review does not count; serveReview does, with Review's outcome.
			if got := counter(t, reviews.WithLabelValues(tc.wantOutcome)) - outcomeBefore; got != 0 {
				t.Errorf("Review counted itself: reviews{outcome=%s} grew by %v", tc.wantOutcome, got)
			}
			if !resp.Allowed || resp.UID != req.UID || resp.Result != nil {
				t.Errorf("response = %+v, want allowed with the request's UID", resp)
			}
			if outcome != tc.wantOutcome {
				t.Errorf("outcome = %q, want %q", outcome, tc.wantOutcome)
			}
			if got := len(resp.Warnings) > 0; got != tc.wantWarning {
				t.Errorf("warnings = %q, want some: %v", resp.Warnings, tc.wantWarning)
			}
			uids := map[string]types.UID{}
			for _, o := range tc.objects {
				uids[o.(*v1.Pod).Name] = o.(*v1.Pod).UID
			}
			var calls []string
			for _, a := range client.Actions() {
				switch a := a.(type) {
				case clienttesting.DeleteAction:
					calls = append(calls, "delete "+a.GetName())
					opts := a.GetDeleteOptions()
					if opts.GracePeriodSeconds == nil || *opts.GracePeriodSeconds != 0 {
						t.Errorf("delete grace period = %v, want 0", opts.GracePeriodSeconds)
					}
					if opts.Preconditions == nil || opts.Preconditions.UID == nil || *opts.Preconditions.UID != uids[a.GetName()] {
						t.Errorf("delete preconditions = %+v, want the placeholder's UID", opts.Preconditions)
					}
				case clienttesting.GetAction:
					calls = append(calls, "get "+a.GetName())
				default:
					calls = append(calls, a.GetVerb()+" "+a.GetResource().Resource)
				}
			}
			if diff := cmp.Diff(tc.wantCalls, calls); diff != "" {
				t.Errorf("API calls (-want,+got):\n%s", diff)
			}
			for _, o := range tc.objects {
				name := o.(*v1.Pod).Name
				_, err := client.Tracker().Get(v1.SchemeGroupVersion.WithResource("pods"), testNS, name)
				if gone, want := apierrors.IsNotFound(err), slices.Contains(tc.wantDeleted, name); gone != want {
					t.Errorf("pod %s deleted = %v, want %v", name, gone, want)
				}
			}
		})
	}
}

// startHandler starts h's informers until the test ends.
func startHandler(t *testing.T, h *Handler) {
	t.Helper()
	if err := h.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func counter(t *testing.T, m metrics.CounterMetric) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(m)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Over HTTP: the response is an admission.k8s.io/v1 AdmissionReview with the
// request's UID; a body that is not a review is a 400 (the apiserver then
// applies the failurePolicy); /healthz answers.
func TestServeHTTP(t *testing.T) {
	client := fake.NewClientset(runnerPod(), placeholderOf(runnerID, node))
	h := NewHandler(client, Options{})
	startHandler(t, h)
	srv := httptest.NewServer(h)
	defer srv.Close()

	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  createRequest(t, workflowPod()),
	}
	body, err := json.Marshal(review)
	if err != nil {
		t.Fatal(err)
	}
	deletedReviews := counter(t, reviews.WithLabelValues(outcomeDeleted))
	got := post(t, srv.URL+Path, body, http.StatusOK)
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(got, &out); err != nil {
		t.Fatalf("decoding %s: %v", got, err)
	}
	if out.APIVersion != "admission.k8s.io/v1" || out.Kind != "AdmissionReview" || out.Response == nil ||
		out.Response.UID != "review-1" || !out.Response.Allowed {
		t.Errorf("review = %s, want an allowed admission.k8s.io/v1 response with UID review-1", got)
	}
	if h.Reviewed() != 1 {
		t.Errorf("Reviewed() = %d, want 1", h.Reviewed())
	}
	if got := counter(t, reviews.WithLabelValues(outcomeDeleted)) - deletedReviews; got != 1 {
		t.Errorf("reviews{outcome=deleted} grew by %v, want 1", got)
	}
	if _, err := client.CoreV1().Pods(testNS).Get(context.Background(), contract.PlaceholderName(runner), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("placeholder still there after the review (err %v)", err)
	}

	post(t, srv.URL+Path, []byte("{not json"), http.StatusBadRequest)
	post(t, srv.URL+Path, []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`), http.StatusBadRequest)
	if h.Reviewed() != 1 {
		t.Errorf("Reviewed() = %d after malformed reviews, want still 1", h.Reviewed())
	}

	resp, err := http.Get(srv.URL + HealthzPath)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET %s = %d, want 200", HealthzPath, resp.StatusCode)
	}
}

func post(t *testing.T, url string, body []byte, wantStatus int) []byte {
	t.Helper()
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != wantStatus {
		t.Errorf("POST %s = %d (%s), want %d", url, resp.StatusCode, buf.String(), wantStatus)
	}
	return buf.Bytes()
}

// Issue 37: reviews had no concurrency bound, so a flood of them (anyone
// who reaches the port, or creates labelled pinned pods) held memory and
// the webhook's API budget until real workflow pods' reviews timed out.
// Beyond MaxInFlight a review is answered 429 at once, unread (the
// apiserver allows the pod: failurePolicy Ignore), and counted; once one in
// flight ends, reviews are answered again.
func TestSaturatedReviewsAreAnsweredAtOnce(t *testing.T) {
	client := fake.NewClientset(runnerPod(), placeholderOf(runnerID, node))
	entered, release := make(chan struct{}), make(chan struct{})
	h := NewHandler(client, Options{MaxInFlight: 1})
	startHandler(t, h)
	client.PrependReactor("get", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		entered <- struct{}{}
		<-release
		return false, nil, nil
	})
	srv := httptest.NewServer(h)
	defer srv.Close()
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  createRequest(t, workflowPod()),
	})
	if err != nil {
		t.Fatal(err)
	}
	first := make(chan []byte)
	go func() { first <- post(t, srv.URL+Path, body, http.StatusOK) }()
	<-entered // the first review holds the only slot, at its read of the runner

	saturated := counter(t, reviews.WithLabelValues(outcomeSaturated))
	post(t, srv.URL+Path, body, http.StatusTooManyRequests)
	if got := counter(t, reviews.WithLabelValues(outcomeSaturated)) - saturated; got != 1 {
		t.Errorf("reviews{outcome=saturated} grew by %v, want 1", got)
	}
	close(release)
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(<-first, &out); err != nil || out.Response == nil || !out.Response.Allowed {
		t.Fatalf("the review in flight: %+v, %v; want it answered", out.Response, err)
	}
	go func() {
		for range entered { // later reviews' reads go through
		}
	}()
	defer close(entered)
	post(t, srv.URL+Path, body, http.StatusOK)
	if got := h.Reviewed(); got != 2 {
		t.Errorf("Reviewed() = %d, want 2 (the saturated one was not read)", got)
	}
}

// A body beyond maxReviewBytes is not read to its end: 400, and the
// apiserver applies the failurePolicy.
func TestReviewBodyIsBounded(t *testing.T) {
	srv := httptest.NewServer(NewHandler(fake.NewClientset(), Options{}))
	defer srv.Close()
	pod := workflowPod()
	pod.Annotations = map[string]string{"padding": strings.Repeat("x", maxReviewBytes)}
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  createRequest(t, pod),
	})
	if err != nil {
		t.Fatal(err)
	}
	post(t, srv.URL+Path, body, http.StatusBadRequest)
}

// Issue 37: each review listed the node's placeholders from the apiserver,
// so a flood of forged reviews cost the apiserver a list each. The handler
// reads its informers of the runner namespaces: a placeholder created after
// it started is found (the watch) and released without a list, and a
// review from a namespace it does not watch makes no API call.
func TestReviewReadsTheInformers(t *testing.T) {
	client := fake.NewClientset(runnerPod())
	h := NewHandler(client, Options{Namespaces: []string{testNS}})
	startHandler(t, h)

	elsewhere := placeholderOf(runnerID, node)
	elsewhere.Namespace = "mallory"
	for _, p := range []*v1.Pod{elsewhere, placeholderOf(runnerID, node)} {
		if _, err := client.CoreV1().Pods(p.Namespace).Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, wait.ForeverTestTimeout, true, func(context.Context) (bool, error) {
		cached, _ := h.placeholders.on(testNS, node)
		return len(cached) == 1, nil
	}); err != nil {
		t.Fatalf("the informer never showed the placeholder created after Start: %v", err)
	}
	if got, watched := h.placeholders.on("mallory", node); len(got) != 0 || watched {
		t.Errorf("placeholders of an unwatched namespace: %v (watched %v), want none", got, watched)
	}

	client.ClearActions()
	forged := workflowPod()
	forged.Namespace = "mallory"
	req := createRequest(t, forged)
	req.Namespace = "mallory"
	if _, outcome := h.Review(t.Context(), req); outcome != outcomeNone {
		t.Errorf("review in an unwatched namespace: outcome %q, want %q", outcome, outcomeNone)
	}
	if got := client.Actions(); len(got) != 0 {
		t.Errorf("a review that finds no placeholder made API calls: %v", got)
	}
	if _, outcome := h.Review(t.Context(), createRequest(t, workflowPod())); outcome != outcomeDeleted {
		t.Errorf("review of the runner's pinned pod: outcome %q, want %q", outcome, outcomeDeleted)
	}
	for _, a := range client.Actions() {
		if a.GetVerb() == "list" {
			t.Errorf("a review that found its placeholder in the cache listed pods: %v", a)
		}
	}
	if _, err := client.CoreV1().Pods("mallory").Get(t.Context(), elsewhere.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("the pod in the unwatched namespace: %v, want it left alone", err)
	}
}

// The first review from each address is logged (where the kube-apiserver
// connects from, for the NetworkPolicy's `from`), once, and the addresses
// remembered are bounded: a flood from many addresses does not grow memory.
func TestSourcesAreLoggedOnceAndBounded(t *testing.T) {
	var s sources
	if seen, _ := s.seenBefore("10.0.0.1"); seen {
		t.Error("the first address counts as seen")
	}
	if seen, _ := s.seenBefore("10.0.0.1"); !seen {
		t.Error("an address seen before is logged again")
	}
	full := false
	for i := 2; i <= maxSources; i++ {
		_, full = s.seenBefore(fmt.Sprintf("10.0.0.%d", i))
	}
	if !full {
		t.Errorf("the %dth address did not fill the set", maxSources)
	}
	if seen, _ := s.seenBefore("10.0.1.1"); !seen || len(s.hosts) != maxSources {
		t.Errorf("beyond %d addresses one more is remembered (%d)", maxSources, len(s.hosts))
	}
}

// The informers' view can lag (a watch broken by an apiserver restart):
// what they show must not stop a review from releasing what is really
// there, as the live list of every review did. Two cases a review found
// in the cache and released nothing: the placeholder was lost and
// re-created under its name (the cached UID fails the delete's
// precondition), and ARC re-created the runner (the cache shows the earlier
// incarnation's placeholder, not the new one's). Then the apiserver is
// asked, and the real placeholder goes.
func TestReviewOfAStaleCache(t *testing.T) {
	stale := func(p *v1.Pod) *v1.Pod { p.UID = "stale-" + p.UID; return p }
	for name, tc := range map[string]struct {
		cached, live *v1.Pod
	}{
		"placeholder re-created under its name": {cached: stale(placeholderOf(runnerID, node)), live: placeholderOf(runnerID, node)},
		"runner re-created":                     {cached: placeholderOf("runner-1", node), live: renamed(placeholderOf(runnerID, node), runner+"-hold-x7k2q", "")},
	} {
		t.Run(name, func(t *testing.T) {
			client := fake.NewClientset(runnerPod(), tc.live)
			// The apiserver's precondition: a delete of another UID conflicts.
			client.PrependReactor("delete", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
				d := a.(clienttesting.DeleteAction)
				obj, err := client.Tracker().Get(v1.SchemeGroupVersion.WithResource("pods"), d.GetNamespace(), d.GetName())
				if err != nil {
					return true, nil, err
				}
				if pre := d.GetDeleteOptions().Preconditions; pre != nil && pre.UID != nil && *pre.UID != obj.(*v1.Pod).UID {
					return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, d.GetName(), errors.New("UID precondition"))
				}
				return false, nil, nil
			})
			h := NewHandler(client, Options{})
			// Not started: its cache holds what the test puts there.
			if err := h.placeholders.informers[metav1.NamespaceAll].GetIndexer().Add(tc.cached); err != nil {
				t.Fatal(err)
			}
			if _, outcome := h.Review(t.Context(), createRequest(t, workflowPod())); outcome != outcomeDeleted {
				t.Errorf("outcome %q, want %q", outcome, outcomeDeleted)
			}
			if _, err := client.CoreV1().Pods(testNS).Get(t.Context(), tc.live.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("the runner's placeholder %s is still there (%v)", tc.live.Name, err)
			}
		})
	}
}
