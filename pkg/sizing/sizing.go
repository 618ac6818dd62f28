package sizing

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1defaults "k8s.io/kubernetes/pkg/apis/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/apis/config"
	configvalidation "github.com/tandem-scheduler/tandem/pkg/apis/config/validation"
)

// Sizes is the outcome of resolving a runner's workflow size.
type Sizes struct {
	// workflow is the workflow pod's request (plus step headroom), or zero
	// when no source answered.
	Workflow contract.Amount
	Source   contract.Source
	// problems are the sources that were meant to answer but could not,
	// in order; each becomes a Warning event on the runner.
	Problems []error
	// notice is a warning about the source that answered (e.g. a hook
	// template without $job); it becomes a Warning event too.
	Notice string
	// step is the headroom for container-step pods included in workflow
	// (one pod included), zero for none; stepSource says where it came from.
	Step       contract.Amount
	StepSource contract.Source
	// ports are the host ports the workflow pod will use.
	Ports []contract.HostPort
	// intended is true when some source was configured (even if broken).
	Intended bool
	// notListed is set when the runner's hook template is in a namespace
	// of hookTemplateNamespaces whose ConfigMaps are not listed yet: the
	// runner waits rather than being sized by the next source.
	NotListed error
}

// parseResourceList parses "name=quantity[,name=quantity...]".
func parseResourceList(s string) (v1.ResourceList, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("empty value")
	}
	rl := v1.ResourceList{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, value, ok := strings.Cut(part, "=")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || name == "" || value == "" {
			return nil, fmt.Errorf("%q is not name=quantity", part)
		}
		if errs := configvalidation.ValidateResourceName(v1.ResourceName(name), nil); len(errs) > 0 {
			return nil, fmt.Errorf("invalid resource name %q: %w", name, errs.ToAggregate())
		}
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return nil, fmt.Errorf("invalid quantity %q for %s: %w", value, name, err)
		}
		if err := contract.CheckSize(v1.ResourceName(name), q); err != nil {
			return nil, err
		}
		if _, dup := rl[v1.ResourceName(name)]; dup {
			return nil, fmt.Errorf("resource %s given twice", name)
		}
		rl[v1.ResourceName(name)] = q
	}
	if len(rl) == 0 {
		return nil, errors.New("no resources given")
	}
	return rl, nil
}

// HookTemplateRef locates the runner's hook template: the env var's path,
// resolved through the container's volume mounts to a ConfigMap key.
type HookTemplateRef struct {
	Path      string
	ConfigMap string
	Key       string
}

// FindHookTemplate returns the runner's hook template reference, nil when the
// runner names no template, or an error when the path is not on a ConfigMap.
func FindHookTemplate(pod *v1.Pod) (*HookTemplateRef, error) {
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		var file string
		for _, e := range c.Env {
			if e.Name == contract.HookTemplateEnv {
				file = path.Clean(e.Value)
			}
		}
		if file == "" || file == "." {
			continue
		}
		for _, m := range c.VolumeMounts {
			var rel string
			mount := path.Clean(m.MountPath)
			switch {
			case m.SubPath != "" && file == mount:
				rel = m.SubPath
			case m.SubPath == "" && strings.HasPrefix(file, mount+"/"):
				rel = strings.TrimPrefix(file, mount+"/")
			default:
				continue
			}
			vol := volumeByName(pod, m.Name)
			if vol == nil || vol.ConfigMap == nil {
				return nil, fmt.Errorf("hook template %s is mounted from volume %q, which is not a ConfigMap volume", file, m.Name)
			}
			key := rel
			for _, item := range vol.ConfigMap.Items {
				if path.Clean(item.Path) == rel {
					key = item.Key
				}
			}
			return &HookTemplateRef{Path: file, ConfigMap: vol.ConfigMap.Name, Key: key}, nil
		}
		return nil, fmt.Errorf("hook template %s is not on any volume mount of container %q", file, c.Name)
	}
	return nil, nil
}

