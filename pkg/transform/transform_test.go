package transform

import (
	"fmt"
	"testing"

	"github.com/react-torch/react-torch/pkg/pattern"
	"github.com/react-torch/react-torch/pkg/semantics"
	"github.com/react-torch/react-torch/pkg/ten"
)

func TestApplyKinds(t *testing.T) {
	p := pattern.TreeAllReduce(16)
	tests := []struct {
		name string
		s    Swap
	}{
		{"global", GlobalSwap(3, 2)},
		{"chunk", ChunkSwap(1, 3, 2)},
		{"position", PositionSwap(Vertex{1, 2, 3}, Vertex{1, 0, 2})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := Apply(p, tt.s)
			ch := Changed(p, tt.s)
			if len(ch) == 0 {
				t.Fatal("swap changed nothing")
			}
			for i := range p.Flows {
				same := p.Flows[i].Src == q.Flows[i].Src && p.Flows[i].Dst == q.Flows[i].Dst
				in := false
				for _, c := range ch {
					in = in || int(c) == i
				}
				if same == in {
					t.Fatalf("flow %d: changed=%v but listed=%v", i, !same, in)
				}
				if tt.s.Kind != Global && q.Flows[i].Chunk != tt.s.A.Chunk && !same {
					t.Fatalf("flow %d of another chunk changed", i)
				}
			}
			if err := semantics.Check(q); err != nil {
				t.Fatalf("swap broke the pattern: %v", err)
			}
			inv := tt.s
			if inv.Kind == Position { // the roles now sit at the other ranks
				inv.A.Rank, inv.B.Rank = tt.s.B.Rank, tt.s.A.Rank
			}
			if back := Apply(q, inv); fmt.Sprint(back.Flows) != fmt.Sprint(p.Flows) {
				t.Fatal("a swap applied twice is not the identity")
			}
		})
	}
	// The position swap of the paper's example moves only the reduce phase.
	q := Apply(p, PositionSwap(Vertex{1, 2, 3}, Vertex{1, 0, 2}))
	for i, f := range q.Flows {
		if f.Kind == ten.KindCopy && (f.Src != p.Flows[i].Src || f.Dst != p.Flows[i].Dst) {
			t.Fatalf("broadcast flow %d changed: %+v", i, f)
		}
	}
}

// TestPruneFig1 is the classification of the paper's Fig 1: chunk-local
// swaps of the congested rank 3 in NCCL's tree 1 (leaves even), 16 ranks.
func TestPruneFig1(t *testing.T) {
	p := pattern.TreeAllReduce(16)
	deg := ten.NewDegrees(p)
	red := map[int]bool{4: true, 12: true}
	green := map[int]bool{0: true, 2: true, 6: true, 8: true, 10: true, 14: true, 15: true}
	for y := 0; y < 16; y++ {
		if y == 3 {
			continue
		}
		viable, lowers := Prune(p, deg, ChunkSwap(1, 3, y), 3, In)
		if viable == red[y] {
			t.Errorf("rank %d: viable = %v, want %v", y, viable, !red[y])
		}
		if viable && lowers != green[y] {
			t.Errorf("rank %d: lowers rank 3's in-degree = %v, want %v", y, lowers, green[y])
		}
	}
	if v, _ := Prune(p, deg, ChunkSwap(1, 3, 2), 3, In); !v {
		t.Fatal("the paper's choice, rank 2, is not viable")
	}
	// ③: rank 3's tree-1 aggregation vertex against rank 2's leaf vertex.
	if v, l := Prune(p, deg, PositionSwap(Vertex{1, 2, 3}, Vertex{1, 0, 2}), 3, In); !v || !l {
		t.Fatalf("position swap 3<->2: viable %v lowers %v, want both", v, l)
	}
	// ① is always viable: y inherits x's degrees exactly.
	for y := 0; y < 16; y++ {
		if v, _ := Prune(p, deg, GlobalSwap(3, y), 3, Both); y != 3 && !v {
			t.Errorf("global swap 3<->%d not viable", y)
		}
	}
}

// bruteForce is Appendix A.3: every pair of occupied vertices of every
// chunk, swapped, checked on the whole pattern.
func bruteForce(p *ten.Pattern) map[[2]Vertex]bool {
	ix := ten.NewChunkIndex(p)
	ok := map[[2]Vertex]bool{}
	for c := 0; c < ix.Len(); c++ {
		vs := occupied(p, ix, c)
		for a := range vs {
			for b := a + 1; b < len(vs); b++ {
				if semantics.Check(Apply(p, PositionSwap(vs[a], vs[b]))) == nil {
					ok[[2]Vertex{vs[a], vs[b]}] = true
				}
			}
		}
	}
	return ok
}

