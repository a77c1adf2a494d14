package links_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/react-torch/react-torch/pkg/critpath"
	"github.com/react-torch/react-torch/pkg/links"
	"github.com/react-torch/react-torch/pkg/pattern"
	"github.com/react-torch/react-torch/pkg/ten"
)

// synth makes epochs of FCTs of p under a known net, with lognormal noise.
func synth(t *testing.T, p *ten.Pattern, net *links.Net, bytes, sigma float64, epochs int, seed uint64) [][]float64 {
	t.Helper()
	var rp links.Replayer
	fct := make([]float64, len(p.Flows))
	rp.Replay(p, critpath.New(p), bytes, net, nil, fct)
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([][]float64, epochs)
	for e := range out {
		out[e] = make([]float64, len(fct))
		for i, v := range fct {
			out[e][i] = v * math.Exp(sigma*rng.NormFloat64())
		}
	}
	return out
}

// fitted is an 8-rank model fitted to 12 epochs of p's 20 MB FCTs under
// truth (synth's noise sigma, seed).
func fitted(t *testing.T, p *ten.Pattern, truth *links.Net, sigma float64, seed uint64) (*links.Model, links.Fit) {
	t.Helper()
	m, err := links.NewModel(8, 60, 6, false)
	if err != nil {
		t.Fatal(err)
	}
	for e, fct := range synth(t, p, truth, 20e6, sigma, 12, seed) {
		if err := m.Observe(0, e, p, 20e6, fct); err != nil {
			t.Fatal(err)
		}
	}
	fit, err := m.Refit()
	if err != nil {
		t.Fatal(err)
	}
	return m, fit
}

func TestFitRecoversCompetingCounts(t *testing.T) {
	tree, _ := pattern.Generate(ten.AllReduce, "tree", 8, -1)
	ring, _ := pattern.Generate(ten.AllReduce, "ring", 8, -1)
	for _, tc := range []struct {
		name     string
		p        *ten.Pattern
		up, down map[int]float64
		sigma    float64
	}{
		{"tree quiet", tree, nil, nil, 0},
		{"tree quiet noisy", tree, nil, nil, 0.1},
		{"tree up", tree, map[int]float64{3: 2}, nil, 0},
		{"tree down", tree, nil, map[int]float64{5: 4}, 0},
		{"tree up+down noisy", tree, map[int]float64{1: 2}, map[int]float64{6: 1}, 0.05},
		{"ring up", ring, map[int]float64{2: 2}, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			truth := &links.Net{C: 12.5e9, Alpha: 2e-6, Up: make([]float64, 8), Down: make([]float64, 8)}
			for r, k := range tc.up {
				truth.Up[r] = k
			}
			for r, k := range tc.down {
				truth.Down[r] = k
			}
			m, fit := fitted(t, tc.p, truth, tc.sigma, 7)
			if math.Abs(fit.Net.C/truth.C-1) > 0.05 {
				t.Errorf("C = %.4g, want %.4g", fit.Net.C, truth.C)
			}
			pr := m.Predictor()
			for r := 0; r < 8; r++ {
				for _, d := range []struct {
					what       string
					got, want  float64
					se, sigNet float64
				}{
					{"up", fit.Net.Up[r], truth.Up[r], fit.UpSE[r], pr.Net().Up[r]},
					{"down", fit.Net.Down[r], truth.Down[r], fit.DownSE[r], pr.Net().Down[r]},
				} {
					if d.want > 0 && math.Abs(d.got-d.want) > 0.15*d.want+0.1 {
						t.Errorf("%s[%d] = %.3f ± %.3f, want %.3f", d.what, r, d.got, d.se, d.want)
					}
					if (d.sigNet > 0) != (d.want > 0) {
						t.Errorf("%s[%d]: significant count %.3f (fit %.3f ± %.3f), truth %.3f", d.what, r, d.sigNet, d.got, d.se, d.want)
					}
				}
			}
			if fit.Net.Slow != nil {
				t.Errorf("competing flows read as slow links: %.2f", fit.Net.Slow)
			}
			if len(tc.up)+len(tc.down) == 0 && pr.Congested() {
				t.Errorf("congestion predicted with none: %+v pairs %+v", pr.Net(), fit.Pairs)
			}
			// The judge: the fitted model predicts the collective time.
			var rp links.Replayer
			want := rp.Replay(tc.p, critpath.New(tc.p), 20e6, truth, nil, make([]float64, len(tc.p.Flows)))
			got := pr.Time(tc.p, critpath.New(tc.p), 20e6)
			if math.Abs(got/want-1) > 0.03 {
				t.Errorf("predicted %.4g s, true %.4g s", got, want)
			}
			t.Logf("fit: C %.4g alpha %.3g rms %.4f noise %.4f replays %d pairs %d", fit.Net.C, fit.Net.Alpha, fit.RMS, fit.Noise, fit.Replays, len(fit.Pairs))
		})
	}
}
