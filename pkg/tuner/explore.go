package tuner

import (
	"cmp"
	"slices"

	"github.com/react-torch/react-torch/pkg/critpath"
	"github.com/react-torch/react-torch/pkg/detect"
	"github.com/react-torch/react-torch/pkg/semantics"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/react-torch/react-torch/pkg/transform"
)

// rankScore sums what detection said about one rank's flows.
type rankScore struct {
	steady, congested int
	dir               transform.Dir
}

// state is one candidate pattern with what the model says of it.
type state struct {
	p        *ten.Pattern
	deg      *ten.Degrees
	dag      *critpath.DAG
	est      []float64
	paths    float64 // mean estimated time over the batch's critical paths
	makespan float64 // estimated time of the whole collective
	prune    *transform.Pruner
}

func (s *state) pruner() *transform.Pruner {
	if s.prune == nil {
		s.prune = transform.NewPruner(s.p, s.deg)
	}
	return s.prune
}

func (t *paperLoop) evaluate(p *ten.Pattern, deg *ten.Degrees, paths [][]int32) *state {
	s := &state{p: p, deg: deg, dag: critpath.New(p), est: make([]float64, len(p.Flows))}
	t.hist.Estimate(p, deg, t.bytes, s.est)
	for _, path := range paths {
		s.paths += critpath.PathLength(path, s.est)
	}
	s.paths /= float64(len(paths))
	s.makespan = s.dag.Finish(s.est, make([]float64, len(p.Flows)))
	return s
}

// explore is Algorithm 1: walk the congested vertices that lie on a
// critical path, most congested first, and try viable swaps in priority
// order until Kt trials or AMax accepted transforms. A swap whose result is
// a pattern of a reverted change (the change itself or one of the patterns
// on the way to it) is passed over: after a revert, REACT "tries new
// transforms" on the older pattern (§5.4.2). It returns the resulting
// pattern (nil when nothing was accepted), every trial and the
// fingerprints of the patterns after each accepted swap.
func (t *paperLoop) explore(rep *detect.Report) (*ten.Pattern, []Trial, []string) {
	cur := t.cur
	paths := t.batchPaths()
	scores := rankScores(cur, rep)
	exclude := map[int32]bool{}
	for r := range scores {
		if rep.SteadyIn[r] || rep.SteadyOut[r] || t.resolved[int32(r)] {
			exclude[int32(r)] = true
		}
	}
	congestedVertex := map[transform.Vertex]bool{}
	for _, v := range rep.Vertices {
		congestedVertex[transform.Vertex{Chunk: v.Chunk, Step: v.Step, Rank: v.Rank}] = true
	}
	X := onPaths(cur, paths, scores, func(v transform.Vertex) bool { return congestedVertex[v] })

	g := t.evaluate(cur, t.deg, paths)
	var positions *transform.Positions
	var trials []Trial
	var steps []string
	u, accepted := 0, 0
	kt := t.cfg.Kt + t.ktBonus
	for len(X) > 0 && u < kt && accepted < t.cfg.AMax {
		x := X[0]
		X = X[1:]
		if positions == nil {
			positions = transform.NewPositions(g.p)
		}
		for _, c := range t.candidates(g, positions, x, scores[x.Rank].dir, exclude) {
			if u >= kt {
				break
			}
			u++
			q := transform.Apply(g.p, c.swap)
			if c.swap.Kind != transform.Position && semantics.Check(q) != nil {
				continue
			}
			var fp string
			if len(t.rejected) > 0 {
				if fp = fingerprint(q); t.rejected[fp] {
					continue
				}
			}
			s := t.evaluate(q, ten.NewDegrees(q), paths)
			tr := Trial{Swap: c.swap, Lowers: c.lowers, Before: g.paths, After: s.paths}
			tr.Accepted = g.paths >= (1+t.cfg.Epsilon)*s.paths && s.makespan <= g.makespan*(1+1e-12)
			trials = append(trials, tr)
			if !tr.Accepted {
				continue
			}
			g = s
			accepted++
			if fp == "" {
				fp = fingerprint(q)
			}
			steps = append(steps, fp)
			positions = nil
			if scores[x.Rank].steady > 0 {
				exclude[x.Rank] = true
				t.resolved[x.Rank] = true
			}
			// X <- critical path of the new pattern under the model, at congested ranks.
			_, path := g.dag.Critical(g.est)
			X = onPaths(g.p, [][]int32{path}, scores, func(v transform.Vertex) bool {
				return scores[v.Rank].congested > 0 && !exclude[v.Rank]
			})
			break
		}
	}
	if accepted == 0 {
		return nil, trials, nil
	}
	return g.p, trials, steps
}

