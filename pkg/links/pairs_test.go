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

// fabric makes epochs of a pattern's FCTs on a quiet star whose pairs
// take factor(src, dst) times as long, each flow with ECMP-like lognormal
// noise of sigma of its own every epoch.
func fabric(t *testing.T, m *links.Model, p *ten.Pattern, factor func(src, dst int32) float64, sigma float64, from, epochs int, seed uint64) {
	t.Helper()
	net := &links.Net{C: 12.5e9, Alpha: 2e-6, Up: make([]float64, p.Ranks), Down: make([]float64, p.Ranks)}
	base := make([]float64, len(p.Flows))
	var rp links.Replayer
	rp.Replay(p, critpath.New(p), 20e6, net, nil, base)
	rng := rand.New(rand.NewPCG(seed, 2))
	for e := from; e < from+epochs; e++ {
		fct := make([]float64, len(base))
		for i, v := range base {
			f := &p.Flows[i]
			fct[i] = v * factor(f.Src, f.Dst) * math.Exp(sigma*rng.NormFloat64())
		}
		if err := m.Observe(0, e, p, 20e6, fct); err != nil {
			t.Fatal(err)
		}
	}
}

// Two switches of four ranks each (0-3, 4-7): pairs across them cross a
// congested fabric and take 1.6 times as long as pairs inside one, behind
// ECMP noise of 0.4 a flow. A tree sends both kinds from every rank, so
// no rank's link can stand for them: the pair model must see them, fast
// and slow on the right side of the mean pair.
func TestPairModelSeesTheFabricThroughECMPNoise(t *testing.T) {
	tree, _ := pattern.Generate(ten.AllReduce, "tree", 8, -1)
	cross := func(a, b int32) bool { return a/4 != b/4 }
	m, _ := links.NewModel(8, 60, 6, false)
	fabric(t, m, tree, func(a, b int32) float64 {
		if cross(a, b) {
			return 1.6
		}
		return 1
	}, 0.4, 0, 60, 1)
	fit, err := m.Refit()
	if err != nil {
		t.Fatal(err)
	}
	pr := m.Predictor()
	if !pr.Congested() {
		t.Fatalf("fabric unseen: %+v", fit.Pairs)
	}
	kinds := map[bool]int{}
	for _, p := range fit.Pairs {
		kinds[cross(p.Src, p.Dst)]++
		if cross(p.Src, p.Dst) != (p.Factor > 1) {
			t.Errorf("pair %+v on the wrong side of the mean pair", p)
		}
	}
	if kinds[true] == 0 || kinds[false] == 0 {
		t.Errorf("pairs %+v: want slow cross pairs and fast local ones", fit.Pairs)
	}
}

// ECMP noise alone, however large, is no fabric to route around.
func TestPairModelQuietUnderNoise(t *testing.T) {
	for _, algo := range []string{"ring", "tree"} {
		p, _ := pattern.Generate(ten.AllReduce, algo, 8, -1)
		for seed := uint64(1); seed <= 5; seed++ {
			m, _ := links.NewModel(8, 60, 6, false)
			fabric(t, m, p, func(int32, int32) float64 { return 1 }, 0.4, 0, 60, seed)
			fit, err := m.Refit()
			if err != nil {
				t.Fatal(err)
			}
			if m.Predictor().Congested() {
				t.Errorf("%s seed %d: congestion seen in noise: pairs %+v", algo, seed, fit.Pairs)
			}
			// A flow's mean over 60 epochs is 0.4/sqrt(60) = 0.05 off on
			// its own: the data's, not the fit's miss.
			if fit.RMS > 0.04 {
				t.Errorf("%s seed %d: the fit misses by %.3f in noise alone", algo, seed, fit.RMS)
			}
		}
	}
}
