package pattern

import (
	"cmp"
	"fmt"
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
