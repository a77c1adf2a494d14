package pattern

import (
	"cmp"
	"slices"

	"github.com/react-torch/react-torch/pkg/ten"
)

// TreeAllReduce is NCCL's double binary tree AllReduce (paper §4.3, Fig 2):
// chunk t (half the message) is reduced up tree t of DoubleBinaryTree and
// broadcast back down it. A rank sends its partial sum to its parent at the
// step equal to its height (leaves 1), so the reduce phase takes H steps, H
// the larger depth of the two trees; a rank at depth d receives the result
// from its parent at step H+d. Both trees share step numbers, so the whole
// pattern takes 2H steps.
func TreeAllReduce(n int) *ten.Pattern {
	checkRanks("TreeAllReduce", n)
	trees := DoubleBinaryTree(n)
	var depth, height [2][]int32
	var h int32
	for t := range trees {
		var md int32
		depth[t], height[t], md = trees[t].levels()
		h = max(h, md)
	}
	flows := make([]ten.Flow, 0, flowCount(ten.AllReduce, algoTree, n))
	for t := range trees {
		for r, p := range trees[t].Parent {
			if p >= 0 {
				flows = append(flows, ten.Flow{Chunk: int32(t), Step: height[t][r], Src: int32(r), Dst: p, Kind: ten.KindReduce, Fraction: 0.5})
			}
		}
	}
	for t := range trees {
		for r, p := range trees[t].Parent {
			if p >= 0 {
				flows = append(flows, ten.Flow{Chunk: int32(t), Step: h + depth[t][r], Src: p, Dst: int32(r), Kind: ten.KindCopy, Fraction: 0.5})
			}
		}
	}
	slices.SortStableFunc(flows, func(a, b ten.Flow) int { return cmp.Compare(a.Step, b.Step) })
	return &ten.Pattern{Op: ten.AllReduce, Algo: algoTree, Ranks: n, Root: -1, Flows: flows}
}

// RingAllReduce is the ring AllReduce: rank i sits at ring position i and
// sends to rank i+1. At step s (from 1) rank i sends chunk (i-s) mod N: a
// reduce for s = 1..N-1 (reduce-scatter, after which chunk c is complete at
// rank c), then a copy for s = N..2N-2 (allgather). This is NCCL's order:
// at 0-indexed step s' the rank at position i sends chunk (i-s'-1) mod N.
func RingAllReduce(n int) *ten.Pattern {
	checkRanks("RingAllReduce", n)
	flows := make([]ten.Flow, 0, flowCount(ten.AllReduce, algoRing, n))
	flows = appendRing(flows, n, 2*n-2, 0, n)
	return &ten.Pattern{Op: ten.AllReduce, Algo: algoRing, Ranks: n, Root: -1, Flows: flows}
}

// appendRing appends ring steps 1..last, in which rank i sends chunk
// (i - s + shift) mod n to rank i+1, a reduce before step copyFrom and a
// copy from it on.
func appendRing(flows []ten.Flow, n, last, shift, copyFrom int) []ten.Flow {
	frac := 1 / float64(n)
	for s := 1; s <= last; s++ {
		kind := ten.KindReduce
		if s >= copyFrom {
			kind = ten.KindCopy
		}
		c := ((-s+shift)%n + n) % n // chunk sent by rank 0
		for i := 0; i < n; i++ {
			dst := i + 1
			if dst == n {
				dst = 0
			}
			flows = append(flows, ten.Flow{Chunk: int32(c), Step: int32(s), Src: int32(i), Dst: int32(dst), Kind: kind, Fraction: frac})
			if c++; c == n {
				c = 0
			}
		}
	}
	return flows
}

// HalvingDoublingAllReduce is Rabenseifner's AllReduce: a recursive-halving
// reduce-scatter followed by a recursive-doubling allgather, over P chunks
// where P is the largest power of two <= N (block b of the message is
// chunk b, Fraction 1/P). A step's message between two ranks is several
// flows, one per chunk it carries, with the same (step, src, dst).
//
// For N not a power of two it uses the usual fold (Thakur et al. 2005):
// each of the N-P extra ranks e >= P first reduces all P chunks into its
// partner e-P, the P core ranks run the power-of-two algorithm, and each
// partner finally copies all P chunks back to its extra. That costs two
// steps more than log-optimal but keeps every chunk reduced exactly once.
// For powers of two there are no fold steps: 2 log2 N steps in all.
func HalvingDoublingAllReduce(n int) *ten.Pattern {
	checkRanks("HalvingDoublingAllReduce", n)
	p := floorPow2(n)
	frac := 1 / float64(p)
	flows := make([]ten.Flow, 0, flowCount(ten.AllReduce, algoHalvingDoubling, n))
	add := func(step, src, dst, chunk int, kind ten.Kind) {
		flows = append(flows, ten.Flow{Chunk: int32(chunk), Step: int32(step), Src: int32(src), Dst: int32(dst), Kind: kind, Fraction: frac})
	}
	step := 0
	if n > p {
		step++
		for e := p; e < n; e++ {
			for c := 0; c < p; c++ {
				add(step, e, e-p, c, ten.KindReduce)
			}
		}
	}
	// Halving: before the step with distance m a rank holds the 2m blocks
	// of its aligned window and keeps the half on its side of bit m, so
	// rank r ends holding block r.
	for m := p / 2; m >= 1; m /= 2 {
		step++
		for r := 0; r < p; r++ {
			q := r ^ m
			lo := q &^ (m - 1) // the partner's half
			for c := lo; c < lo+m; c++ {
				add(step, r, q, c, ten.KindReduce)
			}
		}
	}
	// Doubling: before the step with distance m a rank holds the m complete
	// blocks of its aligned window and sends them all to its partner.
	for m := 1; m < p; m *= 2 {
		step++
		for r := 0; r < p; r++ {
			lo := r &^ (m - 1)
			for c := lo; c < lo+m; c++ {
				add(step, r, r^m, c, ten.KindCopy)
			}
		}
	}
	if n > p {
		step++
		for e := p; e < n; e++ {
			for c := 0; c < p; c++ {
				add(step, e-p, e, c, ten.KindCopy)
			}
		}
	}
	return &ten.Pattern{Op: ten.AllReduce, Algo: algoHalvingDoubling, Ranks: n, Root: -1, Flows: flows}
}
