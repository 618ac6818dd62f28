package scenario

import (
	"fmt"
	"math/rand"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tandem-scheduler/tandem/pkg/sim/arc"
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
		out = append(out, Arrival{
			At: j.At.Duration, Duration: j.Duration.Duration, ScaleSet: set,
			Container: j.Container == nil || *j.Container,
			Spec:      arc.JobSpec{Image: j.Image, Services: j.Services},
		})
	}
	if g := s.Jobs.Generate; g != nil {
		if seed == 0 {
			seed = g.Seed
		}
		set := g.ScaleSet
		if set == "" {
			set = first
		}
		out = append(out, g.generate(rand.New(rand.NewSource(seed)), rand.New(rand.NewSource(seed+1)), set)...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	for i := range out {
		out[i].ID = i + 1
	}
	return out
}

func (g *Generator) generate(r, sets *rand.Rand, set string) []Arrival {
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
				// From a generator of its own: spreading jobs over sets
				// changes no arrival or duration.
				a.ScaleSet = g.ScaleSets[sets.Intn(len(g.ScaleSets))]
			}
			out = append(out, a)
		}
		at += time.Duration(r.ExpFloat64() * float64(g.MeanInterarrival.Duration)).Round(time.Second)
	}
	return out
}