func volumeByName(pod *v1.Pod, name string) *v1.Volume {
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == name {
			return &pod.Spec.Volumes[i]
		}
	}
	return nil
}

// parsedTemplate is what a hook template says about the pods a hook builds.
type parsedTemplate struct {
	// workflow is the workflow pod's request: "$job" merged into the job
	// container, "$<service>" into that service, every other container a
	// sidecar; all of them run, so all count, as do init containers and
	// overhead.
	workflow v1.ResourceList
	// step is a container-step pod's request: both hooks merge "$job" into
	// the step container and append the sidecars; services do not run there.
	step v1.ResourceList
	// hasJob reports whether the template has a $job container.
	hasJob bool
	// claims names the template's resourceClaims: tandem sizes nothing
	// from them (docs/arc.md, "GPU runners").
	claims []string
}

// hookTemplateRequests computes the workflow pod's request from a hook
// template (a PodTemplateSpec in YAML).
func hookTemplateRequests(data string) (v1.ResourceList, error) {
	t, err := parseHookTemplate(data)
	if err != nil {
		return nil, err
	}
	return t.workflow, nil
}

// parseHookTemplate reads a hook template. Pods are defaulted as the
// apiserver defaults them (a container with limits only requests its
// limits), then their requests are computed exactly as Kubernetes computes
// a pod's request.
func parseHookTemplate(data string) (*parsedTemplate, error) {
	var tmpl v1.PodTemplateSpec
	if err := yaml.Unmarshal([]byte(data), &tmpl); err != nil {
		return nil, fmt.Errorf("cannot parse as a PodTemplateSpec: %w", err)
	}
	out := &parsedTemplate{}
	workflowPod := &v1.Pod{Spec: *tmpl.Spec.DeepCopy()}
	stepPod := &v1.Pod{Spec: *tmpl.Spec.DeepCopy()}
	stepPod.Spec.Containers = nil
	for _, c := range tmpl.Spec.Containers {
		out.hasJob = out.hasJob || c.Name == contract.JobContainer
		if c.Name == contract.JobContainer || !strings.HasPrefix(c.Name, "$") {
			stepPod.Spec.Containers = append(stepPod.Spec.Containers, *c.DeepCopy())
		}
	}
	for _, c := range tmpl.Spec.ResourceClaims {
		out.claims = append(out.claims, c.Name)
	}
	var err error
	if out.workflow, err = podRequests(workflowPod); err != nil {
		return nil, err
	}
	if out.step, err = podRequests(stepPod); err != nil {
		return nil, err
	}
	return out, nil
}

// podRequests defaults pod and returns its request.
func podRequests(pod *v1.Pod) (v1.ResourceList, error) {
	corev1defaults.SetObjectDefaults_Pod(pod)
	rl := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	for name, q := range rl {
		switch {
		case q.Sign() < 0:
			// The apiserver would refuse such a pod; it must not free room here.
			return nil, fmt.Errorf("negative request %s=%s", name, q.String())
		case q.Sign() == 0:
			delete(rl, name) // asks for nothing: not kept (one name per runner would grow the tally)
		default:
			if err := contract.CheckSize(name, q); err != nil {
				return nil, err
			}
		}
	}
	return rl, nil
}

// Sizer resolves a runner's workflow size from its sources.
type Sizer struct {
	// templates caches parsed hook templates by ConfigMap, resource
	// version and key: every runner of a scale set mounts the same one and
	// every scheduling attempt reads it.
	templates templateCache

	configMaps       corelisters.ConfigMapLister
	defaultWorkflow  v1.ResourceList
	defaultStep      v1.ResourceList
	stepFromTemplate bool
	defaultPorts     []contract.HostPort
	// maxWorkflow is the most one runner's reservation may hold
	// (maxWorkflowRequests); empty: no maximum.
	maxWorkflow v1.ResourceList
}

