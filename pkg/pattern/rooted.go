package pattern

import (
	"cmp"
	"fmt"
	"math/bits"
	"slices"

	"github.com/react-torch/react-torch/pkg/ten"
)

// TreeBroadcast broadcasts over NCCL's first binary tree rotated so that
// root plays btree rank 0 (rank r plays (r-root) mod N): one chunk, and a
// rank at depth d receives a copy from its parent at step d.
func TreeBroadcast(n, root int) *ten.Pattern {
	return rootedTree(ten.Broadcast, "TreeBroadcast", n, root)
}

// TreeReduce reduces over the same rotated binary tree as TreeBroadcast:
// one chunk, and a rank sends its partial sum to its parent at the step
// equal to its height (leaves 1).
func TreeReduce(n, root int) *ten.Pattern {
	return rootedTree(ten.Reduce, "TreeReduce", n, root)
}

// BinomialBroadcast broadcasts over a binomial tree rooted at root, as
// Gloo's and MPI's short-message broadcast: one chunk; with v = (r-root)
// mod N, at step k every v below 2^(k-1) that holds the data sends it to
// v + 2^(k-1). Every rank that has the data keeps sending, so the data
// reaches N ranks in ceil(log2 N) steps with no rank sending to more
// than one peer a step.
func BinomialBroadcast(n, root int) *ten.Pattern {
	return binomial(ten.Broadcast, "BinomialBroadcast", n, root)
}

// BinomialReduce reduces over the same binomial tree: at step k every v
// whose lowest set bit is bit k-1 sends its partial result to
// v - 2^(k-1).
func BinomialReduce(n, root int) *ten.Pattern {
	return binomial(ten.Reduce, "BinomialReduce", n, root)
}

func binomial(op ten.Op, what string, n, root int) *ten.Pattern {
	checkRanks(what, n)
	if root < 0 || root >= n {
		panic(fmt.Sprintf("pattern: %s: root %d out of range [0, %d)", what, root, n))
	}
	rank := func(v int) int32 { return int32((v + root) % n) }
	flows := make([]ten.Flow, 0, flowCount(op, algoBinomial, n))
	steps := bits.Len(uint(n - 1)) // ceil(log2 n)
	for k := 1; k <= steps; k++ {
		d := 1 << (k - 1)
		if op == ten.Broadcast {
			for v := 0; v < d && v+d < n; v++ {
				flows = append(flows, ten.Flow{Step: int32(k), Src: rank(v), Dst: rank(v + d), Kind: ten.KindCopy, Fraction: 1})
			}
			continue
		}
		for v := d; v < n; v += 2 * d {
			flows = append(flows, ten.Flow{Step: int32(k), Src: rank(v), Dst: rank(v - d), Kind: ten.KindReduce, Fraction: 1})
		}
	}
	return &ten.Pattern{Op: op, Algo: algoBinomial, Ranks: n, Root: root, Flows: flows}
}

func rootedTree(op ten.Op, what string, n, root int) *ten.Pattern {
	checkRanks(what, n)
	if root < 0 || root >= n {
		panic(fmt.Sprintf("pattern: %s: root %d out of range [0, %d)", what, root, n))
	}
	t := rotatedBtree(n, root)
	depth, height, _ := t.levels()
	flows := make([]ten.Flow, 0, n-1)
	for r, p := range t.Parent {
		if p < 0 {
			continue
		}
		if op == ten.Broadcast {
			flows = append(flows, ten.Flow{Step: depth[r], Src: p, Dst: int32(r), Kind: ten.KindCopy, Fraction: 1})
		} else {
			flows = append(flows, ten.Flow{Step: height[r], Src: int32(r), Dst: p, Kind: ten.KindReduce, Fraction: 1})
		}
	}
	slices.SortStableFunc(flows, func(a, b ten.Flow) int { return cmp.Compare(a.Step, b.Step) })
	return &ten.Pattern{Op: op, Algo: algoTree, Ranks: n, Root: root, Flows: flows}
}
