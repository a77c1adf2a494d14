package pattern

import (
	"errors"
	"fmt"
	"math/bits"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/react-torch/react-torch/pkg/semantics"
	"github.com/react-torch/react-torch/pkg/ten"
)

// generator is one row of the table every test here runs over.
type generator struct {
	name   string
	op     ten.Op
	algo   string
	make   func(n, root int) *ten.Pattern
	steps  func(n int) int // expected step count
	chunks func(n int) int
	// onePeer: every rank sends to at most one peer and receives from at
	// most one per step.
	onePeer bool
}

func ceilLog2(n int) int { return bits.Len(uint(n - 1)) }

func generators() []generator {
	unrooted := func(f func(int) *ten.Pattern) func(int, int) *ten.Pattern {
		return func(n, _ int) *ten.Pattern { return f(n) }
	}
	fold := func(n int) int { // fold steps of halving-doubling
		if n == floorPow2(n) {
			return 0
		}
		return 2
	}
	return []generator{
		{"allreduce/tree", ten.AllReduce, "tree", unrooted(TreeAllReduce), func(n int) int { return 2 * ceilLog2(n) }, func(int) int { return 2 }, false},
		{"allreduce/ring", ten.AllReduce, "ring", unrooted(RingAllReduce), func(n int) int { return 2 * (n - 1) }, func(n int) int { return n }, true},
		{"allreduce/halving_doubling", ten.AllReduce, "halving_doubling", unrooted(HalvingDoublingAllReduce),
			func(n int) int { return 2*log2(floorPow2(n)) + fold(n) }, floorPow2, true},
		{"allgather/ring", ten.AllGather, "ring", unrooted(RingAllGather), func(n int) int { return n - 1 }, func(n int) int { return n }, true},
		{"allgather/recursive_doubling", ten.AllGather, "recursive_doubling", unrooted(RecursiveDoublingAllGather), ceilLog2, func(int) int { return 1 }, false},
		{"reducescatter/ring", ten.ReduceScatter, "ring", unrooted(RingReduceScatter), func(n int) int { return n - 1 }, func(n int) int { return n }, true},
		{"broadcast/tree", ten.Broadcast, "tree", TreeBroadcast, ceilLog2, func(int) int { return 1 }, false},
		{"reduce/tree", ten.Reduce, "tree", TreeReduce, ceilLog2, func(int) int { return 1 }, false},
		{"broadcast/binomial", ten.Broadcast, "binomial", BinomialBroadcast, ceilLog2, func(int) int { return 1 }, false},
		{"reduce/binomial", ten.Reduce, "binomial", BinomialReduce, ceilLog2, func(int) int { return 1 }, false},
	}
}

// roots lists the roots to try: 0, N-1 and a middle one for rooted ops,
// -1 otherwise.
func roots(op ten.Op, n int) []int {
	if !op.Rooted() {
		return []int{-1}
	}
	rs := []int{0, n - 1}
	if mid := n / 2; mid != 0 && mid != n-1 {
		rs = append(rs, mid)
	}
	return rs
}

// structure checks what does not need a simulation: header, step and
// chunk counts, exact preallocation, step order, one share per chunk
// (except allgather), and per-step degrees where the algorithm fixes them.
func structure(g generator, p *ten.Pattern, n, root int) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if p.Op != g.op || p.Algo != g.algo || p.Ranks != n || p.Root != root {
		return fmt.Errorf("header %v/%s ranks %d root %d, want %v/%s %d %d", p.Op, p.Algo, p.Ranks, p.Root, g.op, g.algo, n, root)
	}
	if got, want := p.Steps(), g.steps(n); got != want {
		return fmt.Errorf("%d steps, want %d", got, want)
	}
	if got, want := p.Chunks(), g.chunks(n); got != want {
		return fmt.Errorf("%d chunks, want %d", got, want)
	}
	if want := flowCount(g.op, g.algo, n); len(p.Flows) != want || cap(p.Flows) != want {
		return fmt.Errorf("%d flows (cap %d), want exactly %d preallocated", len(p.Flows), cap(p.Flows), want)
	}
	if !slices.IsSortedFunc(p.Flows, func(a, b ten.Flow) int { return int(a.Step - b.Step) }) {
		return fmt.Errorf("flows not in step order")
	}
	if g.op != ten.AllGather {
		share := make(map[int32]float64)
		for i, f := range p.Flows {
			if s, ok := share[f.Chunk]; ok && s != f.Fraction {
				return fmt.Errorf("flow %d: fraction %v, chunk %d carries %v", i, f.Fraction, f.Chunk, s)
			}
			share[f.Chunk] = f.Fraction
		}
	}
	if g.onePeer {
		steps := p.Steps()
		to := make([]int32, (steps+1)*n)
		from := make([]int32, (steps+1)*n)
		for i := range to {
			to[i], from[i] = -1, -1
		}
		for i, f := range p.Flows {
			k := int(f.Step)*n + int(f.Src)
			if to[k] >= 0 && to[k] != f.Dst {
				return fmt.Errorf("flow %d: rank %d sends to %d and %d at step %d", i, f.Src, to[k], f.Dst, f.Step)
			}
			to[k] = f.Dst
			k = int(f.Step)*n + int(f.Dst)
			if from[k] >= 0 && from[k] != f.Src {
				return fmt.Errorf("flow %d: rank %d receives from %d and %d at step %d", i, f.Dst, from[k], f.Src, f.Step)
			}
			from[k] = f.Src
		}
	}
	return nil
}