// NewSizer returns the sizer that args configure; the hook templates are
// read through the lister setConfigMaps gives it (none: no template sizes a
// runner).
func NewSizer(args *config.WorkflowReservationArgs) (*Sizer, error) {
	s := &Sizer{defaultWorkflow: args.DefaultWorkflowRequests, defaultStep: args.DefaultStepRequests, stepFromTemplate: args.StepRequestsFromHookTemplate, maxWorkflow: args.MaxWorkflowRequests}
	for _, p := range args.DefaultHostPorts {
		hp, err := contract.ParseHostPort(p)
		if err != nil {
			return nil, fmt.Errorf("defaultHostPorts: %w", err)
		}
		s.defaultPorts = append(s.defaultPorts, hp)
	}
	return s, nil
}

// SetConfigMaps sets the lister hook templates are read through. It is
// set once, before the first scheduling cycle.
func (s *Sizer) SetConfigMaps(l corelisters.ConfigMapLister) { s.configMaps = l }

// ConfigMaps returns the lister hook templates are read through.
func (s *Sizer) ConfigMaps() corelisters.ConfigMapLister { return s.configMaps }

// Size resolves the workflow pod's size: annotation, then hook template,
// then the default; a broken source is recorded and the next one tried.
// Step headroom (annotation, else default) is added on top, and the host
// ports to hold (annotation, else default) are read. A size beyond the
// profile's maxWorkflowRequests is a broken source too: the runner is then
// sized by the defaults alone (which are within it), or not at all.
func (s *Sizer) Size(pod *v1.Pod) Sizes {
	out := s.size(pod, false)
	if out.NotListed != nil {
		return out
	}
	err := s.BeyondMaximum(out.Workflow)
	if err == nil {
		return out
	}
	d := s.size(pod, true)
	d.Problems = append(slices.Clip(out.Problems), fmt.Errorf("the size from %s, %s with step headroom, %w", out.Source, out.Workflow, err))
	d.Intended = true
	return d
}

// BeyondMaximum returns what a reservation of workflow holds beyond
// maxWorkflowRequests, nil if nothing.
func (s *Sizer) BeyondMaximum(workflow contract.Amount) error {
	if len(s.maxWorkflow) == 0 || workflow.IsZero() {
		return nil
	}
	held := workflow.ToList()
	for _, name := range slices.Sorted(maps.Keys(s.maxWorkflow)) {
		most := s.maxWorkflow[name]
		if q, ok := held[name]; ok && name != v1.ResourcePods && q.Cmp(most) > 0 {
			return fmt.Errorf("holds %s %s, more than maxWorkflowRequests allows one runner (%s)", q.String(), name, most.String())
		}
	}
	return nil
}

