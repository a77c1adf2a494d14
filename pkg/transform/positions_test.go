package transform

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/react-torch/react-torch/pkg/pattern"
	"github.com/react-torch/react-torch/pkg/semantics"
	"github.com/react-torch/react-torch/pkg/ten"
)

// scramble applies up to k random swaps of all three kinds that keep p
// correct, to reach patterns no generator emits (irregular trees, mixed
// orders, moved origins).
func scramble(p *ten.Pattern, k int, seed uint64) *ten.Pattern {
	rng := rand.New(rand.NewPCG(seed, 0x5c4a))
	ix := ten.NewChunkIndex(p)
	for done, tries := 0, 0; done < k && tries < 400; tries++ {
		var s Swap
		x, y := rng.IntN(p.Ranks), rng.IntN(p.Ranks)
		c := rng.IntN(ix.Len())
		switch rng.IntN(8) { // mostly ③, the only kind that changes the shape
		case 0:
			s = GlobalSwap(x, y)
		case 1:
			s = ChunkSwap(c, x, y)
		default:
			vs := occupied(p, ix, c)
			s = PositionSwap(vs[rng.IntN(len(vs))], vs[rng.IntN(len(vs))])
		}
		if q := Apply(p, s); semantics.Check(q) == nil {
			p, done = q, done+1
		}
	}
	return p
}

// mixed is a 4-rank allreduce whose step 3 both replaces (into 1) and adds
// (into 2), so that swaps can create conflicting writes.
func mixed() *ten.Pattern {
	r, c := ten.KindReduce, ten.KindCopy
	fl := []ten.Flow{{Step: 1, Src: 1, Dst: 0, Kind: r}, {Step: 2, Src: 3, Dst: 0, Kind: r},
		{Step: 3, Src: 0, Dst: 1, Kind: c}, {Step: 3, Src: 0, Dst: 2, Kind: r},
		{Step: 4, Src: 2, Dst: 0, Kind: c}, {Step: 4, Src: 2, Dst: 1, Kind: c}, {Step: 4, Src: 2, Dst: 3, Kind: c}}
	for i := range fl {
		fl[i].Fraction = 1
	}
	return &ten.Pattern{Op: ten.AllReduce, Algo: "mixed", Ranks: 4, Root: -1, Flows: fl}
}

func generated(small bool) map[string]*ten.Pattern {
	m := map[string]*ten.Pattern{}
	trees, others, rds := []int{9, 10, 13, 14, 15, 17, 20, 24}, []int{4, 6, 7, 9}, []int{9, 10, 11, 13, 15, 24}
	if !small {
		trees, others, rds = []int{33, 64, 100, 128}, []int{12, 16, 19}, []int{24, 33, 64, 100}
	}
	for _, n := range trees {
		m[fmt.Sprintf("tree-%d", n)] = pattern.TreeAllReduce(n)
		m[fmt.Sprintf("bcast-%d", n)] = pattern.TreeBroadcast(n, n/3)
		m[fmt.Sprintf("reduce-%d", n)] = pattern.TreeReduce(n, 1)
	}
	for _, n := range others {
		m[fmt.Sprintf("ring-%d", n)] = pattern.RingAllReduce(n)
		m[fmt.Sprintf("hd-%d", n)] = pattern.HalvingDoublingAllReduce(n)
		m[fmt.Sprintf("ring-ag-%d", n)] = pattern.RingAllGather(n)
		m[fmt.Sprintf("rs-%d", n)] = pattern.RingReduceScatter(n)
	}
	for _, n := range rds {
		m[fmt.Sprintf("rd-ag-%d", n)] = pattern.RecursiveDoublingAllGather(n)
	}
	m["mixed"] = mixed()
	bases := map[string]*ten.Pattern{
		"tree": pattern.TreeAllReduce(12), "rd-ag": pattern.RecursiveDoublingAllGather(8),
		"ring-ag": pattern.RingAllGather(6), "hd": pattern.HalvingDoublingAllReduce(6),
		"ring": pattern.RingAllReduce(5), "rs": pattern.RingReduceScatter(6),
		"bcast": pattern.TreeBroadcast(11, 4), "reduce": pattern.TreeReduce(11, 7),
		"mixed": mixed(), "rd-ag-odd": pattern.RecursiveDoublingAllGather(7),
	}
	seeds := 6
	if !small {
		bases = map[string]*ten.Pattern{
			"tree": pattern.TreeAllReduce(40), "rd-ag": pattern.RecursiveDoublingAllGather(32),
			"ring-ag": pattern.RingAllGather(12), "hd": pattern.HalvingDoublingAllReduce(16),
			"bcast": pattern.TreeBroadcast(30, 4), "reduce": pattern.TreeReduce(30, 7),
			"rs": pattern.RingReduceScatter(10),
		}
		seeds = 4
	}
	for name, p := range bases {
		for seed := uint64(1); seed <= uint64(seeds); seed++ {
			m[fmt.Sprintf("scrambled-%s-%d", name, seed)] = scramble(p, 12, seed)
		}
	}
	return m
}