func TestGeneratorsAreCorrect(t *testing.T) {
	for _, g := range generators() {
		t.Run(g.name, func(t *testing.T) {
			for n := 2; n <= 130; n++ {
				for _, root := range roots(g.op, n) {
					p := g.make(n, root)
					if err := structure(g, p, n, root); err != nil {
						t.Fatalf("N=%d root=%d: %v", n, root, err)
					}
					if err := semantics.Check(p); err != nil {
						t.Fatalf("N=%d root=%d: semantics.Check: %v", n, root, err)
					}
					if n <= 40 {
						if err := meaning(p, p.Chunks()); err != nil {
							t.Fatalf("N=%d root=%d: reference simulation: %v", n, root, err)
						}
					}
				}
			}
		})
	}
}

// TestStepCounts pins step counts by hand, apart from the closed forms the
// table uses.
func TestStepCounts(t *testing.T) {
	tests := []struct {
		p     *ten.Pattern
		steps int
	}{
		{TreeAllReduce(2), 2},
		{TreeAllReduce(3), 4},
		{TreeAllReduce(5), 6},
		{TreeAllReduce(14), 8},
		{TreeAllReduce(16), 8}, // paper §4.3: four reduce steps, four broadcast
		{TreeAllReduce(17), 10},
		{RingAllReduce(2), 2},
		{RingAllReduce(8), 14},
		{HalvingDoublingAllReduce(8), 6},
		{HalvingDoublingAllReduce(12), 8}, // fold, 3 + 3, unfold
		{RingAllGather(7), 6},
		{RecursiveDoublingAllGather(8), 3},
		{RecursiveDoublingAllGather(12), 4},
		{RecursiveDoublingAllGather(17), 5},
		{RingReduceScatter(6), 5},
		{TreeBroadcast(16, 5), 4},
		{TreeReduce(13, 12), 4},
	}
	for _, tt := range tests {
		if got := tt.p.Steps(); got != tt.steps {
			t.Errorf("%v/%s N=%d: %d steps, want %d", tt.p.Op, tt.p.Algo, tt.p.Ranks, got, tt.steps)
		}
	}
}

func TestTreeAllReduceSchedule(t *testing.T) {
	for n := 2; n <= 64; n++ {
		p := TreeAllReduce(n)
		trees := DoubleBinaryTree(n)
		h := int32(ceilLog2(n))
		for tr := range trees {
			depth, height, _ := trees[tr].levels()
			up := make(map[[2]int32]int32)   // (src, dst) -> step of the reduce
			down := make(map[[2]int32]int32) // (src, dst) -> step of the copy
			for _, f := range p.Flows {
				if int(f.Chunk) != tr {
					continue
				}
				if f.Fraction != 0.5 {
					t.Fatalf("N=%d: fraction %v", n, f.Fraction)
				}
				if f.Kind == ten.KindReduce {
					up[[2]int32{f.Src, f.Dst}] = f.Step
				} else {
					down[[2]int32{f.Src, f.Dst}] = f.Step
				}
			}
			if len(up) != n-1 || len(down) != n-1 {
				t.Fatalf("N=%d tree %d: %d reduce and %d copy edges, want %d each", n, tr, len(up), len(down), n-1)
			}
			for r, par := range trees[tr].Parent {
				if par < 0 {
					continue
				}
				if s, ok := up[[2]int32{int32(r), par}]; !ok || s != height[r] {
					t.Errorf("N=%d tree %d: reduce %d->%d at step %d (present %v), want height %d", n, tr, r, par, s, ok, height[r])
				}
				if s, ok := down[[2]int32{par, int32(r)}]; !ok || s != h+depth[r] {
					t.Errorf("N=%d tree %d: copy %d->%d at step %d (present %v), want %d", n, tr, par, r, s, ok, h+depth[r])
				}
			}
		}
	}
}

