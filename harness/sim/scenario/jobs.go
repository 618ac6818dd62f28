package scenario

import (
	"fmt"
	"math/rand"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tandem-scheduler/tandem/harness/sim/arc"
)

// Generator draws a job stream from a seed: Poisson arrivals (optionally in
// bursts), uniform durations.
type Generator struct {
	Seed  int64 `json:"seed"`
	Count int   `json:"count"`
	// ScaleSet runs the jobs (default: the first scale set).
	ScaleSet string `json:"scaleSet,omitempty"`
	// ScaleSets, if set, spreads the jobs over these sets at random
	// instead.
	ScaleSets []string `json:"scaleSets,omitempty"`
	// Start is the first arrival.
	Start metav1.Duration `json:"start,omitempty"`
	// MeanInterarrival is the mean gap between bursts.
	MeanInterarrival metav1.Duration `json:"meanInterarrival"`
	// Burst is how many jobs arrive at once (default 1).
	Burst       int             `json:"burst,omitempty"`
	MinDuration metav1.Duration `json:"minDuration"`
	MaxDuration metav1.Duration `json:"maxDuration"`
	// WithoutContainer is the fraction of jobs without a job container.
	WithoutContainer float64 `json:"withoutContainer,omitempty"`
	// Mix, if set, draws each job's scale set and shape from these entries
	// by weight, instead of ScaleSet or ScaleSets. It changes no arrival or
	// duration.
	Mix []Shape `json:"mix,omitempty"`
}

// Shape is what the generated jobs of one entry of a mix look like.
type Shape struct {
	ScaleSet string `json:"scaleSet"`
	// Weight is the entry's share of the jobs (default 1).
	Weight int `json:"weight,omitempty"`
	// Image and Services are the job container's image and services.
	Image    string        `json:"image,omitempty"`
	Services []arc.Service `json:"services,omitempty"`
	// WithoutContainer, if set, replaces the generator's fraction of jobs
	// without a job container for this entry.
	WithoutContainer *float64 `json:"withoutContainer,omitempty"`
	// Steps gives the entry's jobs with a container their container steps.
	Steps *StepGenerator `json:"steps,omitempty"`
}

// StepGenerator draws Count container steps per job, of uniform durations,
// spread evenly over the job: equal gaps before, between and after them.
type StepGenerator struct {
	Count       int             `json:"count"`
	MinDuration metav1.Duration `json:"minDuration"`
	MaxDuration metav1.Duration `json:"maxDuration"`
}

// steps draws a job's steps for a job of duration d.
func (g *StepGenerator) steps(r *rand.Rand, d time.Duration) []arc.Step {
	if g == nil || g.Count == 0 {
		return nil
	}
	durations := make([]time.Duration, g.Count)
	var sum time.Duration
	span := g.MaxDuration.Duration - g.MinDuration.Duration
	for i := range durations {
		durations[i] = g.MinDuration.Duration
		if span > 0 {
			durations[i] += time.Duration(r.Int63n(int64(span)))
		}
		durations[i] = durations[i].Round(time.Second)
		sum += durations[i]
	}
	gap := (d - sum) / time.Duration(g.Count+1)
	out := make([]arc.Step, 0, g.Count)
	at := gap
	for _, sd := range durations {
		out = append(out, arc.Step{At: at, Duration: sd})
		at += sd + gap
	}
	return out
}

func (g *Generator) validate(sets map[string]bool) []error {
	var errs []error
	if g.Count <= 0 {
		errs = append(errs, fmt.Errorf("generate: count must be positive"))
	}
	if g.ScaleSet != "" && !sets[g.ScaleSet] {
		errs = append(errs, fmt.Errorf("generate: unknown scale set %q", g.ScaleSet))
	}
	for _, s := range g.ScaleSets {
		if !sets[s] {
			errs = append(errs, fmt.Errorf("generate: unknown scale set %q", s))
		}
	}
	if g.ScaleSet != "" && len(g.ScaleSets) > 0 {
		errs = append(errs, fmt.Errorf("generate: set scaleSet or scaleSets, not both"))
	}
	if g.MinDuration.Duration <= 0 || g.MaxDuration.Duration < g.MinDuration.Duration {
		errs = append(errs, fmt.Errorf("generate: want 0 < minDuration <= maxDuration"))
	}
	if g.MeanInterarrival.Duration < 0 || g.WithoutContainer < 0 || g.WithoutContainer > 1 {
		errs = append(errs, fmt.Errorf("generate: want meanInterarrival >= 0 and 0 <= withoutContainer <= 1"))
	}
	if len(g.Mix) > 0 && (g.ScaleSet != "" || len(g.ScaleSets) > 0) {
		errs = append(errs, fmt.Errorf("generate: set mix, or scaleSet or scaleSets, not both"))
	}
	for i, m := range g.Mix {
		if !sets[m.ScaleSet] {
			errs = append(errs, fmt.Errorf("generate: mix %d: unknown scale set %q", i, m.ScaleSet))
		}
		if m.Weight < 0 || (m.WithoutContainer != nil && (*m.WithoutContainer < 0 || *m.WithoutContainer > 1)) {
			errs = append(errs, fmt.Errorf("generate: mix %d: want weight >= 0 and 0 <= withoutContainer <= 1", i))
		}
		if st := m.Steps; st != nil {
			if st.Count < 0 || st.MinDuration.Duration <= 0 || st.MaxDuration.Duration < st.MinDuration.Duration {
				errs = append(errs, fmt.Errorf("generate: mix %d: steps: want count >= 0 and 0 < minDuration <= maxDuration", i))
			} else if time.Duration(st.Count)*st.MaxDuration.Duration >= g.MinDuration.Duration {
				errs = append(errs, fmt.Errorf("generate: mix %d: %d steps of up to %s do not fit in a job of %s", i, st.Count, st.MaxDuration.Duration, g.MinDuration.Duration))
			}
		}
	}
	return errs
}

