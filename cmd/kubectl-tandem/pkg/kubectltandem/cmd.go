// Package kubectltandem is the kubectl plugin kubectl-tandem: what tandem's
// workflow reservations hold on each node, each runner's reservation and its
// phase, and why a runner or workflow pod is pending. It reads the cluster
// with the user's kubeconfig (list pods, nodes and Jobs; list events for
// explain) and computes everything from what it read, as the scheduler's
// WorkflowReservation plugin would.
package kubectltandem

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// Main runs kubectl-tandem with args (without the program name) and
// returns its exit code.
func Main(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cmd := NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	return 0
}

// options are the flags and what they resolve to.
type options struct {
	streams genericiooptions.IOStreams
	config  *genericclioptions.ConfigFlags

	runnerSelector string
	runnerPodLabel string
	schedulerNames []string
	rules          Rules

	// sources are where reservations come from.
	sources []Source
	// client and namespace are the kubeconfig's; unit tests replace them.
	client    func() (kubernetes.Interface, error)
	namespace func() (string, error)
	now       func() time.Time
}

// NewCommand returns the kubectl-tandem command, with kubectl's client
// flags (--kubeconfig, --context, -n, ...), writing to streams.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &options{
		streams: streams,
		config:  genericclioptions.NewConfigFlags(true),
		sources: []Source{AnnotationSource{}},
		now:     time.Now,
	}
	o.client = func() (kubernetes.Interface, error) {
		cfg, err := o.config.ToRESTConfig()
		if err != nil {
			return nil, err
		}
		return kubernetes.NewForConfig(cfg)
	}
	o.namespace = func() (string, error) {
		ns, _, err := o.config.ToRawKubeConfigLoader().Namespace()
		return ns, err
	}
	return newCommand(o)
}

func newCommand(o *options) *cobra.Command {
	defaults := DefaultRules()
	cmd := &cobra.Command{
		Use:   "kubectl-tandem",
		Short: "Show tandem's workflow reservations and why runners are pending",
		Long: `kubectl tandem shows what tandem-scheduler's workflow reservations hold: the room of
each node once reservations are counted, each runner's reservation and its phase, and
why a runner or workflow pod is pending.`,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl tandem"},
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			sel, err := labels.Parse(o.runnerSelector)
			if err != nil {
				return fmt.Errorf("--runner-selector: %w", err)
			}
			o.rules = Rules{RunnerSelector: sel, RunnerPodLabel: o.runnerPodLabel, SchedulerNames: o.schedulerNames}
			return nil
		},
	}
	cmd.CompletionOptions.HiddenDefaultCmd = true
	o.config.AddFlags(cmd.PersistentFlags())
	cmd.PersistentFlags().StringVar(&o.runnerSelector, "runner-selector", defaults.RunnerSelector.String(), "Label selector of runner pods: the plugin's runnerSelector")
	cmd.PersistentFlags().StringVar(&o.runnerPodLabel, "runner-pod-label", defaults.RunnerPodLabel, "Label naming a workflow pod's runner: the plugin's runnerPodLabel")
	cmd.PersistentFlags().StringSliceVar(&o.schedulerNames, "scheduler-name", defaults.SchedulerNames, "tandem's scheduler profiles: a reservation recorded on a pod of another scheduler holds nothing")
	cmd.AddCommand(o.nodesCommand(), o.reservationsCommand(), o.explainCommand())
	return cmd
}

func (o *options) nodesCommand() *cobra.Command {
	p := newPrinter()
	cmd := &cobra.Command{
		Use:   "nodes",
		Short: "Each node's room: allocatable, requested, reserved for workflow pods, free",
		Example: `  kubectl tandem nodes
  kubectl tandem nodes -o wide`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := p.validate(); err != nil {
				return err
			}
			s, rs, err := o.read(cmd.Context(), scope{nodes: true})
			if err != nil {
				return err
			}
			o.warn(s)
			us := nodeUsage(s, rs)
			if len(us) == 0 && p.format != "json" && p.format != "yaml" {
				fmt.Fprintln(o.streams.ErrOut, "No nodes found.")
				return nil
			}
			return p.print(o.streams.Out, nodesTable(us), &NodeUsageList{TypeMeta: kind("NodeUsageList"), Items: us})
		},
	}
	cmd.Flags().StringVarP(&p.format, "output", "o", "", "Output format: "+strings.Join(p.allowed(), ", "))
	return cmd
}