// TestRingOrder pins the ring's chunk order: chunk c completes at rank c
// after the reduce-scatter, and the allgather starts from there.
func TestRingOrder(t *testing.T) {
	for _, n := range []int{2, 3, 5, 8, 13} {
		for _, p := range []*ten.Pattern{RingReduceScatter(n), RingAllReduce(n)} {
			for _, f := range p.Flows {
				if int(f.Dst) != (int(f.Src)+1)%n {
					t.Fatalf("%v N=%d: flow %d->%d is not to the ring successor", p.Op, n, f.Src, f.Dst)
				}
				if want := ((int(f.Src)-int(f.Step))%n + n) % n; int(f.Chunk) != want {
					t.Fatalf("%v N=%d: rank %d sends chunk %d at step %d, want %d", p.Op, n, f.Src, f.Chunk, f.Step, want)
				}
				want := ten.KindReduce
				if f.Step >= int32(n) {
					want = ten.KindCopy
				}
				if f.Kind != want {
					t.Fatalf("%v N=%d: step %d is a %v, want %v", p.Op, n, f.Step, f.Kind, want)
				}
			}
		}
		st := simulate(RingReduceScatter(n), n)
		for c := range st {
			if !complete(st[c][c]) {
				t.Errorf("N=%d: chunk %d not complete at rank %d: %v", n, c, c, st[c][c])
			}
		}
		for _, f := range RingAllGather(n).Flows {
			if want := ((int(f.Src)-int(f.Step)+1)%n + n) % n; int(f.Chunk) != want || int(f.Dst) != (int(f.Src)+1)%n {
				t.Fatalf("allgather N=%d: flow %+v, want chunk %d to the successor", n, f, want)
			}
		}
	}
}

// TestRecursiveDoublingAllGatherAdaptation pins the non-power-of-two
// scheme: pairs exchange at step 1, extras never send again and always
// receive what their partner receives.
func TestRecursiveDoublingAllGatherAdaptation(t *testing.T) {
	for _, n := range []int{3, 5, 6, 7, 12, 13, 24, 100} {
		p := RecursiveDoublingAllGather(n)
		P := floorPow2(n)
		into := make(map[[2]int32]int32) // (step, dst) -> src
		for _, f := range p.Flows {
			if f.Src >= int32(P) && f.Step != 1 {
				t.Fatalf("N=%d: extra %d sends at step %d", n, f.Src, f.Step)
			}
			if f.Step == 1 && f.Src%int32(P) != f.Dst%int32(P) {
				t.Fatalf("N=%d: step 1 flow %d->%d is not within a pair", n, f.Src, f.Dst)
			}
			into[[2]int32{f.Step, f.Dst}] = f.Src
		}
		for s := int32(2); s <= int32(p.Steps()); s++ {
			for e := int32(P); e < int32(n); e++ {
				a, okA := into[[2]int32{s, e}]
				b, okB := into[[2]int32{s, e - int32(P)}]
				if !okA || !okB || a != b {
					t.Fatalf("N=%d step %d: extra %d receives from %d (%v), its partner from %d (%v)", n, s, e, a, okA, b, okB)
				}
			}
		}
	}
}

func TestGenerate(t *testing.T) {
	for _, g := range generators() {
		for _, n := range []int{2, 7, 16} {
			for _, root := range roots(g.op, n) {
				p, err := Generate(g.op, g.algo, n, root)
				if err != nil {
					t.Fatalf("Generate(%v, %s, %d, %d): %v", g.op, g.algo, n, root, err)
				}
				if want := g.make(n, root); !reflect.DeepEqual(p, want) {
					t.Errorf("Generate(%v, %s, %d, %d) differs from the generator", g.op, g.algo, n, root)
				}
			}
		}
	}
	errs := []struct {
		op         ten.Op
		algo       string
		ranks      int
		root       int
		wantSubstr string
	}{
		{ten.OpInvalid, "ring", 4, -1, "unknown op"},
		{ten.Op(42), "ring", 4, -1, "unknown op"},
		{ten.AllReduce, "butterfly", 4, -1, `no algorithm "butterfly" for allreduce (want one of tree, ring, halving_doubling)`},
		{ten.Broadcast, "ring", 4, 0, `no algorithm "ring" for broadcast`},
		{ten.ReduceScatter, "tree", 4, -1, `no algorithm "tree" for reducescatter`},
		{ten.AllReduce, "ring", 1, -1, "at least 2 ranks, got 1"},
		{ten.AllGather, "ring", -3, -1, "at least 2 ranks, got -3"},
		{ten.AllReduce, "tree", ten.MaxRanks + 1, -1, "at most"},
		{ten.AllReduce, "ring", 8, 0, "allreduce has no root, want -1, got 0"},
		{ten.AllGather, "recursive_doubling", 8, 3, "has no root"},
		{ten.Broadcast, "tree", 8, -1, "broadcast root -1 out of range [0, 8)"},
		{ten.Reduce, "tree", 8, 8, "reduce root 8 out of range [0, 8)"},
		{ten.AllReduce, "tree", 1 << 20, -1, "at most 1024 ranks"},
		{ten.AllGather, "ring", 1 << 13, -1, "at most 1024 ranks"},
	}
	for _, e := range errs {
		p, err := Generate(e.op, e.algo, e.ranks, e.root)
		if err == nil || !strings.Contains(err.Error(), e.wantSubstr) {
			t.Errorf("Generate(%v, %q, %d, %d) = %v, %v; want error containing %q", e.op, e.algo, e.ranks, e.root, p, err, e.wantSubstr)
		}
		if limit := e.ranks > ten.MaxRanks; errors.Is(err, ten.ErrLimit) != limit {
			t.Errorf("Generate(%v, %q, %d, %d) = %v: errors.Is(ErrLimit) = %v, want %v", e.op, e.algo, e.ranks, e.root, err, !limit, limit)
		}
	}
}

