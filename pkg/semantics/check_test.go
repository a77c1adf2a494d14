package semantics

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/react-torch/react-torch/internal/fixture"
	"github.com/react-torch/react-torch/pkg/ten"
)

// Small patterns built by hand, independent of package pattern (the ring
// allreduce is fixture.RingAllReduce, which critpath's tests use too).

func ringReduceScatter(n int) *ten.Pattern {
	p := fixture.RingAllReduce(n)
	p.Op = ten.ReduceScatter
	p.Flows = p.Flows[:n*(n-1)]
	return p
}

func ringAllGather(n int) *ten.Pattern {
	p := &ten.Pattern{Op: ten.AllGather, Algo: "ring", Ranks: n, Root: -1}
	for s := 1; s <= n-1; s++ {
		for i := 0; i < n; i++ {
			p.Flows = append(p.Flows, ten.Flow{Chunk: int32(((i-s+1)%n + n) % n), Step: int32(s), Src: int32(i), Dst: int32((i + 1) % n), Kind: ten.KindCopy, Fraction: 1 / float64(n)})
		}
	}
	return p
}

// rdAllGather is recursive doubling for a power of two: one chunk.
func rdAllGather(n int) *ten.Pattern {
	p := &ten.Pattern{Op: ten.AllGather, Algo: "recursive_doubling", Ranks: n, Root: -1}
	for s, d := 1, 1; d < n; s, d = s+1, d*2 {
		for r := 0; r < n; r++ {
			p.Flows = append(p.Flows, ten.Flow{Step: int32(s), Src: int32(r), Dst: int32(r ^ d), Kind: ten.KindCopy, Fraction: float64(d) / float64(n)})
		}
	}
	return p
}

// chain is a broadcast (copy) or reduce down/up the chain root, root+1, ...
func chain(op ten.Op, n, root int) *ten.Pattern {
	p := &ten.Pattern{Op: op, Algo: "chain", Ranks: n, Root: root}
	for s := 1; s < n; s++ {
		a, b := (root+s-1)%n, (root+s)%n
		if op == ten.Broadcast {
			p.Flows = append(p.Flows, ten.Flow{Step: int32(s), Src: int32(a), Dst: int32(b), Kind: ten.KindCopy, Fraction: 1})
		} else {
			// reduce: the far end starts, toward the root
			a, b = (root+n-s)%n, (root+n-s-1)%n
			p.Flows = append(p.Flows, ten.Flow{Step: int32(s), Src: int32(a), Dst: int32(b), Kind: ten.KindReduce, Fraction: 1})
		}
	}
	return p
}

// tree3 is a 3-rank allreduce over two chunks: 1,2 -> 0 and back; 0,2 -> 1 and back.
func tree3() *ten.Pattern {
	f := func(c, s, a, b int, k ten.Kind) ten.Flow {
		return ten.Flow{Chunk: int32(c), Step: int32(s), Src: int32(a), Dst: int32(b), Kind: k, Fraction: .5}
	}
	R, C := ten.KindReduce, ten.KindCopy
	return &ten.Pattern{Op: ten.AllReduce, Algo: "tree", Ranks: 3, Root: -1, Flows: []ten.Flow{
		f(0, 1, 1, 0, R), f(0, 1, 2, 0, R), f(1, 1, 0, 1, R), f(1, 1, 2, 1, R),
		f(0, 2, 0, 1, C), f(0, 2, 0, 2, C), f(1, 2, 1, 0, C), f(1, 2, 1, 2, C),
	}}
}