func (o *options) reservationsCommand() *cobra.Command {
	p := newPrinter()
	var all bool
	cmd := &cobra.Command{
		Use:     "reservations",
		Aliases: []string{"reservation", "rsv"},
		Short:   "One row per runner with a recorded reservation: node, size, source, phase",
		Example: `  kubectl tandem reservations -n arc-runners
  kubectl tandem reservations -A -o wide`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := p.validate(); err != nil {
				return err
			}
			ns := ""
			if !all {
				var err error
				if ns, err = o.namespace(); err != nil {
					return err
				}
			}
			s, rs, err := o.read(cmd.Context(), scope{namespace: ns})
			if err != nil {
				return err
			}
			o.warn(s)
			for _, r := range rs {
				if r.Phase == PhaseInvalid {
					note := ""
					if r.Resized {
						note = "; " + holdsNothingNote
					}
					fmt.Fprintf(o.streams.ErrOut, "Warning: the reservation recorded on %s holds nothing: %s%s\n", r.key(), r.Invalid, note)
				}
			}
			if len(rs) == 0 && p.format != "json" && p.format != "yaml" {
				if all {
					fmt.Fprintln(o.streams.ErrOut, "No reservations found.")
				} else {
					fmt.Fprintf(o.streams.ErrOut, "No reservations found in %s namespace.\n", ns)
				}
				return nil
			}
			return p.print(o.streams.Out, reservationsTable(rs, all, s.Now), &ReservationList{TypeMeta: kind("ReservationList"), Items: rs})
		},
	}
	cmd.Flags().StringVarP(&p.format, "output", "o", "", "Output format: "+strings.Join(p.allowed(), ", "))
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "List the reservations of all namespaces")
	return cmd
}

func (o *options) explainCommand() *cobra.Command {
	p := newPrinter()
	cmd := &cobra.Command{
		Use:   "explain POD",
		Short: "Why a runner or workflow pod is pending, or what it holds once bound",
		Example: `  kubectl tandem explain -n arc-runners my-runner-abc12-runner-xyz98
  kubectl tandem explain -n arc-runners pod/my-runner-abc12-runner-xyz98-workflow -o yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := p.validate(); err != nil {
				return err
			}
			name, err := podName(args[0])
			if err != nil {
				return err
			}
			return o.explain(cmd.Context(), p, name)
		},
	}
	cmd.Flags().StringVarP(&p.format, "output", "o", "", "Output format: text (the default; wide is the same), json, yaml")
	return cmd
}

// podName accepts NAME, pod/NAME and pods/NAME, as kubectl does.
func podName(arg string) (string, error) {
	kind, name, found := strings.Cut(arg, "/")
	if !found {
		return arg, nil
	}
	switch kind {
	case "pod", "pods", "po":
		return name, nil
	}
	return "", fmt.Errorf("%q: explain explains pods, not %s", arg, kind)
}

// read takes a snapshot and finds its reservations.
func (o *options) read(ctx context.Context, sc scope) (*Snapshot, []Reservation, error) {
	client, err := o.client()
	if err != nil {
		return nil, nil, err
	}
	s, err := gather(ctx, client, o.rules, sc, o.now())
	if err != nil {
		return nil, nil, err
	}
	var rs []Reservation
	for _, src := range o.sources {
		rs = append(rs, src.Reservations(s)...)
	}
	sortReservations(rs)
	return s, rs, nil
}

// warn prints what could not be read.
func (o *options) warn(s *Snapshot) {
	for _, n := range s.Notes {
		fmt.Fprintf(o.streams.ErrOut, "Warning: %s\n", n)
	}
}

func (o *options) explain(ctx context.Context, p *printer, name string) error {
	ns, err := o.namespace()
	if err != nil {
		return err
	}
	client, err := o.client()
	if err != nil {
		return err
	}
	pod, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	events, err := podEvents(ctx, client, pod)
	var notes []string
	if err != nil {
		if !apierrors.IsForbidden(err) {
			return err
		}
		notes = append(notes, "cannot list events: "+err.Error())
	}
	// Reservations on any node it may go to can belong to runners of any
	// namespace, and every pod on those nodes counts.
	s, rs, err := o.read(ctx, scope{nodes: true})
	if err != nil {
		return err
	}
	if fresh := s.pod(pod.Namespace, pod.Name); fresh != nil {
		pod = fresh
	} else {
		s.Pods = append(s.Pods, pod)
		s.index()
	}
	e := explain(klog.FromContext(ctx), s, rs, pod, events)
	e.Notes = append(e.Notes, notes...)
	if p.format == "" || p.format == "wide" {
		return printExplanation(o.streams.Out, e, s.Now)
	}
	return p.print(o.streams.Out, nil, e)
}
