package links_test

import (
	"math"
	"testing"

	"github.com/react-torch/react-torch/pkg/critpath"
	"github.com/react-torch/react-torch/pkg/links"
	"github.com/react-torch/react-torch/pkg/pattern"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/react-torch/react-torch/pkg/transform"
)

// Where the sharing does not change while flows run (one flow, an incast
// of equal flows, a chain), the estimate is the replay's time.
func TestEstimateIsTheReplayWhereSharingIsSteady(t *testing.T) {
	const c, alpha, bytes = 1e9, 1e-6, 1e6
	flow := func(step, src, dst int32) ten.Flow {
		return ten.Flow{Step: step, Src: src, Dst: dst, Kind: ten.KindReduce, Fraction: 1}
	}
	for _, tc := range []struct {
		name     string
		flows    []ten.Flow
		down1    float64
		stepped  bool
		want     float64
		wantSame bool
	}{
		{"one flow", []ten.Flow{flow(1, 0, 1)}, 0, false, bytes/c + alpha, true},
		{"one flow beside two competing", []ten.Flow{flow(1, 0, 1)}, 2, false, 3*bytes/c + alpha, true},
		{"incast of two", []ten.Flow{flow(1, 0, 1), flow(1, 2, 1)}, 0, false, 2*bytes/c + alpha, true},
		{"stepped chain", []ten.Flow{flow(1, 0, 1), flow(2, 1, 2)}, 0, true, 2 * (bytes/c + alpha), true},
		{"stepped incast beside one competing", []ten.Flow{flow(1, 0, 1), flow(1, 2, 1)}, 1, true, 3*bytes/c + alpha, true},
	} {
		p := &ten.Pattern{Op: ten.AllReduce, Algo: "test", Ranks: 3, Root: -1, Flows: tc.flows}
		net := &links.Net{C: c, Alpha: alpha, Up: make([]float64, 3), Down: []float64{0, tc.down1, 0}, Stepped: tc.stepped}
		dag := critpath.New(p)
		var e links.Estimator
		got := e.Estimate(p, dag, bytes, net, nil)
		if math.Abs(got-tc.want) > 1e-9*tc.want {
			t.Errorf("%s: estimate %g, want %g", tc.name, got, tc.want)
		}
		var rp links.Replayer
		if rep := rp.Replay(p, dag, bytes, net, nil, make([]float64, len(p.Flows))); math.Abs(rep-got) > 1e-9*rep {
			t.Errorf("%s: estimate %g, replay %g", tc.name, got, rep)
		}
	}
}

// The estimate sees the gain the replay sees: on a tree with one congested
// downlink, the global swap the replay judges best is estimated faster
// than the pattern in force, and the slow pair's bytes count.
func TestEstimateRanksLikeTheReplay(t *testing.T) {
	const bytes = 20e6
	for _, stepped := range []bool{false, true} {
		p := pattern.TreeAllReduce(8)
		net := &links.Net{C: 12.5e9, Alpha: 2e-6, Up: make([]float64, 8), Down: make([]float64, 8), Stepped: stepped}
		net.Down[3] = 2
		var rp links.Replayer
		var e links.Estimator
		fct := make([]float64, len(p.Flows))
		dag := critpath.New(p)
		now, estNow := rp.Replay(p, dag, bytes, net, nil, fct), e.Estimate(p, dag, bytes, net, nil)
		best, bestQ := now, p
		for y := 0; y < 8; y++ {
			if y == 3 {
				continue
			}
			q := transform.Apply(p, transform.GlobalSwap(3, y))
			if v := rp.Replay(q, critpath.New(q), bytes, net, nil, fct); v < best {
				best, bestQ = v, q
			}
		}
		if bestQ == p {
			t.Fatalf("stepped=%v: no global swap of rank 3 helps in the replay", stepped)
		}
		if est := e.Estimate(bestQ, critpath.New(bestQ), bytes, net, nil); est >= estNow {
			t.Errorf("stepped=%v: the replay's best swap (%.4g -> %.4g s) is estimated %.4g s, the pattern in force %.4g s",
				stepped, now, best, est, estNow)
		}
		scale := make([]float64, len(p.Flows))
		for i := range scale {
			scale[i] = 1
		}
		scale[0] = 4
		if slow := e.Estimate(p, dag, bytes, net, scale); slow <= estNow {
			t.Errorf("stepped=%v: a flow four times as large left the estimate at %.4g s (was %.4g s)", stepped, slow, estNow)
		}
	}
}