// batchPaths is the batch's critical paths: one per epoch and one on the
// mean FCTs, each once.
func (t *paperLoop) batchPaths() [][]int32 {
	dag := critpath.New(t.cur)
	var paths [][]int32
	meanFCT := make([]float64, len(t.cur.Flows))
	for _, fct := range t.batch {
		for i, v := range fct {
			meanFCT[i] += v / float64(len(t.batch))
		}
	}
	for _, w := range append(slices.Clone(t.batch), meanFCT) {
		_, path := dag.Critical(w)
		if !slices.ContainsFunc(paths, func(q []int32) bool { return slices.Equal(q, path) }) {
			paths = append(paths, path)
		}
	}
	return paths
}

// rankScores sums, per rank, what detection said about its flows.
func rankScores(p *ten.Pattern, rep *detect.Report) []rankScore {
	scores := make([]rankScore, p.Ranks)
	for i, c := range rep.Class {
		if c == detect.None {
			continue
		}
		f := &p.Flows[i]
		for _, r := range [...]int32{f.Src, f.Dst} {
			scores[r].congested++
			if c == detect.Steady {
				scores[r].steady++
			}
		}
		scores[f.Src].dir |= transform.Out
		scores[f.Dst].dir |= transform.In
	}
	return scores
}

// onPaths lists the vertices of p's paths that keep accepts, each once,
// the most congested ranks' first (steady, then any congestion), then in
// (chunk, step, rank) order.
func onPaths(p *ten.Pattern, ps [][]int32, scores []rankScore, keep func(transform.Vertex) bool) []transform.Vertex {
	seen := map[transform.Vertex]bool{}
	var xs []transform.Vertex
	for _, path := range ps {
		for _, i := range path {
			f := &p.Flows[i]
			for _, v := range [...]transform.Vertex{{Chunk: f.Chunk, Step: f.Step - 1, Rank: f.Src}, {Chunk: f.Chunk, Step: f.Step, Rank: f.Dst}} {
				if !seen[v] && keep(v) {
					seen[v] = true
					xs = append(xs, v)
				}
			}
		}
	}
	slices.SortStableFunc(xs, func(a, b transform.Vertex) int {
		sa, sb := scores[a.Rank], scores[b.Rank]
		return cmp.Or(cmp.Compare(sb.steady, sa.steady), cmp.Compare(sb.congested, sa.congested),
			cmp.Compare(a.Chunk, b.Chunk), cmp.Compare(a.Step, b.Step), cmp.Compare(a.Rank, b.Rank))
	})
	return xs
}

type candidate struct {
	swap   transform.Swap
	lowers bool
}

// candidates lists the viable swaps for problem vertex x in priority order:
// swaps that lower x's degree first, and within each half ③ before ② before
// ①; ties are shuffled with the tuner's seeded source. Ranks in exclude are
// never the replacement.
func (t *paperLoop) candidates(g *state, positions *transform.Positions, x transform.Vertex, dir transform.Dir, exclude map[int32]bool) []candidate {
	var buckets [6][]candidate
	pruner := g.pruner()
	add := func(s transform.Swap, y int32) {
		if y == x.Rank || exclude[y] {
			return
		}
		viable, lowers := pruner.Prune(s, x.Rank, dir)
		if !viable {
			return
		}
		k := int(s.Kind) - 1
		if !lowers {
			k += 3
		}
		buckets[k] = append(buckets[k], candidate{s, lowers})
	}
	for _, v := range positions.Partners(x) {
		add(transform.PositionSwap(x, v), v.Rank)
	}
	chunks := g.p.Chunks()
	for y := 0; y < g.p.Ranks; y++ {
		if chunks > 1 { // with one chunk ② is ①
			add(transform.ChunkSwap(int(x.Chunk), int(x.Rank), y), int32(y))
		}
		add(transform.GlobalSwap(int(x.Rank), y), int32(y))
	}
	var out []candidate
	for _, b := range buckets {
		t.rng.Shuffle(len(b), func(i, j int) { b[i], b[j] = b[j], b[i] })
		out = append(out, b...)
	}
	return out
}
