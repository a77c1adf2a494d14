package pattern

import "github.com/react-torch/react-torch/pkg/ten"

// RingAllGather is the ring AllGather: at step s (1..N-1) rank i copies
// chunk (i-s+1) mod N to rank i+1, so chunk c starts at rank c, its origin,
// and travels once round the ring. Fraction 1/N.
func RingAllGather(n int) *ten.Pattern {
	checkRanks("RingAllGather", n)
	flows := make([]ten.Flow, 0, flowCount(ten.AllGather, algoRing, n))
	flows = appendRing(flows, n, n-1, 1, 1)
	return &ten.Pattern{Op: ten.AllGather, Algo: algoRing, Ranks: n, Root: -1, Flows: flows}
}

// RingReduceScatter is the reduce-scatter half of RingAllReduce: steps
// 1..N-1, rank i reduces chunk (i-s) mod N into rank i+1, so chunk c
// completes at rank c.
func RingReduceScatter(n int) *ten.Pattern {
	checkRanks("RingReduceScatter", n)
	flows := make([]ten.Flow, 0, flowCount(ten.ReduceScatter, algoRing, n))
	flows = appendRing(flows, n, n-1, 0, n)
	return &ten.Pattern{Op: ten.ReduceScatter, Algo: algoRing, Ranks: n, Root: -1, Flows: flows}
}

// RecursiveDoublingAllGather is the recursive-doubling AllGather (Thakur et
// al. 2005; paper Appendix A.1) as one chunk graph (chunk 0): every flow
// carries all the blocks its source holds, Fraction = blocks held / N. For
// N a power of two, at step s rank r sends to r XOR 2^(s-1).
//
// Other N use P, the largest power of two <= N, and pair each extra rank
// e >= P with core rank e-P. At step 1 each pair exchanges its blocks. At
// steps 2..1+log2 P core rank r sends all it holds to q = r XOR 2^(s-2)
// and, when q has an extra, to that extra too, which therefore always holds
// what q holds. We use this rather than the usual fold (extras hand their
// block in first and get everything back at the end) because it keeps the
// single chunk graph the paper's transforms reason about, takes the optimal
// ceil(log2 N) steps instead of log2 P + 2, and still delivers no block
// twice: the core ranks' groups {r, r+P} are disjoint and each is sent to
// any rank once.
func RecursiveDoublingAllGather(n int) *ten.Pattern {
	checkRanks("RecursiveDoublingAllGather", n)
	p := floorPow2(n)
	flows := make([]ten.Flow, 0, flowCount(ten.AllGather, algoRecursiveDoubling, n))
	held := make([]int32, p) // blocks held by core rank r and its extra
	for r := range held {
		held[r] = 1
	}
	add := func(step, src, dst int, blocks int32) {
		flows = append(flows, ten.Flow{Step: int32(step), Src: int32(src), Dst: int32(dst), Kind: ten.KindCopy, Fraction: float64(blocks) / float64(n)})
	}
	step := 0
	if n > p {
		step++
		for e := p; e < n; e++ {
			add(step, e, e-p, 1)
			add(step, e-p, e, 1)
			held[e-p] = 2
		}
	}
	next := make([]int32, p)
	for m := 1; m < p; m *= 2 {
		step++
		for r := 0; r < p; r++ {
			q := r ^ m
			add(step, r, q, held[r])
			if e := q + p; e < n {
				add(step, r, e, held[r])
			}
			next[q] = held[q] + held[r]
		}
		held, next = next, held
	}
	return &ten.Pattern{Op: ten.AllGather, Algo: algoRecursiveDoubling, Ranks: n, Root: -1, Flows: flows}
}