// TestMaxRanksShared: every generator works at ten.MaxRanks and its pattern
// passes the checker; one rank more is refused by both with ten.ErrLimit.
func TestMaxRanksShared(t *testing.T) {
	for _, op := range []ten.Op{ten.AllReduce, ten.AllGather, ten.ReduceScatter, ten.Broadcast, ten.Reduce} {
		root := -1
		if op.Rooted() {
			root = ten.MaxRanks - 1
		}
		for _, algo := range Algos(op) {
			p, err := Generate(op, algo, ten.MaxRanks, root)
			if err != nil {
				t.Fatalf("Generate(%v, %s, MaxRanks): %v", op, algo, err)
			}
			if err := semantics.Check(p); err != nil {
				t.Fatalf("%v %s at MaxRanks fails the checker: %v", op, algo, err)
			}
			if _, err := Generate(op, algo, ten.MaxRanks+1, root); !errors.Is(err, ten.ErrLimit) {
				t.Errorf("Generate(%v, %s, MaxRanks+1) = %v, want ErrLimit", op, algo, err)
			}
			p.Ranks = ten.MaxRanks + 1
			if err := semantics.Check(p); !errors.Is(err, ten.ErrLimit) {
				t.Errorf("Check(%v %s with MaxRanks+1 ranks) = %v, want ErrLimit", op, algo, err)
			}
		}
	}
}

func TestAlgos(t *testing.T) {
	want := map[ten.Op][]string{
		ten.AllReduce:     {"tree", "ring", "halving_doubling"},
		ten.AllGather:     {"ring", "recursive_doubling"},
		ten.ReduceScatter: {"ring"},
		ten.Broadcast:     {"tree", "binomial"},
		ten.Reduce:        {"tree", "binomial"},
		ten.OpInvalid:     nil,
	}
	for op, w := range want {
		if got := Algos(op); !slices.Equal(got, w) {
			t.Errorf("Algos(%v) = %v, want %v", op, got, w)
		}
	}
	Algos(ten.AllReduce)[0] = "mutated"
	if Algos(ten.AllReduce)[0] != "tree" {
		t.Error("Algos returns shared state")
	}
}

func TestGeneratorsPanicOnBadInput(t *testing.T) {
	for _, tt := range []struct {
		name string
		f    func()
	}{
		{"TreeAllReduce(1)", func() { TreeAllReduce(1) }},
		{"RingAllGather(0)", func() { RingAllGather(0) }},
		{"DoubleBinaryTree(1)", func() { DoubleBinaryTree(1) }},
		{"TreeBroadcast(4, 4)", func() { TreeBroadcast(4, 4) }},
		{"TreeReduce(4, -1)", func() { TreeReduce(4, -1) }},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s did not panic", tt.name)
				}
			}()
			tt.f()
		}()
	}
}

// FuzzGenerate: whatever the input, Generate either refuses it with an
// error or returns a pattern that passes the checker.
func FuzzGenerate(f *testing.F) {
	f.Add(uint8(ten.AllReduce), "tree", 16, -1)
	f.Add(uint8(ten.AllGather), "recursive_doubling", 13, -1)
	f.Add(uint8(ten.Broadcast), "tree", 7, 6)
	f.Add(uint8(ten.Reduce), "tree", 2, 5)
	f.Add(uint8(0), "ring", 1, 0)
	f.Fuzz(func(t *testing.T, op uint8, algo string, ranks, root int) {
		if ranks > 300 {
			ranks %= 300 // keep the rings small
		}
		p, err := Generate(ten.Op(op), algo, ranks, root)
		if err != nil {
			if p != nil {
				t.Fatalf("pattern and error %v", err)
			}
			return
		}
		if err := semantics.Check(p); err != nil {
			t.Fatalf("Generate(%d, %q, %d, %d) fails the checker: %v", op, algo, ranks, root, err)
		}
	})
}
