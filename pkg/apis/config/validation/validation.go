// Package validation validates the internal plugin args in
// github.com/tandem-scheduler/tandem/pkg/apis/config.
package validation

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	v1helper "k8s.io/kubernetes/pkg/apis/core/v1/helper"

	"github.com/tandem-scheduler/tandem/contract"
	"github.com/tandem-scheduler/tandem/pkg/apis/config"
)

// standardContainerResources are the unprefixed resource names a container
// may request, besides hugepages-<size>.
var standardContainerResources = sets.New(
	v1.ResourceCPU,
	v1.ResourceMemory,
	v1.ResourceEphemeralStorage,
)

// ValidateWorkflowReservationArgs validates that WorkflowReservationArgs are
// set correctly.
func ValidateWorkflowReservationArgs(path *field.Path, args *config.WorkflowReservationArgs) error {
	var allErrs field.ErrorList

	selectorPath := path.Child("runnerSelector")
	if args.RunnerSelector == nil {
		allErrs = append(allErrs, field.Required(selectorPath, "must select the runner pods"))
	} else {
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(args.RunnerSelector, metav1validation.LabelSelectorValidationOptions{}, selectorPath)...)
	}

	labelPath := path.Child("runnerPodLabel")
	if args.RunnerPodLabel == "" {
		allErrs = append(allErrs, field.Required(labelPath, "must name the label that links workflow pods to their runner pod"))
	} else {
		allErrs = append(allErrs, metav1validation.ValidateLabelName(args.RunnerPodLabel, labelPath)...)
	}

	allErrs = append(allErrs, validateRequests(args.DefaultWorkflowRequests, path.Child("defaultWorkflowRequests"))...)
	allErrs = append(allErrs, validateRequests(args.DefaultStepRequests, path.Child("defaultStepRequests"))...)
	allErrs = append(allErrs, validateMaximum(args, path.Child("maxWorkflowRequests"))...)
	allErrs = append(allErrs, validateScoringStrategy(args.ScoringStrategy, path.Child("scoringStrategy"))...)
	// The plugin takes the args as defaulting left them: a zero here was
	// set so (or the args were built in code without defaulting).
	if d := args.ReconcileInterval.Duration; d < time.Second {
		allErrs = append(allErrs, field.Invalid(path.Child("reconcileInterval"), d.String(), "must be at least 1s"))
	}
	initial, maxBackoff := args.PodInitialBackoffSeconds, args.PodMaxBackoffSeconds
	if initial < 1 {
		allErrs = append(allErrs, field.Invalid(path.Child("podInitialBackoffSeconds"), initial, "must be at least 1"))
	}
	if maxBackoff < initial {
		allErrs = append(allErrs, field.Invalid(path.Child("podMaxBackoffSeconds"), maxBackoff, "must be greater than or equal to podInitialBackoffSeconds"))
	}
	if d := args.NoWorkflowPodGrace.Duration; d <= 0 {
		allErrs = append(allErrs, field.Invalid(path.Child("noWorkflowPodGrace"), d.String(), "must be positive"))
	}
	if args.PlaceholderImage == "" {
		allErrs = append(allErrs, field.Required(path.Child("placeholderImage"), "the image of placeholder and pair pods"))
	}
	switch args.ReservationMode {
	case config.ReservationModeMemory, config.ReservationModePods:
	default:
		allErrs = append(allErrs, field.NotSupported(path.Child("reservationMode"), args.ReservationMode,
			[]string{config.ReservationModeMemory, config.ReservationModePods}))
	}
	if len(args.DefaultHostPorts) > contract.MaxHostPorts {
		allErrs = append(allErrs, field.TooMany(path.Child("defaultHostPorts"), len(args.DefaultHostPorts), contract.MaxHostPorts))
	}
	seen := map[contract.HostPort]bool{}
	for i, s := range args.DefaultHostPorts {
		p, err := contract.ParseHostPort(s)
		if err != nil {
			allErrs = append(allErrs, field.Invalid(path.Child("defaultHostPorts").Index(i), s, err.Error()))
			continue
		}
		if seen[p] {
			allErrs = append(allErrs, field.Duplicate(path.Child("defaultHostPorts").Index(i), s))
		}
		seen[p] = true
	}
	allErrs = append(allErrs, validateNamespaces(path.Child("hookTemplateNamespaces"), args.HookTemplateNamespaces)...)
	allErrs = append(allErrs, validateNamespaces(path.Child("runnerNamespaces"), args.RunnerNamespaces)...)
	return allErrs.ToAggregate()
}

// validateNamespaces checks a list of namespace names, each named once.
func validateNamespaces(path *field.Path, list []string) field.ErrorList {
	var allErrs field.ErrorList
	namespaces := sets.New[string]()
	for i, ns := range list {
		nsPath := path.Index(i)
		for _, msg := range utilvalidation.IsDNS1123Label(ns) {
			allErrs = append(allErrs, field.Invalid(nsPath, ns, msg))
		}
		if namespaces.Has(ns) {
			allErrs = append(allErrs, field.Duplicate(nsPath, ns))
		}
		namespaces.Insert(ns)
	}
	return allErrs
}

