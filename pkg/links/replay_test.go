package links_test

import (
	"math"
	"testing"

	"github.com/react-torch/react-torch/pkg/critpath"
	"github.com/react-torch/react-torch/pkg/links"
	"github.com/react-torch/react-torch/pkg/netsim"
	"github.com/react-torch/react-torch/pkg/pattern"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/react-torch/react-torch/pkg/topo"
)

// On a star (no fabric), external flows from a rank to an outside host
// compete only on the rank's uplink, so the replay with Up[rank] = p must
// give netsim's flow times exactly.
func TestReplayMatchesFluidSimOnStar(t *testing.T) {
	const capBps, lat, bytes = 100e9, 1e-6, 20e6
	for _, tc := range []struct {
		algo      string
		op        ten.Op
		ranks     int
		congested int
		p         int
		in        bool
	}{
		{"tree", ten.AllReduce, 8, -1, 0, false},
		{"tree", ten.AllReduce, 8, 3, 2, false},
		{"tree", ten.AllReduce, 8, 5, 4, true},
		{"tree", ten.AllReduce, 16, 3, 2, true},
		{"ring", ten.AllReduce, 8, 2, 1, false},
		{"recursive_doubling", ten.AllGather, 8, 6, 3, true},
		{"halving_doubling", ten.AllReduce, 8, 1, 2, false},
	} {
		p, err := pattern.Generate(tc.op, tc.algo, tc.ranks, -1)
		if err != nil {
			t.Fatal(err)
		}
		net, err := topo.Star(tc.ranks+2, capBps, lat)
		if err != nil {
			t.Fatal(err)
		}
		sim := netsim.New(net, 1)
		m := &links.Net{C: capBps / 8, Alpha: 2 * lat, Up: make([]float64, tc.ranks), Down: make([]float64, tc.ranks)}
		if tc.congested >= 0 {
			outside := tc.ranks
			if tc.in {
				err = sim.AddExternal(outside, tc.congested, tc.p)
				m.Down[tc.congested] = float64(tc.p)
			} else {
				err = sim.AddExternal(tc.congested, outside, tc.p)
				m.Up[tc.congested] = float64(tc.p)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		hosts := make([]int, tc.ranks)
		for i := range hosts {
			hosts[i] = i
		}
		fx := &netsim.Fixed{Patterns: []*ten.Pattern{p}}
		if err := sim.Run([]netsim.Job{{Hosts: hosts, Bytes: bytes, Ports: 1}}, 1, fx); err != nil {
			t.Fatal(err)
		}
		res := fx.Results[0]
		var rp links.Replayer
		fct := make([]float64, len(p.Flows))
		mk := rp.Replay(p, critpath.New(p), bytes, m, nil, fct)
		if math.Abs(mk-res.Elapsed) > 1e-9*res.Elapsed {
			t.Errorf("%s %s n=%d: makespan %v, netsim %v", tc.op, tc.algo, tc.ranks, mk, res.Elapsed)
		}
		for f := range fct {
			want := res.FlowFinish[f] - res.FlowStart[f]
			if math.Abs(fct[f]-want) > 1e-9*want {
				t.Errorf("%s %s n=%d flow %d: %v, netsim %v", tc.op, tc.algo, tc.ranks, f, fct[f], want)
				break
			}
		}
	}
}

// The stepped executor: a rank starts step 2 only when all its step-1
// flows are done, and an FCT counts from the receiver's step start.
func TestReplaySteppedClosedForm(t *testing.T) {
	const b, c, a = 1e6, 1e9, 1e-5 // bytes, bytes/s, latency
	p := &ten.Pattern{Op: ten.AllGather, Algo: "hand", Ranks: 3, Root: -1, Flows: []ten.Flow{
		{Chunk: 0, Step: 1, Src: 0, Dst: 1, Kind: ten.KindCopy, Fraction: 1},
		{Chunk: 0, Step: 1, Src: 2, Dst: 1, Kind: ten.KindCopy, Fraction: 1},
		{Chunk: 1, Step: 2, Src: 2, Dst: 0, Kind: ten.KindCopy, Fraction: 1},
	}}
	net := &links.Net{C: c, Alpha: a, Up: make([]float64, 3), Down: make([]float64, 3), Stepped: true}
	var rp links.Replayer
	fct := make([]float64, 3)
	mk := rp.Replay(p, critpath.New(p), b, net, nil, fct)
	// step 1: rank 1's downlink carries two flows: each takes 2b/c + a
	s1 := 2*b/c + a
	want := []float64{s1, s1, b/c + a}
	for i := range want {
		if math.Abs(fct[i]-want[i]) > 1e-12 {
			t.Errorf("flow %d: FCT %v, want %v", i, fct[i], want[i])
		}
	}
	if math.Abs(mk-(s1+b/c+a)) > 1e-12 {
		t.Errorf("makespan %v, want %v", mk, s1+b/c+a)
	}
	// dataflow: flow 2 needs nothing from step 1 and runs at once
	net.Stepped = false
	mk = rp.Replay(p, critpath.New(p), b, net, nil, fct)
	if !(mk < s1+b/c+a) {
		t.Errorf("dataflow makespan %v, want below the stepped %v", mk, s1+b/c+a)
	}
}
