package transform

import (
	"sort"

	"github.com/react-torch/react-torch/pkg/ten"
)

// The position-equivalent swaps (③) of a chunk are the pairs of its
// occupied vertices whose PositionSwap keeps the pattern exactly-once
// correct. The paper's brute force (Appendix A.3) checks the whole pattern
// for every pair: O(|V|^2 (|V|+|E|)). The evaluator here decides a pair
// from the part of the chunk between the two vertices' steps, most pairs
// in O(1) from per-vertex tables.
//
// Model. Give every rank a random contribution, hashed as two weighted sums
// modulo 2^61-1 plus a count (val). A chunk's execution is then linear: the
// value of vertex (s, r) is the sum of the values on its in-edges, which are
// the flows into r at step s and the hold edge from (s-1, r), absent when r
// receives a replacing copy at s. Two values are equal exactly when their
// count vectors are, except with probability about 2^-60 per component.
// What semantics.Check asks of a chunk becomes: no self flow; no rank
// written twice at one step with a replacing copy among the writes; no
// empty source, which cannot happen in allreduce, reduce and reducescatter
// (every rank starts with its contribution, adds keep it and copies copy
// a non-empty state); in allgather, each flow's count equal to its
// original one (its fraction is fixed and |count/N - fraction| stays below
// 1e-9 only for that count); and the finals the op requires unchanged (in
// allgather per chunk too: the chunks' finals sum to all blocks once, and
// the other chunks keep theirs).
//
// Forward part. A swap of vertices at steps t <= t' relabels only flows of
// steps t, t+1, t' and t'+1, so every state before step t is unchanged.
// From step t on the evaluator keeps, per rank, the difference between its
// new and its original value, and re-evaluates in step order only the flows
// whose source differs, checking each as above. It stops after step t'.
//
// Closure. After step t' the new pattern equals the original except for
// the flows leaving the two vertices at t'+1. Every path to a final vertex
// crosses step t' once, so with random rank weights rho and beta(v) = sum
// of rho_r times the number of paths from v to (T, r),
//
//	sum_r rho_r F'_r - sum_r rho_r F_r = sum_{v at t'} S'(v) beta'(v) - S(v) beta(v),
//
// where beta' differs from beta only at the two swapped vertices. The finals
// the op requires are unchanged iff this bilinear form vanishes (for random
// rho and hash weights, up to probability 2/p; reduce puts all weight on
// the root); beta is precomputed per vertex as suffix sums over each rank's
// out-flows. For allgather and broadcast every flow's count is pinned
// (allgather: by its fraction; broadcast: a valid broadcast sender holds
// exactly the root's block, as it cannot lose it and must not end with it
// twice), so the counts at every later source must also be unchanged: the
// same form with random weights sigma per source vertex (gamma) checks
// that, and the vertices at t'+1 are checked directly. Reducescatter's
// condition (exactly one complete rank, the owner) is not linear: there the
// forward part runs to the end and checks every final.
//
// Shortcuts, each exact:
//   - Two vertices of one rank: the swap relabels nothing.
//   - A rank's value is final after its last in-flow of the relabelled
//     pattern; the forward part checks x and y there (and any rank it
//     updates at its last in-flow) instead of at the end. When that step is
//     t or earlier the final follows from original states (finalsKnown).
//   - Allgather and broadcast: with pinned counts, a rank's final count is
//     its initial count plus its in-flows' counts, so what x and y gain and
//     lose must balance (countsKept). As an initial count changes by at
//     most one (an allgather origin that moves), only vertices whose
//     in-flows' counts differ by at most one (zero in broadcast) can swap
//     across ranks: Partners and CountAll test no others.
//   - Same step (sameStep): the flows into both vertices read states of step
//     t-1, which are unchanged, so the new states at t and the closure
//     follow from tables.
//   - t < t' (local): when no flow leaving x or y carries a changed value
//     before t', only x and y differ at t', again from tables.
//
// Every pattern built from a swap is still checked by semantics.Check
// before it is used, so a hash collision could at worst propose a swap that
// is then refused, never run one.
//
// Files: positions.go (this comment and the Positions API),
// positions_hash.go (the hashed values), positions_tables.go (a chunk's
// original execution and per-vertex tables), positions_scratch.go (one
// evaluation's state), positions_forward.go (the forward part and the
// closure), positions_shortcuts.go (the exact shortcuts).

// Positions answers which occupied vertices of a chunk a given vertex can be
// swapped with (③). The relation is not an equivalence (in a 12-rank tree,
// a~b and b~c while a and c cannot swap; the tests show it), so there are
// no classes to precompute: Partners tests the vertex against every other
// occupied vertex of its chunk that can qualify, and caches the answer.
// A Positions is not safe for concurrent use.
type Positions struct {
	p      *ten.Pattern
	ix     *ten.ChunkIndex
	cm     *common
	evals  []*chunkEval
	cached map[Vertex][]Vertex
}