// size is Size without the maximum; defaultsOnly sizes by the defaults
// alone, as if the runner's own sources said nothing.
func (s *Sizer) size(pod *v1.Pod, defaultsOnly bool) Sizes {
	var out Sizes
	var workflow v1.ResourceList
	// The hook template, read once: nil until asked for, then its
	// parse, or the error, or found=false when the runner names none.
	var tmpl *parsedTemplate
	var tmplErr error
	var tmplNotice string
	tmplRead, tmplFound := false, false
	template := func() (*parsedTemplate, bool, error) {
		if !tmplRead {
			tmplRead = true
			var claims string
			tmpl, tmplFound, tmplNotice, claims, tmplErr = s.fromHookTemplate(pod)
			out.Notice = claims
			if errors.As(tmplErr, new(notListedError)) {
				out.NotListed = tmplErr
			}
		}
		return tmpl, tmplFound, tmplErr
	}

	if v, ok := pod.Annotations[contract.WorkflowRequestsAnnotation]; ok && !defaultsOnly {
		out.Intended = true
		rl, err := parseResourceList(v)
		switch {
		case err != nil:
			out.Problems = append(out.Problems, fmt.Errorf("annotation %s=%q: %w", contract.WorkflowRequestsAnnotation, v, err))
		case contract.AmountFromList(rl).IsZero():
			out.Problems = append(out.Problems, fmt.Errorf("annotation %s=%q asks for no resources", contract.WorkflowRequestsAnnotation, v))
		default:
			workflow, out.Source = rl, contract.SourceAnnotation
		}
	}
	if workflow == nil && !defaultsOnly {
		t, tried, err := template()
		out.Intended = out.Intended || tried
		switch {
		case out.NotListed != nil:
			return out
		case err != nil:
			out.Problems = append(out.Problems, err)
		case tried:
			// A missing $job matters only when the template sized the
			// workflow pod; its claims whenever the runner has it read
			// (the hooks build the workflow pod from it all the same).
			workflow, out.Source = t.workflow, contract.SourceHookTemplate
			out.Notice = joinNotices(tmplNotice, out.Notice)
		}
	}
	if workflow == nil && len(s.defaultWorkflow) > 0 {
		out.Intended = true
		workflow, out.Source = s.defaultWorkflow, contract.SourceDefault
	}
	if workflow == nil {
		return out
	}
	out.Workflow = contract.AmountFromList(workflow)
	out.Workflow.Pods = 1

	step, stepSource := s.defaultStep, contract.SourceDefault
	if len(step) == 0 && s.stepFromTemplate && !defaultsOnly {
		if t, found, err := template(); err == nil && found {
			step, stepSource = t.step, contract.SourceHookTemplate
		}
	}
	if v, ok := pod.Annotations[contract.StepRequestsAnnotation]; ok && !defaultsOnly {
		if strings.EqualFold(strings.TrimSpace(v), contract.StepFromTemplate) {
			t, found, err := template()
			switch {
			case err != nil:
				out.Problems = append(out.Problems, fmt.Errorf("annotation %s=%q: %w", contract.StepRequestsAnnotation, v, err))
			case !found:
				out.Problems = append(out.Problems, fmt.Errorf("annotation %s=%q: the runner names no hook template (%s)", contract.StepRequestsAnnotation, v, contract.HookTemplateEnv))
			default:
				step, stepSource = t.step, contract.SourceHookTemplate
			}
		} else if rl, err := parseResourceList(v); err != nil {
			out.Problems = append(out.Problems, fmt.Errorf("annotation %s=%q: %w", contract.StepRequestsAnnotation, v, err))
		} else {
			step, stepSource = rl, contract.SourceAnnotation
		}
	}
	if extra := contract.AmountFromList(step); !extra.IsZero() {
		// A step pod is a pod too.
		extra.Pods = 1
		out.Step, out.StepSource = extra, stepSource
		out.Workflow = out.Workflow.Add(extra)
	}

	out.Ports = s.defaultPorts
	if v, ok := pod.Annotations[contract.HostPortsAnnotation]; ok {
		ports, err := parseHostPorts(v)
		if err != nil {
			out.Problems = append(out.Problems, fmt.Errorf("annotation %s=%q: %w", contract.HostPortsAnnotation, v, err))
		} else {
			out.Ports = ports
		}
	}
	return out
}

