package pattern

// Tree is a rooted tree over ranks 0..N-1. Parent[Root] is -1. Children
// lists each rank's children in NCCL's order (down0, then down1), absent
// children left out.
type Tree struct {
	Root     int32
	Parent   []int32
	Children [][]int32
}

// btreeNode is NCCL's ncclGetBtree for one rank: the binary tree rooted at
// 0 in which odd ranks are the leaves and a rank's lowest set bit says how
// far below the top of the tree it sits. Out-of-range children are pulled
// in; a parent out of range is replaced by the one a level down.
func btreeNode(n, r int) (up, down0, down1 int) {
	if r == 0 {
		// The root's only child is the largest power of two below n.
		return -1, -1, floorPow2(n - 1)
	}
	bit := r & -r
	up = (r ^ bit) | bit<<1
	if up >= n {
		up = r ^ bit
	}
	low := bit >> 1
	if low == 0 {
		return up, -1, -1
	}
	// NCCL's loop retries r+low once before halving, so it tries r+low,
	// r+low/2, ..., r+1 and ends at -1: the first of those in range.
	down1 = -1
	for l := low; l > 0; l >>= 1 {
		if r+l < n {
			down1 = r + l
			break
		}
	}
	return up, r - low, down1
}

// newTree allocates a tree whose children share one backing array.
func newTree(n int) Tree {
	return Tree{Parent: make([]int32, n), Children: make([][]int32, n)}
}

// btree is NCCL's first tree, rank for rank, with every rank's role
// remapped through role (rank r plays btree rank role(r)) and back through
// rank (the inverse).
func btree(n int, role, rank func(int) int) Tree {
	t := newTree(n)
	back := make([]int32, 2*n)
	for r := 0; r < n; r++ {
		up, d0, d1 := btreeNode(n, role(r))
		if up < 0 {
			t.Root = int32(r)
			t.Parent[r] = -1
		} else {
			t.Parent[r] = int32(rank(up))
		}
		kids := back[:0:2]
		back = back[2:]
		for _, d := range [2]int{d0, d1} {
			if d >= 0 {
				kids = append(kids, int32(rank(d)))
			}
		}
		t.Children[r] = kids
	}
	return t
}

func identity(r int) int { return r }

// DoubleBinaryTree returns NCCL's two trees (ncclGetDtree) rank for rank.
// Tree 0 is the btree rooted at 0 with the odd ranks as leaves. Tree 1
// mirrors it for even n (rank r plays btree rank n-1-r, so the even ranks
// are its leaves and n-1 its root) and shifts it by one for odd n (rank r
// plays btree rank r-1 mod n, root 1), as NCCL does.
func DoubleBinaryTree(n int) [2]Tree {
	checkRanks("DoubleBinaryTree", n)
	var trees [2]Tree
	trees[0] = btree(n, identity, identity)
	if n%2 == 0 {
		mirror := func(r int) int { return n - 1 - r }
		trees[1] = btree(n, mirror, mirror)
	} else {
		trees[1] = btree(n, func(r int) int { return (r - 1 + n) % n }, func(b int) int { return (b + 1) % n })
	}
	return trees
}

// rotatedBtree is the btree with root playing btree rank 0: rank r plays
// (r - root) mod n.
func rotatedBtree(n, root int) Tree {
	return btree(n, func(r int) int { return (r - root + n) % n }, func(b int) int { return (b + root) % n })
}

// levels returns every rank's depth (root 0) and height (leaves 1, else
// one more than the highest child), and the tree's largest depth.
func (t *Tree) levels() (depth, height []int32, maxDepth int32) {
	n := len(t.Parent)
	depth = make([]int32, n)
	height = make([]int32, n)
	order := make([]int32, 1, n) // breadth-first from the root
	order[0] = t.Root
	for i := 0; i < len(order); i++ {
		r := order[i]
		for _, c := range t.Children[r] {
			depth[c] = depth[r] + 1
			maxDepth = max(maxDepth, depth[c])
			order = append(order, c)
		}
	}
	for i := len(order) - 1; i >= 0; i-- {
		r := order[i]
		height[r] = max(height[r], 1)
		if p := t.Parent[r]; p >= 0 {
			height[p] = max(height[p], height[r]+1)
		}
	}
	return depth, height, maxDepth
}