// occupied lists the vertices of chunk c that have at least one flow, sorted.
func occupied(p *ten.Pattern, ix *ten.ChunkIndex, c int) []Vertex {
	seen := map[Vertex]bool{}
	var vs []Vertex
	for _, g := range ix.Chunk(c) {
		f := &p.Flows[g]
		for _, v := range [...]Vertex{{int32(c), f.Step - 1, f.Src}, {int32(c), f.Step, f.Dst}} {
			if !seen[v] {
				seen[v] = true
				vs = append(vs, v)
			}
		}
	}
	sort.Slice(vs, func(a, b int) bool {
		if vs[a].Step != vs[b].Step {
			return vs[a].Step < vs[b].Step
		}
		return vs[a].Rank < vs[b].Rank
	})
	return vs
}

// NewPositions prepares the position queries of a pattern that
// semantics.Check accepts. Chunks are indexed lazily, on first query.
func NewPositions(p *ten.Pattern) *Positions {
	ix := ten.NewChunkIndex(p)
	m := 0
	for c := 0; c < ix.Len(); c++ {
		m = max(m, len(ix.Chunk(c)))
	}
	return &Positions{p: p, ix: ix, cm: newCommon(p, weights(p.Ranks), m), evals: make([]*chunkEval, ix.Len()),
		cached: map[Vertex][]Vertex{}}
}

func (ps *Positions) chunk(c int) *chunkEval {
	if ps.evals[c] == nil {
		ps.evals[c] = newChunkEvalIn(ps.p, ps.ix, c, ps.cm)
	}
	return ps.evals[c]
}

// Partners lists the vertices that vertex v can be swapped with (③), in
// step then rank order; nil when v is not an occupied vertex.
func (ps *Positions) Partners(v Vertex) []Vertex {
	if int(v.Chunk) < 0 || int(v.Chunk) >= len(ps.evals) {
		return nil
	}
	if out, ok := ps.cached[v]; ok {
		return out
	}
	e := ps.chunk(int(v.Chunk))
	i := e.index(v)
	if i < 0 {
		return nil
	}
	var idx []int
	e.candidates(i, func(j int) {
		if e.swapIdx(i, j) {
			idx = append(idx, j)
		}
	})
	sort.Ints(idx)
	out := make([]Vertex, len(idx))
	for k, j := range idx {
		out[k] = e.verts[j]
	}
	ps.cached[v] = out
	return out
}

// Occupied lists the occupied vertices of chunk c.
func (ps *Positions) Occupied(c int) []Vertex {
	return ps.chunk(c).verts
}

// CountAll decides every pair of every chunk and returns how many can be
// swapped: the whole relation the brute force computes, for benchmarks.
func (ps *Positions) CountAll() int {
	n := 0
	for c := range ps.evals {
		e := ps.chunk(c)
		if !e.gains {
			for i := range e.verts {
				for j := i + 1; j < len(e.verts); j++ {
					if e.swapIdx(i, j) {
						n++
					}
				}
			}
			continue
		}
		for r := 0; r < e.ranks; r++ { // same-rank pairs relabel nothing
			k := int(e.rvStart[r+1] - e.rvStart[r])
			n += k * (k - 1) / 2
		}
		for p, i := range e.byKI {
			for _, j := range e.byKI[p+1:] {
				if e.vKI[j] > e.vKI[i]+e.kiSlack {
					break
				}
				if e.verts[i].Rank != e.verts[j].Rank && e.swapIdx(int(i), int(j)) {
					n++
				}
			}
		}
	}
	return n
}

// candidates calls fn for every vertex other than i that might be swapped
// with it: all of them, or for allgather and broadcast those that pass
// the count balance of countsKept (a swap of vertices of different ranks
// changes a rank's final count by the difference of the counts flowing
// into the two vertices, which only an origin change of +-1 can offset),
// and the vertices of i's rank.
func (e *chunkEval) candidates(i int, fn func(j int)) {
	if !e.gains {
		for j := range e.verts {
			if j != i {
				fn(j)
			}
		}
		return
	}
	r := e.verts[i].Rank
	for _, j := range e.rvList[e.rvStart[r]:e.rvStart[r+1]] {
		if int(j) != i {
			fn(int(j))
		}
	}
	ki := e.vKI[i]
	lo := sort.Search(len(e.byKI), func(k int) bool { return e.vKI[e.byKI[k]] >= ki-e.kiSlack })
	for _, j := range e.byKI[lo:] {
		if e.vKI[j] > ki+e.kiSlack {
			break
		}
		if e.verts[j].Rank != r {
			fn(int(j))
		}
	}
}
