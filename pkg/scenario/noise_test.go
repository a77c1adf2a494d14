package scenario

import (
	"math"
	"slices"
	"testing"

	"github.com/react-torch/react-torch/pkg/pattern"
	"github.com/react-torch/react-torch/pkg/ten"
)

// logStats is the mean and standard deviation of the logs of xs.
func logStats(xs []float64) (mean, std float64) {
	for _, x := range xs {
		mean += math.Log(x) / float64(len(xs))
	}
	for _, x := range xs {
		d := math.Log(x) - mean
		std += d * d
	}
	return mean, math.Sqrt(std / float64(len(xs)-1))
}

// draw applies n to an epoch of all-ones FCTs and returns them and the
// noisy elapsed time.
func draw(n *noise, job, epoch int, p *ten.Pattern) ([]float64, float64) {
	fct := make([]float64, len(p.Flows))
	for i := range fct {
		fct[i] = 1
	}
	e := n.apply(job, epoch, p, fct, 1)
	return fct, e
}

// TestNoiseDraws: the factors are lognormal with the asked sigma, the
// rank slowdowns hold for a period and act through the slower end of each
// flow, and a draw depends only on (seed, noise seed, job, epoch).
func TestNoiseDraws(t *testing.T) {
	p := pattern.TreeAllReduce(8)
	const epochs = 600
	tests := []struct {
		name        string
		spec        NoiseSpec
		sigmaFCT    float64 // log-std of the flows' factors within an epoch; 0: exactly 1
		sigmaElapse float64 // log-std of the elapsed factors; 0: exactly 1
	}{
		{"sigma 0.1", NoiseSpec{Sigma: 0.1}, 0.1, 0.1},
		{"sigma 0.2, seed 5", NoiseSpec{Sigma: 0.2, Seed: 5}, 0.2, 0.2},
		{"ranks only", NoiseSpec{RankSigma: 0.3, Period: 20}, 0, 0},
		{"both", NoiseSpec{Sigma: 0.1, RankSigma: 0.3, Period: 20}, -1, 0.1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNoise(tt.spec, 7, 2)
			var fcts, els []float64
			for e := range epochs {
				f, el := draw(n, 1, e, p)
				fcts, els = append(fcts, f...), append(els, el)
			}
			check := func(what string, xs []float64, sigma float64) {
				m, s := logStats(xs)
				if sigma == 0 {
					if slices.Max(xs) != 1 || slices.Min(xs) != 1 {
						t.Errorf("%s: factors in [%g, %g], want all 1", what, slices.Min(xs), slices.Max(xs))
					}
					return
				}
				if se := sigma / math.Sqrt(float64(len(xs))); math.Abs(m) > 4*se || math.Abs(s-sigma) > 0.08*sigma {
					t.Errorf("%s: log-mean %.4f, log-std %.4f over %d draws, want 0 and %g", what, m, s, len(xs), sigma)
				}
			}
			check("elapsed", els, tt.sigmaElapse)
			if tt.spec.RankSigma == 0 {
				check("flows", fcts, tt.sigmaFCT)
				return
			}
			// Rank slowdowns: each flow's factor over its epoch's sigma
			// noise is max(f[src], f[dst]), the same all period long.
			var ranks []float64
			for k := range epochs / tt.spec.Period {
				f := slices.Clone(n.slowdowns(1, k*tt.spec.Period, 8))
				ranks = append(ranks, f...)
				for e := k * tt.spec.Period; e < (k+1)*tt.spec.Period; e++ {
					if !slices.Equal(n.slowdowns(1, e, 8), f) {
						t.Fatalf("epoch %d: slowdowns changed within period %d", e, k)
					}
				}
				if tt.spec.Sigma > 0 {
					continue
				}
				got, _ := draw(n, 1, k*tt.spec.Period+3, p)
				for i, fl := range p.Flows {
					if want := max(f[fl.Src], f[fl.Dst]); got[i] != want {
						t.Fatalf("period %d flow %d (%d->%d): factor %g, want %g", k, i, fl.Src, fl.Dst, got[i], want)
					}
				}
			}
			check("rank slowdowns", ranks, tt.spec.RankSigma)
		})
	}
}

func TestNoiseDeterministic(t *testing.T) {
	p := pattern.TreeAllReduce(8)
	spec := NoiseSpec{Sigma: 0.2, RankSigma: 0.3, Period: 4}
	a, b := newNoise(spec, 3, 2), newNoise(spec, 3, 2)
	// Another order of jobs and epochs draws the same.
	fa, ea := draw(a, 0, 9, p)
	draw(b, 1, 2, p)
	draw(b, 0, 1, p)
	fb, eb := draw(b, 0, 9, p)
	if !slices.Equal(fa, fb) || ea != eb {
		t.Error("the same (case, job, epoch) drew different noise after other draws")
	}
	for _, o := range []struct {
		name string
		n    *noise
		job  int
	}{
		{"another case seed", newNoise(spec, 4, 2), 0},
		{"another noise seed", newNoise(NoiseSpec{Sigma: 0.2, RankSigma: 0.3, Period: 4, Seed: 1}, 3, 2), 0},
		{"another job", newNoise(spec, 3, 2), 1},
	} {
		if f, _ := draw(o.n, o.job, 9, p); slices.Equal(f, fa) {
			t.Errorf("%s drew the same noise", o.name)
		}
	}
	if newNoise(NoiseSpec{Seed: 3}, 1, 1) != nil {
		t.Error("a spec without sigmas makes noise")
	}
}

// quiet is a star without congestion; the paper's tuner (pinned, since it
// is kept for comparison) never changes a pattern there without noise.
const quiet = `{
  "format": "react.scenario/v1", "name": "quiet",
  "topology": {"kind": "star", "hosts": 8}, "epochs": 100, "measure_after": 25, "seed": 1,
  "jobs": [{"name": "tree8", "op": "allreduce", "algo": "tree", "ranks": 8, "bytes": 20e6}],
  "tuner": {"Model": "paper"},
  "oracle": {"off": true}
}`

// TestNoiseReachesTheTunerOnly: the noise changes what the tuner does, not
// the times the tables report.
func TestNoiseReachesTheTunerOnly(t *testing.T) {
	tests := []struct {
		name    string
		noise   map[string]any
		tuner   map[string]any
		changes bool // want the tuner to change patterns
	}{
		{"no noise", nil, nil, false},
		// Slow ranks read as congestion: the paper's tuner moves them.
		{"slow ranks", map[string]any{"rank_sigma": 1.0, "period": 10}, nil, true},
		// A tuner that never decides: REACT's true times are the baseline's.
		{"noise, no decision", map[string]any{"sigma": 0.5, "rank_sigma": 1.0, "period": 10}, map[string]any{"B": 200, "H": 200}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := decode(t, edit(t, quiet, func(m map[string]any) {
				if tt.noise != nil {
					m["noise"] = tt.noise
				}
				if tt.tuner != nil {
					m["tuner"] = tt.tuner
				}
			}))
			r, err := s.RunCase(s.Cases()[0], Options{})
			if err != nil {
				t.Fatal(err)
			}
			j := r.Jobs[0]
			if got := j.Changes > 0; got != tt.changes {
				t.Errorf("%d pattern changes; want changes: %v", j.Changes, tt.changes)
			}
			if !tt.changes && !slices.Equal(j.React.Times, j.Baseline.Times) {
				t.Error("REACT's times differ from the baseline's without a change of pattern")
			}
		})
	}
}