// validateMaximum checks maxWorkflowRequests: positive quantities of
// resources a container can request, that the defaults (workflow and step
// headroom together, as a reservation holds them) are within: a runner
// beyond the maximum is sized by them.
func validateMaximum(args *config.WorkflowReservationArgs, path *field.Path) field.ErrorList {
	allErrs := validateRequests(args.MaxWorkflowRequests, path)
	for _, name := range slices.Sorted(maps.Keys(args.MaxWorkflowRequests)) {
		most := args.MaxWorkflowRequests[name]
		if most.Sign() == 0 {
			allErrs = append(allErrs, field.Invalid(path.Key(string(name)), most.String(), "must be greater than 0"))
			continue
		}
		held := args.DefaultWorkflowRequests[name].DeepCopy()
		held.Add(args.DefaultStepRequests[name])
		if name != v1.ResourcePods && held.Cmp(most) > 0 {
			allErrs = append(allErrs, field.Invalid(path.Key(string(name)), most.String(),
				fmt.Sprintf("must be at least defaultWorkflowRequests and defaultStepRequests together (%s)", held.String())))
		}
	}
	return allErrs
}

// validateRequests checks that every name in requests is a resource a
// container can request and every quantity is non-negative. Entries are
// visited in name order so errors are deterministic.
func validateRequests(requests v1.ResourceList, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	names := make([]string, 0, len(requests))
	for name := range requests {
		names = append(names, string(name))
	}
	sort.Strings(names)
	for _, name := range names {
		p := path.Key(name)
		allErrs = append(allErrs, ValidateResourceName(v1.ResourceName(name), p)...)
		if q := requests[v1.ResourceName(name)]; q.Sign() < 0 {
			allErrs = append(allErrs, field.Invalid(p, q.String(), "must be greater than or equal to 0"))
		}
	}
	return allErrs
}

// ValidateResourceName mirrors the API server's check for container
// resource names: a qualified name that is either a standard container
// resource, a *kubernetes.io/ resource or a valid extended resource. The
// plugin checks the sizing annotations with it too.
func ValidateResourceName(name v1.ResourceName, path *field.Path) field.ErrorList {
	if standardContainerResources.Has(name) {
		// Valid, and asked for in every runner's size (PreFilter parses it
		// every cycle): without IsQualifiedName's regular expressions.
		return nil
	}
	var allErrs field.ErrorList
	for _, msg := range utilvalidation.IsQualifiedName(string(name)) {
		allErrs = append(allErrs, field.Invalid(path, name, msg))
	}
	if len(allErrs) != 0 {
		return allErrs
	}
	if !strings.Contains(string(name), "/") {
		if !standardContainerResources.Has(name) && !v1helper.IsHugePageResourceName(name) {
			allErrs = append(allErrs, field.Invalid(path, name, "must be a standard resource for containers"))
		}
	} else if !v1helper.IsNativeResource(name) && !v1helper.IsExtendedResourceName(name) {
		allErrs = append(allErrs, field.Invalid(path, name, "doesn't follow extended resource name standard"))
	}
	return allErrs
}

// validateScoringStrategy checks the type and that every resource is named
// once with a weight from 1 to 100.
func validateScoringStrategy(s *config.ScoringStrategy, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if s == nil {
		return append(allErrs, field.Required(path, "defaulting sets it"))
	}
	switch s.Type {
	case config.LeastAllocated, config.MostAllocated:
	default:
		allErrs = append(allErrs, field.NotSupported(path.Child("type"), s.Type, []string{string(config.LeastAllocated), string(config.MostAllocated)}))
	}
	if len(s.Resources) == 0 {
		allErrs = append(allErrs, field.Required(path.Child("resources"), "at least one resource"))
	}
	seen := map[string]bool{}
	for i, r := range s.Resources {
		p := path.Child("resources").Index(i)
		allErrs = append(allErrs, ValidateResourceName(v1.ResourceName(r.Name), p.Child("name"))...)
		if seen[r.Name] {
			allErrs = append(allErrs, field.Duplicate(p.Child("name"), r.Name))
		}
		seen[r.Name] = true
		if r.Weight < 1 || r.Weight > 100 {
			allErrs = append(allErrs, field.Invalid(p.Child("weight"), r.Weight, "must be from 1 to 100"))
		}
	}
	return allErrs
}

// WarningsForWorkflowReservationArgs returns what in valid args is likely a
// mistake, for the log: a placeholderImage that names no registry (a short
// name such as the default pause:3.10), which each node's container runtime
// resolves its own way or not at all.
func WarningsForWorkflowReservationArgs(args *config.WorkflowReservationArgs) []string {
	var warnings []string
	if !qualifiedImage(args.PlaceholderImage) {
		warnings = append(warnings, fmt.Sprintf("placeholderImage %q names no registry: each node's container runtime resolves a short name its own way; set a fully qualified image (the chart's default is tandem-pause next to tandem-scheduler's image)", args.PlaceholderImage))
	}
	return warnings
}

// qualifiedImage reports whether ref starts with a registry host: a first
// path component with a dot or a port, or localhost, as the container
// runtimes tell a registry from a repository path.
func qualifiedImage(ref string) bool {
	host, _, ok := strings.Cut(ref, "/")
	return ok && (strings.ContainsAny(host, ".:") || host == "localhost")
}
