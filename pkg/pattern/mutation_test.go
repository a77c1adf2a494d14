package pattern

import (
	"testing"

	"github.com/react-torch/react-torch/pkg/semantics"
	"github.com/react-torch/react-torch/pkg/ten"
)

// mutation is one way to break a pattern. apply returns the mutated
// patterns with a label each; the generators have no redundant flows, so a
// mutation marked mustHurt has to change the result by the reference
// simulation as well as be rejected by semantics.Check.
type mutation struct {
	name     string
	mustHurt bool
	apply    func(p *ten.Pattern) []*ten.Pattern
}

func without(p *ten.Pattern, i int) *ten.Pattern {
	q := p.Clone()
	q.Flows = append(q.Flows[:i], q.Flows[i+1:]...)
	return q
}

func mutations() []mutation {
	return []mutation{
		{"drop a flow", true, func(p *ten.Pattern) []*ten.Pattern {
			var out []*ten.Pattern
			for i := range p.Flows {
				out = append(out, without(p, i))
			}
			return out
		}},
		// Broadcast and allgather have no reduce flows; there a copy adds
		// to what the destination holds, so duplicating a copy is the same
		// double delivery. In the other ops a duplicated copy rewrites the
		// same value (harmless in effect, a write conflict for the checker),
		// so only reduces are duplicated there.
		{"duplicate a flow", true, func(p *ten.Pattern) []*ten.Pattern {
			want := ten.KindReduce
			if p.Op == ten.AllGather || p.Op == ten.Broadcast {
				want = ten.KindCopy
			}
			var out []*ten.Pattern
			for _, f := range p.Flows {
				if f.Kind == want {
					q := p.Clone()
					q.Flows = append(q.Flows, f)
					out = append(out, q)
				}
			}
			return out
		}},
		// Reduce and reducescatter have no copies to turn; every other
		// copy lands on a rank that already holds something of the chunk.
		{"copy into reduce", true, func(p *ten.Pattern) []*ten.Pattern {
			var out []*ten.Pattern
			for i, f := range p.Flows {
				if f.Kind == ten.KindCopy {
					q := p.Clone()
					q.Flows[i].Kind = ten.KindReduce
					out = append(out, q)
				}
			}
			return out
		}},
		// Some swaps are harmless, and the reference simulation says which:
		// two reduces of one tree level swapped only regroup partial sums
		// (addition commutes, and both destinations pass their sums on
		// later), and two broadcast copies whose sources both hold the final
		// value deliver the same value. Those are skipped; every swap that
		// changes the result must be rejected. Pairs whose swap yields the
		// same flows (one source, chunk and kind) or a self flow are not
		// tried at all.
		{"swap destinations", false, func(p *ten.Pattern) []*ten.Pattern {
			type pair struct{ i, j int }
			var cands []pair
			for i := range p.Flows {
				for j := i + 1; j < len(p.Flows) && p.Flows[j].Step == p.Flows[i].Step; j++ {
					a, b := p.Flows[i], p.Flows[j]
					if a.Dst == b.Dst || a.Src == b.Dst || b.Src == a.Dst {
						continue
					}
					if a.Src == b.Src && a.Chunk == b.Chunk && a.Kind == b.Kind && a.Fraction == b.Fraction {
						continue
					}
					cands = append(cands, pair{i, j})
				}
			}
			stride := max(1, len(cands)/300)
			var out []*ten.Pattern
			for k := 0; k < len(cands); k += stride {
				q := p.Clone()
				i, j := cands[k].i, cands[k].j
				q.Flows[i].Dst, q.Flows[j].Dst = q.Flows[j].Dst, q.Flows[i].Dst
				out = append(out, q)
			}
			return out
		}},
	}
}

func TestMutationsRejected(t *testing.T) {
	for _, g := range generators() {
		t.Run(g.name, func(t *testing.T) {
			tried := make(map[string]int)
			harmful := make(map[string]int)
			for _, n := range []int{2, 3, 5, 8, 13, 16} {
				for _, root := range roots(g.op, n) {
					p := g.make(n, root)
					for _, m := range mutations() {
						for k, q := range m.apply(p) {
							tried[m.name]++
							if err := meaning(q, p.Chunks()); err == nil {
								if m.mustHurt {
									t.Fatalf("N=%d root=%d: %s #%d leaves the result intact", n, root, m.name, k)
								}
								continue
							}
							harmful[m.name]++
							if semantics.Check(q) == nil {
								t.Fatalf("N=%d root=%d: %s #%d breaks the result but semantics.Check accepts it: %+v", n, root, m.name, k, q.Flows)
							}
						}
					}
				}
			}
			for _, m := range mutations() {
				t.Logf("%s: %d tried, %d change the result and were rejected", m.name, tried[m.name], harmful[m.name])
				applies := tried[m.name] > 0
				switch {
				case m.name == "copy into reduce" && (g.op == ten.Reduce || g.op == ten.ReduceScatter):
					applies = false // no copies to turn
				case m.name == "swap destinations" && g.op.Rooted():
					// A step of the single-tree broadcast copies only
					// from holders of the full value, and a step of the
					// single-tree reduce feeds only ranks that pass their
					// sums on later (or the root): no swap changes the
					// result, as the reference confirms swap by swap.
					applies = false
				}
				if applies && harmful[m.name] == 0 {
					t.Errorf("%s: no effective mutation exercised", m.name)
				}
			}
		})
	}
}