// fromHookTemplate reads the runner's hook template. found reports whether
// the runner names one at all. Its notices: noJob when the template has no $job container (it matters
// when the template sizes the workflow pod), claims when it gives the
// workflow pod resourceClaims (it matters whatever sized the reservation).
func (s *Sizer) fromHookTemplate(pod *v1.Pod) (t *parsedTemplate, found bool, noJob, claims string, err error) {
	ref, err := FindHookTemplate(pod)
	if err != nil {
		return nil, true, "", "", err
	}
	if ref == nil {
		return nil, false, "", "", nil
	}
	if s.configMaps == nil {
		return nil, true, "", "", fmt.Errorf("hook template %s: ConfigMap lookups are not available", ref.Path)
	}
	if !s.Listed(pod.Namespace) {
		return nil, true, "", "", notListedError{namespace: pod.Namespace}
	}
	cm, err := s.configMaps.ConfigMaps(pod.Namespace).Get(ref.ConfigMap)
	if apierrors.IsNotFound(err) {
		return nil, true, "", "", fmt.Errorf("hook template %s: ConfigMap %s/%s not found", ref.Path, pod.Namespace, ref.ConfigMap)
	}
	if err != nil {
		return nil, true, "", "", fmt.Errorf("hook template %s: %w", ref.Path, err)
	}
	data, ok := cm.Data[ref.Key]
	if !ok {
		return nil, true, "", "", fmt.Errorf("hook template %s: ConfigMap %s/%s has no key %q", ref.Path, pod.Namespace, ref.ConfigMap, ref.Key)
	}
	where := fmt.Sprintf("hook template %s (ConfigMap %s/%s key %q)", ref.Path, pod.Namespace, ref.ConfigMap, ref.Key)
	t, err = s.templates.parse(templateKey{uid: cm.UID, resourceVersion: cm.ResourceVersion, key: ref.Key}, data)
	if err != nil {
		return nil, true, "", "", fmt.Errorf("%s: %w", where, err)
	}
	if contract.AmountFromList(t.workflow).IsZero() {
		return nil, true, "", "", fmt.Errorf("%s asks for no resources: give %s requests or limits", where, contract.JobContainer)
	}
	if !t.hasJob {
		noJob = fmt.Sprintf("%s has no %s container: the job container will request nothing, only its other containers (%s) are reserved", where, contract.JobContainer, contract.FormatResources(t.workflow))
	}
	if len(t.claims) > 0 {
		claims = fmt.Sprintf("%s gives the workflow pod resourceClaims (%s): tandem holds no device for them, and the runner may land where none is free; ask for the device as an extended resource a DeviceClass maps instead", where, strings.Join(t.claims, ", "))
	}
	return t, true, noJob, claims, nil
}

// joinNotices joins the notices that are not empty.
func joinNotices(notices ...string) string {
	return strings.Join(slices.DeleteFunc(notices, func(n string) bool { return n == "" }), "; ")
}

// parseHostPorts reads "PORT[/PROTOCOL][,...]".
func parseHostPorts(s string) ([]contract.HostPort, error) {
	var out []contract.HostPort
	for _, part := range strings.Split(s, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		p, err := contract.ParseHostPort(part)
		if err != nil {
			return nil, err
		}
		if slices.Contains(out, p) {
			return nil, fmt.Errorf("host port %s given twice", p)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, errors.New("no host ports given")
	}
	if len(out) > contract.MaxHostPorts {
		return nil, fmt.Errorf("%d host ports given, at most %d are held", len(out), contract.MaxHostPorts)
	}
	return out, nil
}

// templateKey is one key of one version of a ConfigMap.
type templateKey struct {
	uid             types.UID
	resourceVersion string
	key             string
}

type templateResult struct {
	t   *parsedTemplate
	err error
}

// templateCache holds parsed hook templates; it starts over when it holds
// maxCachedTemplates (old versions are never asked for again).
type templateCache struct {
	mu sync.Mutex
	m  map[templateKey]templateResult
}

const maxCachedTemplates = 1024

func (c *templateCache) parse(k templateKey, data string) (*parsedTemplate, error) {
	if k.uid == "" || k.resourceVersion == "" {
		return parseHookTemplate(data)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.m[k]; ok {
		return r.t, r.err
	}
	if c.m == nil || len(c.m) >= maxCachedTemplates {
		c.m = map[templateKey]templateResult{}
	}
	t, err := parseHookTemplate(data)
	c.m[k] = templateResult{t: t, err: err}
	return t, err
}

// Listed reports whether namespace's hook templates can be read: false
// only while a namespace of hookTemplateNamespaces is not listed yet.
func (s *Sizer) Listed(namespace string) bool {
	l, ok := s.configMaps.(NamespacedConfigMaps)
	return !ok || l.Listed(namespace)
}