// TestPositionsMatchBruteForceMore extends TestPositionsMatchBruteForce to
// more sizes and to scrambled patterns: every pair, Partners and CountAll.
func TestPositionsMatchBruteForceMore(t *testing.T) {
	for name, p := range generated(true) {
		t.Run(name, func(t *testing.T) {
			if err := semantics.Check(p); err != nil {
				t.Fatal(err)
			}
			want := bruteForce(p)
			ps := NewPositions(p)
			ix := ten.NewChunkIndex(p)
			w := weights(p.Ranks)
			for c := 0; c < ix.Len(); c++ {
				vs := occupied(p, ix, c)
				e := ps.chunk(c)
				ref := newChunkEval(p, ix, c, w) // the reference of TestClosureMatchesForward
				ref.forwardOnly = true
				if got := ps.Occupied(c); fmt.Sprint(got) != fmt.Sprint(vs) {
					t.Fatalf("Occupied(%d) = %v, want %v", c, got, vs)
				}
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
						if got := ref.swapValid(vs[a], vs[b]); got != want[key] {
							t.Fatalf("swap %v <-> %v: forward only %v, brute force %v", vs[a], vs[b], got, want[key])
						}
						if partners[vs[b]] != want[key] {
							t.Fatalf("Partners(%v) has %v: %v, brute force %v", vs[a], vs[b], partners[vs[b]], want[key])
						}
					}
				}
			}
			if n := ps.CountAll(); n != len(want) {
				t.Fatalf("CountAll = %d, brute force %d", n, len(want))
			}
		})
	}
}

// TestClosureMatchesForward checks the closure and the shortcuts against
// plain forward propagation on patterns too large for the brute force.
func TestClosureMatchesForward(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	for name, p := range generated(false) {
		t.Run(name, func(t *testing.T) {
			ps := NewPositions(p)
			ix := ten.NewChunkIndex(p)
			w := weights(p.Ranks)
			total := 0
			for c := 0; c < ix.Len(); c++ {
				e := ps.chunk(c)
				ref := newChunkEval(p, ix, c, w)
				ref.forwardOnly = true
				for i := range e.verts {
					var want []Vertex
					for j := range e.verts {
						if i == j {
							continue
						}
						got, exp := e.swapIdx(i, j), ref.swapIdx(i, j)
						if got != exp {
							t.Fatalf("swap %v <-> %v: closure %v, forward %v", e.verts[i], e.verts[j], got, exp)
						}
						if exp {
							want = append(want, e.verts[j])
							total++
						}
					}
					if got := ps.Partners(e.verts[i]); fmt.Sprint(got) != fmt.Sprint(want) && (len(got) > 0 || len(want) > 0) {
						t.Fatalf("Partners(%v) = %v, want %v", e.verts[i], got, want)
					}
				}
			}
			if n := ps.CountAll(); 2*n != total {
				t.Fatalf("CountAll = %d, forward %d", n, total/2)
			}
		})
	}
}

func TestPartnersSorted(t *testing.T) {
	ps := NewPositions(pattern.RecursiveDoublingAllGather(16))
	for _, v := range ps.Occupied(0) {
		got := ps.Partners(v)
		if !sort.SliceIsSorted(got, func(a, b int) bool {
			return got[a].Step < got[b].Step || (got[a].Step == got[b].Step && got[a].Rank < got[b].Rank)
		}) {
			t.Fatalf("Partners(%v) not in step then rank order: %v", v, got)
		}
	}
	if ps.Partners(Vertex{0, 99, 0}) != nil || ps.Partners(Vertex{5, 0, 0}) != nil {
		t.Fatal("Partners of a vertex that is not occupied")
	}
}

func BenchmarkCountAll(b *testing.B) {
	for _, bc := range []struct {
		name string
		p    func() *ten.Pattern
	}{
		{"tree-64", func() *ten.Pattern { return pattern.TreeAllReduce(64) }},
		{"tree-256", func() *ten.Pattern { return pattern.TreeAllReduce(256) }},
		{"tree-1024", func() *ten.Pattern { return pattern.TreeAllReduce(1024) }},
		{"rd-allgather-256", func() *ten.Pattern { return pattern.RecursiveDoublingAllGather(256) }},
		{"rd-allgather-1024", func() *ten.Pattern { return pattern.RecursiveDoublingAllGather(1024) }},
	} {
		p := bc.p()
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				NewPositions(p).CountAll()
			}
		})
	}
}

func BenchmarkPartners(b *testing.B) {
	for _, bc := range []struct {
		name string
		p    *ten.Pattern
		v    Vertex
	}{
		{"tree-1024", pattern.TreeAllReduce(1024), Vertex{1, 2, 3}},
		{"rd-allgather-1024", pattern.RecursiveDoublingAllGather(1024), Vertex{0, 5, 7}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ps := NewPositions(bc.p)
			ps.Occupied(int(bc.v.Chunk)) // index the chunk outside the loop
			for b.Loop() {
				clear(ps.cached)
				ps.Partners(bc.v)
			}
		})
	}
}

func BenchmarkIndexChunk(b *testing.B) {
	for _, bc := range []struct {
		name string
		p    *ten.Pattern
	}{
		{"tree-1024", pattern.TreeAllReduce(1024)},
		{"rd-allgather-1024", pattern.RecursiveDoublingAllGather(1024)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				NewPositions(bc.p).Occupied(0)
			}
		})
	}
}

func BenchmarkBruteForceReach(b *testing.B) {
	for _, n := range []int{8, 16, 24, 32, 64, 96} {
		p := pattern.TreeAllReduce(n)
		b.Run(fmt.Sprintf("tree-%d", n), func(b *testing.B) {
			for b.Loop() {
				bruteForce(p)
			}
		})
	}
}
