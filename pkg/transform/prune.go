package transform

import "github.com/react-torch/react-torch/pkg/ten"

// Dir is the direction in which a problem rank is congested.
type Dir uint8

// Directions; Both is In|Out.
const (
	In   Dir = 1
	Out  Dir = 2
	Both Dir = In | Out
)

// Prune applies the degree rule of §5.3.2 to a swap around problem rank x
// and says whether the swap lowers x's degree in direction dir.
//
// The paper's wording ("the degree of each rank at various timesteps does
// not exceed the degree of the original rank in this position") leaves open
// which rank, which degree and which steps. The rule implemented: let y be
// the rank the swap puts into x's place. For every step t at which y takes
// over a flow into x, y's in-degree at t after the swap (all chunks) must not
// exceed x's in-degree at t before it; likewise for flows out of x and
// out-degrees. Only the replacement y is held to this: x moving into a busier
// place is the point of the swap, and the model (§5.4.1) judges whether it pays.
//
// Why this yields the classification of Fig 1 (16 ranks, incoming congestion
// at rank 3, swaps in the tree whose leaves are even, NCCL's tree 1): there
// rank 3 receives from 1 and 5 at step 2 and sends to 7 at step 3. Ranks 4
// and 12 already receive two flows at step 2 in the other tree, so taking
// over 3's two would give them four: not viable (red). The even ranks are
// leaves in this tree and have no other in-flow at step 2: viable, and 3,
// now a leaf, loses its incoming flows (green). The odd ranks are interior
// in this tree and leaves in the other: viable, but 3 would receive two flows
// in their place (yellow). A symmetric rule (x held to it too) would reject
// the paper's own choice, rank 2: rank 3 becomes a leaf of both trees and
// sends two flows at step 1 where 2 sent one.
func Prune(p *ten.Pattern, deg *ten.Degrees, s Swap, x int32, dir Dir) (viable, lowers bool) {
	return NewPruner(p, deg).Prune(s, x, dir)
}

// Pruner applies Prune to many swaps of one pattern; it indexes the flows
// by rank once, so that each swap costs only the flows of its two ranks.
type Pruner struct {
	p      *ten.Pattern
	deg    *ten.Degrees
	start  []int32 // per rank, into flows: the flows the rank sends or receives
	flows  []int32
	merged []int32
}

// NewPruner indexes p; deg must be p's degrees.
func NewPruner(p *ten.Pattern, deg *ten.Degrees) *Pruner {
	pr := &Pruner{p: p, deg: deg, start: make([]int32, p.Ranks+1)}
	for i := range p.Flows {
		pr.start[p.Flows[i].Src+1]++
		pr.start[p.Flows[i].Dst+1]++
	}
	for r := 0; r < p.Ranks; r++ {
		pr.start[r+1] += pr.start[r]
	}
	pr.flows = make([]int32, pr.start[p.Ranks])
	next := append([]int32(nil), pr.start[:p.Ranks]...)
	for i := range p.Flows {
		for _, r := range [...]int32{p.Flows[i].Src, p.Flows[i].Dst} {
			pr.flows[next[r]] = int32(i)
			next[r]++
		}
	}
	return pr
}

// changed lists, in increasing order, the flows the swap changes; only
// flows of its two ranks can change.
func (pr *Pruner) changed(s Swap) []int32 {
	a := pr.flows[pr.start[s.A.Rank]:pr.start[s.A.Rank+1]]
	b := pr.flows[pr.start[s.B.Rank]:pr.start[s.B.Rank+1]]
	out := pr.merged[:0]
	add := func(i int32) {
		if n := len(out); n > 0 && out[n-1] == i {
			return
		}
		f := &pr.p.Flows[i]
		if s.Kind != Global && f.Chunk != s.A.Chunk {
			return
		}
		if src, dst := s.relabel(f); src != f.Src || dst != f.Dst {
			out = append(out, i)
		}
	}
	for len(a) > 0 || len(b) > 0 {
		if len(b) == 0 || (len(a) > 0 && a[0] <= b[0]) {
			add(a[0])
			a = a[1:]
		} else {
			add(b[0])
			b = b[1:]
		}
	}
	pr.merged = out
	return out
}

// Prune is the package-level Prune on the indexed pattern.
func (pr *Pruner) Prune(s Swap, x int32, dir Dir) (viable, lowers bool) {
	p, deg := pr.p, pr.deg
	y := s.B.Rank
	if x == s.B.Rank {
		y = s.A.Rank
	}
	type key struct{ rank, step int32 }
	dIn, dOut := map[key]int{}, map[key]int{}
	var takeIn, takeOut []int32 // steps at which y takes over x's flows
	lossIn, lossOut := 0, 0
	for _, i := range pr.changed(s) {
		f := &p.Flows[i]
		src, dst := s.relabel(f)
		if dst != f.Dst {
			dIn[key{f.Dst, f.Step}]--
			dIn[key{dst, f.Step}]++
			if f.Dst == x && dst == y {
				takeIn = append(takeIn, f.Step)
			}
			if f.Dst == x {
				lossIn++
			} else if dst == x {
				lossIn--
			}
		}
		if src != f.Src {
			dOut[key{f.Src, f.Step}]--
			dOut[key{src, f.Step}]++
			if f.Src == x && src == y {
				takeOut = append(takeOut, f.Step)
			}
			if f.Src == x {
				lossOut++
			} else if src == x {
				lossOut--
			}
		}
	}
	viable = true
	for _, t := range takeIn {
		if deg.In(int(t), int(y))+dIn[key{y, t}] > deg.In(int(t), int(x)) {
			viable = false
		}
	}
	for _, t := range takeOut {
		if deg.Out(int(t), int(y))+dOut[key{y, t}] > deg.Out(int(t), int(x)) {
			viable = false
		}
	}
	lowers = (dir&In != 0 && lossIn > 0) || (dir&Out != 0 && lossOut > 0)
	return viable, lowers
}