// Arrival is a job of the stream, resolved.
type Arrival struct {
	ID        int
	At        time.Duration
	Duration  time.Duration
	ScaleSet  string
	Container bool
	Spec      arc.JobSpec
	Steps     []arc.Step
}

// Stream returns the scenario's jobs in arrival order, IDs from 1. The
// seed, if not zero, replaces the generator's.
func (s *Scenario) Stream(seed int64) []Arrival {
	first := s.ScaleSets[0].Name
	var out []Arrival
	for _, j := range s.Jobs.List {
		set := j.ScaleSet
		if set == "" {
			set = first
		}
		a := Arrival{
			At: j.At.Duration, Duration: j.Duration.Duration, ScaleSet: set,
			Container: j.Container == nil || *j.Container,
			Spec:      arc.JobSpec{Image: j.Image, Services: j.Services},
		}
		for _, st := range j.Steps {
			a.Steps = append(a.Steps, arc.Step{At: st.At.Duration, Duration: st.Duration.Duration, Image: st.Image})
		}
		out = append(out, a)
	}
	if g := s.Jobs.Generate; g != nil {
		if seed == 0 {
			seed = g.Seed
		}
		set := g.ScaleSet
		if set == "" {
			set = first
		}
		out = append(out, g.generate(rand.New(rand.NewSource(seed)), rand.New(rand.NewSource(seed+1)), rand.New(rand.NewSource(seed+2)), set)...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	for i := range out {
		out[i].ID = i + 1
	}
	return out
}

// generate draws the stream: arrivals, durations and the generator's
// container draw from r; scale sets and mix entries from sets; what a mix
// entry adds (its container draw, step durations) from shapes. So spreading
// jobs over sets or shapes changes no arrival or duration.
func (g *Generator) generate(r, sets, shapes *rand.Rand, set string) []Arrival {
	total := 0
	for _, m := range g.Mix {
		total += max(m.Weight, 1)
	}
	burst := max(g.Burst, 1)
	at := g.Start.Duration
	span := g.MaxDuration.Duration - g.MinDuration.Duration
	out := make([]Arrival, 0, g.Count)
	for len(out) < g.Count {
		for b := 0; b < burst && len(out) < g.Count; b++ {
			d := g.MinDuration.Duration
			if span > 0 {
				d += time.Duration(r.Int63n(int64(span)))
			}
			a := Arrival{
				At: at, Duration: d.Round(time.Second), ScaleSet: set,
				Container: r.Float64() >= g.WithoutContainer,
			}
			if len(g.ScaleSets) > 0 {
				a.ScaleSet = g.ScaleSets[sets.Intn(len(g.ScaleSets))]
			}
			if total > 0 {
				g.shape(&a, sets.Intn(total), shapes)
			}
			out = append(out, a)
		}
		at += time.Duration(r.ExpFloat64() * float64(g.MeanInterarrival.Duration)).Round(time.Second)
	}
	return out
}

// shape gives a the scale set and shape of the mix entry at weight index w.
func (g *Generator) shape(a *Arrival, w int, r *rand.Rand) {
	var m *Shape
	for i := range g.Mix {
		if w -= max(g.Mix[i].Weight, 1); w < 0 {
			m = &g.Mix[i]
			break
		}
	}
	a.ScaleSet = m.ScaleSet
	if m.WithoutContainer != nil {
		a.Container = r.Float64() >= *m.WithoutContainer
	}
	if !a.Container {
		return
	}
	a.Spec = arc.JobSpec{Image: m.Image, Services: m.Services}
	a.Steps = m.Steps.steps(r, a.Duration)
}