func smallPatterns() map[string]*ten.Pattern {
	m := map[string]*ten.Pattern{}
	for _, n := range []int{2, 3, 4, 5, 6, 7, 8, 11, 12, 16} {
		m[fmt.Sprintf("tree-%d", n)] = pattern.TreeAllReduce(n)
	}
	for _, n := range []int{2, 3, 5, 8} {
		m[fmt.Sprintf("ring-%d", n)] = pattern.RingAllReduce(n)
		m[fmt.Sprintf("hd-%d", n)] = pattern.HalvingDoublingAllReduce(n)
		m[fmt.Sprintf("ring-ag-%d", n)] = pattern.RingAllGather(n)
		m[fmt.Sprintf("rs-%d", n)] = pattern.RingReduceScatter(n)
		m[fmt.Sprintf("bcast-%d", n)] = pattern.TreeBroadcast(n, n/2)
		m[fmt.Sprintf("reduce-%d", n)] = pattern.TreeReduce(n, n-1)
	}
	for _, n := range []int{2, 3, 4, 5, 6, 7, 8, 12, 16} {
		m[fmt.Sprintf("rd-ag-%d", n)] = pattern.RecursiveDoublingAllGather(n)
	}
	return m
}

// TestPositionsMatchBruteForce requires the evaluator to decide every pair
// as the brute force does, and the classes to be exactly the brute force's
// pair set (which also shows the relation is an equivalence on these).
func TestPositionsMatchBruteForce(t *testing.T) {
	for name, p := range smallPatterns() {
		t.Run(name, func(t *testing.T) {
			want := bruteForce(p)
			ix := ten.NewChunkIndex(p)
			w := weights(p.Ranks)
			ps := NewPositions(p)
			for c := 0; c < ix.Len(); c++ {
				e := newChunkEval(p, ix, c, w)
				vs := occupied(p, ix, c)
				for a := range vs {
					partners := map[Vertex]bool{}
					for _, u := range ps.Partners(vs[a]) {
						partners[u] = true
					}
					for b := range vs {
						if a == b {
							continue
						}
						key := [2]Vertex{vs[min(a, b)], vs[max(a, b)]}
						if got := e.swapValid(vs[a], vs[b]); got != want[key] {
							t.Fatalf("swap %v <-> %v: evaluator %v, brute force %v", vs[a], vs[b], got, want[key])
						}
						if partners[vs[b]] != want[key] {
							t.Fatalf("classes say %v ~ %v is %v, brute force %v", vs[a], vs[b], partners[vs[b]], want[key])
						}
					}
				}
			}
			if n := ps.CountAll(); n != len(want) {
				t.Fatalf("CountAll = %d, brute force %d", n, len(want))
			}
			t.Logf("%d valid position swaps", len(want))
		})
	}
}

func TestTreeReducePhaseIsOneClass(t *testing.T) {
	ps := NewPositions(pattern.TreeAllReduce(16))
	got := ps.Partners(Vertex{1, 2, 3})
	found := false
	for _, u := range got {
		found = found || u == (Vertex{1, 0, 2})
	}
	if !found {
		t.Fatalf("rank 2's leaf vertex is not a partner of rank 3's aggregation vertex; partners %v", got)
	}
}

func BenchmarkPositions(b *testing.B) {
	for _, bc := range []struct {
		name string
		p    *ten.Pattern
	}{
		{"tree-64", pattern.TreeAllReduce(64)},
		{"tree-256", pattern.TreeAllReduce(256)},
		{"rd-allgather-256", pattern.RecursiveDoublingAllGather(256)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				NewPositions(bc.p).CountAll()
			}
		})
	}
}

func BenchmarkBruteForce(b *testing.B) {
	for _, n := range []int{8, 16, 32} {
		p := pattern.TreeAllReduce(n)
		b.Run(fmt.Sprintf("tree-%d", n), func(b *testing.B) {
			for b.Loop() {
				bruteForce(p)
			}
		})
	}
}

func TestPrunerMatchesChanged(t *testing.T) {
	for name, p := range smallPatterns() {
		pr := NewPruner(p, ten.NewDegrees(p))
		for x := 0; x < p.Ranks; x++ {
			for y := 0; y < p.Ranks; y++ {
				for _, s := range []Swap{GlobalSwap(x, y), ChunkSwap(p.Chunks()-1, x, y), PositionSwap(Vertex{0, 1, int32(x)}, Vertex{0, 0, int32(y)})} {
					if got, want := pr.changed(s), Changed(p, s); fmt.Sprint(got) != fmt.Sprint(want) && !(len(got) == 0 && len(want) == 0) {
						t.Fatalf("%s %v: indexed %v, scan %v", name, s, got, want)
					}
				}
			}
		}
	}
}
