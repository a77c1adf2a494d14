package links

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/react-torch/react-torch/pkg/pattern"
	"github.com/react-torch/react-torch/pkg/ten"
)

// refShare is progressive filling as share did it before it filled by
// component and by scan: every active link through the heap, every flow
// unfrozen. It returns each active flow's rate.
func refShare(p *ten.Pattern, net *Net, active []int32) map[int32]float64 {
	n := int32(p.Ranks)
	links := func(f int32) []int32 {
		fl := &p.Flows[f]
		ls := []int32{fl.Src, n + fl.Dst}
		if net.Shared != nil {
			for _, l := range hostLinks(fl, n, net.Shared) {
				if l >= 0 {
					ls = append(ls, l)
				}
			}
		}
		return ls
	}
	competing := func(l int32) float64 {
		switch {
		case l < n:
			return net.Up[l]
		case l < 2*n:
			return net.Down[l-n]
		}
		return net.Shared[l-2*n]
	}
	lcap, lcnt, on := map[int32]float64{}, map[int32]int32{}, map[int32][]int32{}
	var touch []int32
	rate := map[int32]float64{}
	for _, f := range active {
		for _, l := range links(f) {
			if lcnt[l] == 0 {
				touch = append(touch, l)
			}
			lcnt[l]++
			lcap[l] = net.C
			on[l] = append(on[l], f)
		}
		rate[f] = -1
	}
	var h []shareEntry
	for _, l := range touch {
		h = append(h, shareEntry{max(lcap[l], 0) / (float64(lcnt[l]) + competing(l)), l})
	}
	heapify(h)
	for len(h) > 0 {
		e := h[0]
		h = popHeap(h)
		l := e.l
		if lcnt[l] <= 0 {
			continue
		}
		cur := max(lcap[l], 0) / (float64(lcnt[l]) + competing(l))
		if cur > e.share*(1+1e-12) {
			h = pushHeap(h, shareEntry{cur, l})
			continue
		}
		for _, f := range on[l] {
			if rate[f] >= 0 {
				continue
			}
			rate[f] = cur
			for _, o := range links(f) {
				lcap[o] -= cur
				lcnt[o]--
			}
		}
		lcnt[l] = 0
	}
	return rate
}

// share, by scan or by heap, whole or by the component of the flows that
// moved, gives every active flow the rate the whole filling gives it, to
// the bit, as flows start and end.
func TestShareMatchesWholeFilling(t *testing.T) {
	for _, tc := range []struct {
		name   string
		algo   string
		ranks  int
		shared bool
		steps  bool // a step's flows at a time: one way through a link (shareLone)
	}{
		{"tree-8", "tree", 8, false, false},
		{"tree-8-shared", "tree", 8, true, false},
		{"tree-64", "tree", 64, false, false},
		{"tree-64-shared", "tree", 64, true, false},
		{"tree-256", "tree", 256, false, false},
		{"ring-8-steps", "ring", 8, false, true},
		{"ring-8-steps-shared", "ring", 8, true, true},
		{"halving_doubling-32-steps", "halving_doubling", 32, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := pattern.Generate(ten.AllReduce, tc.algo, tc.ranks, -1)
			if err != nil {
				t.Fatal(err)
			}
			n := tc.ranks
			rng := rand.New(rand.NewPCG(uint64(n), 7))
			net := &Net{C: 12.5e9, Up: make([]float64, n), Down: make([]float64, n)}
			for r := 0; r < n; r++ {
				net.Up[r] = float64(rng.IntN(3)) * rng.Float64()
				net.Down[r] = float64(rng.IntN(2))
			}
			if tc.shared {
				net.Shared = make([]float64, n)
				for r := 0; r < n; r += 2 {
					net.Shared[r] = rng.Float64()
				}
			}
			var r Replayer
			nf := len(p.Flows)
			r.rate = grow(r.rate, nf)
			r.linkState(p, net, n)
			// round 0: a random half of the flows start; then a few flows
			// start or end at a time
			on := make([]bool, nf)
			lone := 0
			for round := 0; round < 200; round++ {
				r.moved = r.moved[:0]
				step := p.Flows[rng.IntN(nf)].Step
				for f := range on {
					flip := round == 0 && rng.IntN(2) == 0 || round > 0 && rng.IntN(nf) < 3
					if tc.steps { // the flows of one step, most of them, on their own
						flip = on[f] != (p.Flows[f].Step == step && rng.IntN(4) > 0)
					}
					if flip {
						on[f] = !on[f]
						r.moved = append(r.moved, int32(f))
					}
				}
				r.active = r.active[:0]
				for f, a := range on {
					if a {
						r.active = append(r.active, int32(f))
					}
				}
				r.share(net)
				for f, want := range refShare(p, net, r.active) {
					if got := r.rate[f]; math.Float64bits(got) != math.Float64bits(want) {
						t.Fatalf("round %d flow %d: rate %v, want %v", round, f, got, want)
					}
				}
				if oneWay(p, net, r.active) {
					lone++
				}
			}
			if tc.steps && !tc.shared && lone < 100 {
				t.Errorf("%d of 200 rounds had one way through each link", lone)
			}
		})
	}
}

// oneWay says whether the active flows on each link all pass through
// the same links.
func oneWay(p *ten.Pattern, net *Net, active []int32) bool {
	way := map[int32][4]int32{}
	n := int32(p.Ranks)
	for _, f := range active {
		fl := &p.Flows[f]
		ls := [4]int32{fl.Src, n + fl.Dst, -1, -1}
		if net.Shared != nil {
			h := hostLinks(fl, n, net.Shared)
			ls[2], ls[3] = h[0], h[1]
		}
		for _, l := range ls {
			if l < 0 {
				continue
			}
			if w, ok := way[l]; ok && w != ls {
				return false
			}
			way[l] = ls
		}
	}
	return true
}
