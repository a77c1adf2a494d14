package pattern

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/react-torch/react-torch/pkg/ten"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// goldenTrees renders DoubleBinaryTree for n = 2..64, one line per
// (n, tree, rank), children in NCCL's down0/down1 order.
func goldenTrees() []byte {
	var b bytes.Buffer
	for n := 2; n <= 64; n++ {
		trees := DoubleBinaryTree(n)
		for tr, t := range trees {
			for r := 0; r < n; r++ {
				kids := "-"
				if len(t.Children[r]) > 0 {
					kids = ""
					for i, c := range t.Children[r] {
						if i > 0 {
							kids += ","
						}
						kids += fmt.Sprint(c)
					}
				}
				fmt.Fprintf(&b, "n=%d tree=%d rank=%d parent=%d children=%s\n", n, tr, r, t.Parent[r], kids)
			}
		}
	}
	return b.Bytes()
}

func TestNCCLTreesGolden(t *testing.T) {
	path := filepath.Join("testdata", "nccl_trees.golden")
	got := goldenTrees()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestNCCLTreesGolden -update)", err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
		for i := range min(len(gl), len(wl)) {
			if !bytes.Equal(gl[i], wl[i]) {
				t.Fatalf("line %d: got %q, want %q", i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("got %d lines, want %d", len(gl), len(wl))
	}
}

// TestDoubleBinaryTreeSpotChecks compares with trees read off by hand from
// the ASCII illustrations in NCCL's trees.cc and from the paper's N = 16
// example (§4.3, Fig 1). Children compare as sets: the drawings fix no
// order.
func TestDoubleBinaryTreeSpotChecks(t *testing.T) {
	tests := []struct {
		name     string
		n, tree  int
		root     int32
		children map[int32][]int32 // every internal rank
	}{
		{"14-rank btree", 14, 0, 0, map[int32][]int32{
			0: {8}, 8: {4, 12}, 4: {2, 6}, 12: {10, 13}, 2: {1, 3}, 6: {5, 7}, 10: {9, 11},
		}},
		{"12-rank mirror", 12, 1, 11, map[int32][]int32{
			11: {3}, 3: {1, 7}, 1: {0, 2}, 7: {5, 9}, 5: {4, 6}, 9: {8, 10},
		}},
		{"13-rank btree", 13, 0, 0, map[int32][]int32{
			0: {8}, 8: {4, 12}, 4: {2, 6}, 12: {10}, 2: {1, 3}, 6: {5, 7}, 10: {9, 11},
		}},
		{"13-rank shift", 13, 1, 1, map[int32][]int32{
			1: {9}, 9: {5, 0}, 5: {3, 7}, 0: {11}, 3: {2, 4}, 7: {6, 8}, 11: {10, 12},
		}},
	}
	for _, tt := range tests {
		tr := DoubleBinaryTree(tt.n)[tt.tree]
		if tr.Root != tt.root || tr.Parent[tt.root] != -1 {
			t.Errorf("%s: root %d (parent %d), want %d", tt.name, tr.Root, tr.Parent[tr.Root], tt.root)
		}
		for r := int32(0); r < int32(tt.n); r++ {
			got := slices.Sorted(slices.Values(tr.Children[r]))
			want := slices.Sorted(slices.Values(tt.children[r]))
			if !slices.Equal(got, want) {
				t.Errorf("%s: rank %d children %v, want %v", tt.name, r, got, want)
			}
			for _, c := range want {
				if tr.Parent[c] != r {
					t.Errorf("%s: rank %d parent %d, want %d", tt.name, c, tr.Parent[c], r)
				}
			}
		}
	}

	// Paper §4.3 with 16 ranks: roots 0 and 15, tree 0's leaves odd and
	// tree 1's even, four reduce steps; rank 3 feeds 7 in tree 1 and
	// receives from 1 and 5; rank 4 receives from 2 and 6 in tree 0.
	trees := DoubleBinaryTree(16)
	if trees[0].Root != 0 || trees[1].Root != 15 {
		t.Errorf("N=16 roots %d, %d, want 0, 15", trees[0].Root, trees[1].Root)
	}
	for tr, leafParity := range [2]int{1, 0} {
		for r := 0; r < 16; r++ {
			if leaf := len(trees[tr].Children[r]) == 0; leaf != (r%2 == leafParity) {
				t.Errorf("N=16 tree %d: rank %d leaf=%v", tr, r, leaf)
			}
		}
	}
	if p, c := trees[1].Parent[3], slices.Sorted(slices.Values(trees[1].Children[3])); p != 7 || !slices.Equal(c, []int32{1, 5}) {
		t.Errorf("N=16 tree 1 rank 3: parent %d children %v, want 7 and [1 5]", p, c)
	}
	if c := slices.Sorted(slices.Values(trees[0].Children[4])); !slices.Equal(c, []int32{2, 6}) {
		t.Errorf("N=16 tree 0 rank 4: children %v, want [2 6]", c)
	}
	reduceSteps := int32(0)
	for _, f := range TreeAllReduce(16).Flows {
		if f.Kind == ten.KindReduce {
			reduceSteps = max(reduceSteps, f.Step)
		}
	}
	if reduceSteps != 4 {
		t.Errorf("N=16: %d reduce steps, want 4", reduceSteps)
	}
}

// TestTreeInvariants checks that both trees are binary spanning trees with
// consistent parent and child links, NCCL's roots (ncclGetDtreeRoots) and
// its leaf parities.
func TestTreeInvariants(t *testing.T) {
	for n := 2; n <= 300; n++ {
		trees := DoubleBinaryTree(n)
		wantRoot := [2]int32{0, int32(n - 1)}
		if n%2 == 1 {
			wantRoot[1] = 1
		}
		for tr, tree := range trees {
			if tree.Root != wantRoot[tr] {
				t.Fatalf("N=%d tree %d: root %d, want %d", n, tr, tree.Root, wantRoot[tr])
			}
			kids := 0
			for r := range n {
				if len(tree.Children[r]) > 2 {
					t.Fatalf("N=%d tree %d: rank %d has %d children", n, tr, r, len(tree.Children[r]))
				}
				for _, c := range tree.Children[r] {
					if tree.Parent[c] != int32(r) {
						t.Fatalf("N=%d tree %d: %d lists child %d whose parent is %d", n, tr, r, c, tree.Parent[c])
					}
					kids++
				}
				if (tree.Parent[r] == -1) != (int32(r) == tree.Root) {
					t.Fatalf("N=%d tree %d: rank %d parent %d", n, tr, r, tree.Parent[r])
				}
				// Walking up must reach the root within n hops.
				x, hops := int32(r), 0
				for x != tree.Root && hops <= n {
					x, hops = tree.Parent[x], hops+1
				}
				if x != tree.Root {
					t.Fatalf("N=%d tree %d: rank %d does not reach the root", n, tr, r)
				}
				// Tree 0: the leaves are the odd ranks. Tree 1 inherits
				// that through the mirror (even n: even leaves) or the
				// shift (odd n: leaves are the even ranks but 0).
				leaf := len(tree.Children[r]) == 0
				role := r
				if tr == 1 {
					role = n - 1 - r
					if n%2 == 1 {
						role = (r - 1 + n) % n
					}
				}
				if leaf != (role%2 == 1) {
					t.Fatalf("N=%d tree %d: rank %d (btree role %d) leaf=%v", n, tr, r, role, leaf)
				}
			}
			if kids != n-1 {
				t.Fatalf("N=%d tree %d: %d child links, want %d", n, tr, kids, n-1)
			}
			if _, _, d := tree.levels(); int(d) != ceilLog2(n) {
				t.Fatalf("N=%d tree %d: depth %d, want ceil(log2 N) = %d", n, tr, d, ceilLog2(n))
			}
		}
	}
}
