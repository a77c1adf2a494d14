package tuner

import (
	"slices"
	"testing"

	"github.com/react-torch/react-torch/internal/fixture"
	"github.com/react-torch/react-torch/pkg/critpath"
	"github.com/react-torch/react-torch/pkg/detect"
	"github.com/react-torch/react-torch/pkg/pattern"
	"github.com/react-torch/react-torch/pkg/semantics"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/react-torch/react-torch/pkg/transform"
)

// synthFCT is fixture.FCTs under slow, with a small deterministic jitter
// that varies with the epoch e.
func synthFCT(p *ten.Pattern, slow fixture.Factor, bytes float64, e int) []float64 {
	return fixture.FCTs(p, bytes, func(i int, f ten.Flow) float64 {
		return slow(i, f) * (1 + 0.001*float64((i+e)%3))
	})
}

// helpingKinds feeds one batch of synthetic FCTs and reports which transform
// kinds have at least one viable candidate, for a congested vertex on a
// critical path, that really makes the collective at least 5% faster under
// the same physical congestion (slow is a function of the flow's endpoints,
// so it follows the ranks a swap moves). The model's opinion is not asked:
// where it is wrong (it cannot tell a rank's own link from one path when a
// rank has one peer, as in a ring) the revert check of §5.4.2 undoes the
// change after one batch.
func helpingKinds(t *testing.T, p *ten.Pattern, slow fixture.Factor) map[transform.Kind]bool {
	t.Helper()
	const bytes = 20e6
	cfg := DefaultConfig()
	cfg.Model = ModelPaper
	tuner, err := New(cfg, p, bytes)
	if err != nil {
		t.Fatal(err)
	}
	tu := tuner.loop.(*paperLoop)
	deg := ten.NewDegrees(p)
	for e := 0; e < tu.cfg.B; e++ {
		fct := synthFCT(p, slow, bytes, e)
		if err := tu.hist.Observe(e, p, deg, fct, bytes); err != nil {
			t.Fatal(err)
		}
		tu.batch = append(tu.batch, fct)
	}
	rep, err := detect.Detect(p, deg, tu.batch, bytes, detect.DefaultConfig())
	if err != nil || !rep.Congested() {
		t.Fatalf("nothing detected (%v)", err)
	}
	dag := critpath.New(p)
	var paths [][]int32
	for _, fct := range tu.batch {
		_, path := dag.Critical(fct)
		paths = append(paths, path)
	}
	g := tu.evaluate(p, deg, paths)
	onPath := map[transform.Vertex]bool{}
	for _, path := range paths {
		for _, i := range path {
			f := p.Flows[i]
			onPath[transform.Vertex{Chunk: f.Chunk, Step: f.Step - 1, Rank: f.Src}] = true
			onPath[transform.Vertex{Chunk: f.Chunk, Step: f.Step, Rank: f.Dst}] = true
		}
	}
	dirs := make([]transform.Dir, p.Ranks)
	for i, c := range rep.Class {
		if c != detect.None {
			dirs[p.Flows[i].Src] |= transform.Out
			dirs[p.Flows[i].Dst] |= transform.In
		}
	}
	helps := map[transform.Kind]bool{}
	positions := transform.NewPositions(p)
	for _, v := range rep.Vertices {
		x := transform.Vertex{Chunk: v.Chunk, Step: v.Step, Rank: v.Rank}
		if !onPath[x] {
			continue
		}
		for _, c := range tu.candidates(g, positions, x, dirs[x.Rank], map[int32]bool{}) {
			if helps[c.swap.Kind] {
				continue
			}
			q := transform.Apply(p, c.swap)
			if semantics.Check(q) != nil {
				continue
			}
			before := critpath.New(p).Finish(synthFCT(p, slow, bytes, 0), make([]float64, len(p.Flows)))
			after := critpath.New(q).Finish(synthFCT(q, slow, bytes, 0), make([]float64, len(q.Flows)))
			if before >= 1.05*after {
				helps[c.swap.Kind] = true
			}
		}
	}
	return helps
}

// TestTable1 is Table 1 of the paper: which transforms can help which
// pattern, for congestion on one path between two ranks ("spine": the pair
// is slow, other paths of the same ranks are not) and on one rank's own
// link ("server-ToR": every flow into the rank is slow).
func TestTable1(t *testing.T) {
	G, C, P := transform.Global, transform.ChunkLocal, transform.Position
	tests := []struct {
		name string
		p    *ten.Pattern
		slow fixture.Factor
		want []transform.Kind
	}{
		{"ring, spine", pattern.RingAllReduce(6), fixture.Pair(0, 1, 3), []transform.Kind{G}},
		{"ring, server-ToR", pattern.RingAllReduce(6), fixture.Into(1, 3), nil},
		{"recursive doubling, spine", pattern.RecursiveDoublingAllGather(8), fixture.Pair(0, 1, 3), []transform.Kind{G, P}},
		{"tree, spine", pattern.TreeAllReduce(16), fixture.Pair(1, 3, 3), []transform.Kind{G, C, P}},
		// The paper marks ① as no help here because "the overall degree of
		// node 3 remains the same". That holds between ranks of equal total
		// degree only: NCCL's roots have one child, so a global swap that
		// makes 3 the root of tree 0 cuts its in-flows from 4 to 2 and helps.
		{"tree, server-ToR", pattern.TreeAllReduce(16), fixture.Into(3, 3), []transform.Kind{G, C, P}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := helpingKinds(t, tt.p, tt.slow)
			var kinds []transform.Kind
			for k := range got {
				kinds = append(kinds, k)
			}
			slices.Sort(kinds)
			slices.Sort(tt.want)
			if !slices.Equal(kinds, tt.want) {
				t.Errorf("helping kinds %v, want %v", kinds, tt.want)
			}
		})
	}
}