func validPatterns() map[string]*ten.Pattern {
	m := map[string]*ten.Pattern{"tree3": tree3()}
	for _, n := range []int{2, 3, 4, 5, 8, 13} {
		m["ring-ar-"+itoa(n)] = fixture.RingAllReduce(n)
		m["ring-rs-"+itoa(n)] = ringReduceScatter(n)
		m["ring-ag-"+itoa(n)] = ringAllGather(n)
		m["bcast-"+itoa(n)] = chain(ten.Broadcast, n, n/2)
		m["reduce-"+itoa(n)] = chain(ten.Reduce, n, n-1)
	}
	for _, n := range []int{2, 4, 8, 16, 64, 128} {
		m["rd-ag-"+itoa(n)] = rdAllGather(n)
	}
	m["ring-ar-130"] = fixture.RingAllReduce(130)
	return m
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestValidPatternsPass(t *testing.T) {
	for name, p := range validPatterns() {
		t.Run(name, func(t *testing.T) {
			if err := Check(p); err != nil {
				t.Fatalf("Check: %v", err)
			}
			if p.Ranks <= 16 {
				if pr := referenceCheck(p); pr != 0 {
					t.Fatalf("reference: %v", pr)
				}
			}
		})
	}
}

func TestViolations(t *testing.T) {
	tests := []struct {
		name    string
		build   func() *ten.Pattern
		problem Problem
		msg     string
	}{
		{"dropped reduce", func() *ten.Pattern { p := fixture.RingAllReduce(4); p.Flows = p.Flows[1:]; return p }, Missing, "missing"},
		{"duplicated reduce", func() *ten.Pattern {
			p := fixture.RingAllReduce(4)
			p.Flows = append(p.Flows, p.Flows[0])
			return p
		}, Twice, "counted twice"},
		{"copy turned into reduce", func() *ten.Pattern {
			p := tree3()
			p.Flows[4].Kind = ten.KindReduce
			return p
		}, Twice, "chunk 0, rank 1: contribution of rank 1 counted twice"},
		{"swapped destinations", func() *ten.Pattern {
			p := tree3()
			p.Flows[1].Dst, p.Flows[3].Dst = p.Flows[3].Dst, p.Flows[1].Dst
			return p
		}, Missing, "chunk 0, rank 0: contribution of rank 2 missing"},
		{"two copies into one rank", func() *ten.Pattern {
			p := tree3()
			p.Flows[7].Dst, p.Flows[7].Chunk, p.Flows[7].Src = 1, 0, 2
			return p
		}, Conflict, "conflicting writes"},
		{"broadcast delivered twice", func() *ten.Pattern {
			p := chain(ten.Broadcast, 3, 0)
			p.Flows = append(p.Flows, ten.Flow{Step: 3, Src: 0, Dst: 2, Kind: ten.KindCopy, Fraction: 1})
			return p
		}, Twice, "block of rank 0 counted twice"},
		{"empty flow", func() *ten.Pattern {
			p := chain(ten.Broadcast, 3, 0)
			p.Flows[1].Step = 1 // 1 -> 2 at step 1, before 1 has the data
			return p
		}, Empty, "empty flow"},
		{"allgather wrong fraction", func() *ten.Pattern {
			p := rdAllGather(4)
			p.Flows[len(p.Flows)-1].Fraction = .25
			return p
		}, Share, "holds 2 of 4 blocks"},
		{"chunk shares", func() *ten.Pattern {
			p := fixture.RingAllReduce(3)
			for i := range p.Flows {
				p.Flows[i].Fraction = .5
			}
			return p
		}, Share, "sum to"},
		{"reduce in allgather", func() *ten.Pattern {
			p := ringAllGather(3)
			p.Flows[0].Kind = ten.KindReduce
			return p
		}, BadKind, "only moves data"},
		{"reducescatter owner twice", func() *ten.Pattern {
			// ring allreduce's first copy step hands chunk i to i+1 complete
			p := fixture.RingAllReduce(3)
			p.Op = ten.ReduceScatter
			p.Flows = p.Flows[:3*3]
			return p
		}, Owner, "complete at ranks"},
		{"reduce misses a leaf", func() *ten.Pattern { p := chain(ten.Reduce, 4, 0); p.Flows = p.Flows[1:]; return p }, Missing, "rank 0: contribution of rank 3 missing"},
		{"allgather misses a block", func() *ten.Pattern {
			p := ringAllGather(4)
			p.Flows = p.Flows[:len(p.Flows)-1]
			return p
		}, Missing, "missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.build()
			err := Check(p)
			var v *Violation
			if !errors.As(err, &v) {
				t.Fatalf("Check = %v, want a *Violation", err)
			}
			if v.Problem != tt.problem {
				t.Errorf("problem = %v, want %v (%v)", v.Problem, tt.problem, err)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not contain %q", err, tt.msg)
			}
			if !strings.HasPrefix(err.Error(), p.Op.String()+": ") {
				t.Errorf("error %q does not name the op", err)
			}
			if pr := referenceCheck(p); pr != tt.problem {
				t.Errorf("reference says %v, want %v", pr, tt.problem)
			}
		})
	}
}

func TestMalformedIsStructuralError(t *testing.T) {
	p := fixture.RingAllReduce(3)
	p.Flows[0].Dst = 7
	var e *ten.Error
	if err := Check(p); !errors.As(err, &e) {
		t.Fatalf("Check = %v, want *ten.Error", err)
	}
}

// TestAgreesWithReference mutates valid patterns at random and requires the
// bit-set checker and the plain count vectors to agree on every verdict.
func TestAgreesWithReference(t *testing.T) {
	var bases []*ten.Pattern
	for name, p := range validPatterns() {
		if p.Ranks <= 16 {
			_ = name
			bases = append(bases, p)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	seen := map[Problem]int{}
	for iter := 0; iter < 4000; iter++ {
		base := bases[rng.IntN(len(bases))]
		p := base.Clone()
		for m := 1 + rng.IntN(2); m > 0; m-- {
			mutate(rng, p)
		}
		got := Problem(0)
		if err := Check(p); err != nil {
			var v *Violation
			if errors.As(err, &v) {
				got = v.Problem
			} else {
				got = Malformed
			}
		}
		want := referenceCheck(p)
		seen[want]++
		if got != want {
			t.Fatalf("iteration %d: Check says %v, reference says %v, pattern %+v", iter, got, want, p)
		}
	}
	for _, pr := range []Problem{0, Missing, Twice, Empty, Conflict} {
		if seen[pr] == 0 {
			t.Errorf("no mutation produced %v; the test is too weak", pr)
		}
	}
}

func mutate(rng *rand.Rand, p *ten.Pattern) {
	if len(p.Flows) == 0 {
		return
	}
	i := rng.IntN(len(p.Flows))
	f := &p.Flows[i]
	switch rng.IntN(6) {
	case 0:
		p.Flows = append(p.Flows[:i], p.Flows[i+1:]...)
	case 1:
		p.Flows = append(p.Flows, *f)
	case 2:
		if f.Kind == ten.KindCopy {
			f.Kind = ten.KindReduce
		} else {
			f.Kind = ten.KindCopy
		}
	case 3:
		j := rng.IntN(len(p.Flows))
		f.Dst, p.Flows[j].Dst = p.Flows[j].Dst, f.Dst
	case 4:
		f.Src = int32(rng.IntN(p.Ranks))
	case 5:
		f.Step += int32(rng.IntN(3)) - 1
	}
}

func BenchmarkCheck(b *testing.B) {
	for _, bc := range []struct {
		name string
		p    *ten.Pattern
	}{
		{"ring-allreduce-1024", fixture.RingAllReduce(1024)},
		{"rd-allgather-1024", rdAllGather(1024)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := Check(bc.p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
