package transform

import (
	"math/rand/v2"
	"sort"

	"github.com/react-torch/react-torch/pkg/ten"
)

// The position-equivalent swaps (③) of a chunk are the pairs of its
// occupied vertices whose PositionSwap keeps the pattern exactly-once
// correct. The paper's brute force (Appendix A.3) checks the whole pattern
// for every pair: O(|V|^2 (|V|+|E|)). The evaluator here decides one pair
// in time proportional to the part of the chunk the swap disturbs: it keeps
// every flow's original value as a pair of random weighted sums modulo
// 2^61-1 and re-evaluates only flows whose source's history changed, in
// step order. A correct swap's disturbance cancels where the displaced
// paths meet (in a tree, at their lowest common ancestor), so it stops early.
//
// Values are linear in the contributions, so two values are equal exactly
// when their count vectors are, except with probability about 2^-122 per
// comparison; every pattern built from a swap is still checked by
// semantics.Check before it is used, so a hash collision could at worst
// propose a swap that is then refused, never run one.

const prime = 1<<61 - 1

type val struct {
	h1, h2 uint64
	cnt    int64 // number of contributions held, counted with multiplicity
}

func (a val) add(b val) val {
	a.h1 += b.h1
	if a.h1 >= prime {
		a.h1 -= prime
	}
	a.h2 += b.h2
	if a.h2 >= prime {
		a.h2 -= prime
	}
	a.cnt += b.cnt
	return a
}

// chunkEval holds one chunk's original execution, in local flow indexes.
type chunkEval struct {
	op       ten.Op
	ranks    int
	root     int32
	chunk    int32
	steps    int32
	global   []int32 // local -> pattern flow index
	src, dst []int32
	step     []int32
	replace  []bool
	frac     []float64
	// per rank CSR, flows in step order
	inStart, inList   []int32
	outStart, outList []int32
	weight            []val // per rank, its contribution
	origVal           []val // per flow
	origFinal         []val // per rank
	target            val   // a complete value (all contributions once)
	owner             int32 // reducescatter: the rank where the chunk completes

	// scratch for one evaluation
	rpos    []int32 // local flow -> index in changed+1, 0 if unchanged
	cSrc    []int32
	cDst    []int32
	changed []int32
	newVal  map[int32]val
	queued  map[int32]bool
	affect  map[int32]bool
	initOf  map[int32]val
	heap    []int64
}

func newChunkEval(p *ten.Pattern, ix *ten.ChunkIndex, c int, weight []val) *chunkEval {
	fl := ix.Chunk(c)
	m := len(fl)
	e := &chunkEval{op: p.Op, ranks: p.Ranks, root: int32(p.Root), chunk: int32(c), global: fl,
		src: make([]int32, m), dst: make([]int32, m), step: make([]int32, m), replace: make([]bool, m), frac: make([]float64, m),
		weight: weight, rpos: make([]int32, m), owner: -1}
	gains := p.Op == ten.AllGather || p.Op == ten.Broadcast
	for i, g := range fl {
		f := &p.Flows[g]
		e.src[i], e.dst[i], e.step[i], e.frac[i] = f.Src, f.Dst, f.Step, f.Fraction
		e.replace[i] = f.Kind == ten.KindCopy && !gains
		e.steps = max(e.steps, f.Step)
	}
	e.inStart, e.inList = csr(p.Ranks, e.dst)
	e.outStart, e.outList = csr(p.Ranks, e.src)
	for r := 0; r < p.Ranks; r++ {
		e.target = e.target.add(weight[r])
	}
	if p.Op == ten.Broadcast {
		e.target = weight[p.Root]
	}
	e.origVal = make([]val, m)
	e.origFinal = make([]val, p.Ranks)
	e.resetScratch()
	for i := range fl {
		e.origVal[i] = e.state(e.src[i], e.step[i]-1)
	}
	for r := 0; r < p.Ranks; r++ {
		e.origFinal[r] = e.state(int32(r), e.steps)
		if p.Op == ten.ReduceScatter && e.origFinal[r] == e.target {
			e.owner = int32(r)
		}
	}
	return e
}

func csr(n int, key []int32) (start, list []int32) {
	start = make([]int32, n+1)
	for _, k := range key {
		start[k+1]++
	}
	for r := 0; r < n; r++ {
		start[r+1] += start[r]
	}
	list = make([]int32, len(key))
	next := append([]int32(nil), start[:n]...)
	for i, k := range key { // local flows are already in step order
		list[next[k]] = int32(i)
		next[k]++
	}
	return start, list
}

func (e *chunkEval) resetScratch() {
	for _, i := range e.changed {
		e.rpos[i] = 0
	}
	e.changed, e.cSrc, e.cDst = e.changed[:0], e.cSrc[:0], e.cDst[:0]
	e.newVal = map[int32]val{}
	e.queued = map[int32]bool{}
	e.affect = map[int32]bool{}
	e.initOf = map[int32]val{}
	e.heap = e.heap[:0]
}

func (e *chunkEval) endpoints(i int32) (src, dst int32) {
	if k := e.rpos[i]; k > 0 {
		return e.cSrc[k-1], e.cDst[k-1]
	}
	return e.src[i], e.dst[i]
}

func (e *chunkEval) value(i int32) val {
	if v, ok := e.newVal[i]; ok {
		return v
	}
	return e.origVal[i]
}

// inFlows calls fn for every flow into r under the current relabeling, in
// step order. Unchanged flows come from the CSR, changed ones from the list.
func (e *chunkEval) inFlows(r int32, fn func(i int32)) {
	lst := e.inList[e.inStart[r]:e.inStart[r+1]]
	var extra []int32
	for k, i := range e.changed {
		if e.cDst[k] == r {
			extra = append(extra, i)
		}
	}
	for k := 1; k < len(extra); k++ { // a handful: insertion sort by step
		for j := k; j > 0 && e.step[extra[j]] < e.step[extra[j-1]]; j-- {
			extra[j], extra[j-1] = extra[j-1], extra[j]
		}
	}
	a, b := 0, 0
	for a < len(lst) || b < len(extra) {
		var i int32
		if b >= len(extra) || (a < len(lst) && e.step[lst[a]] <= e.step[extra[b]]) {
			i = lst[a]
			a++
			if _, d := e.endpoints(i); d != r {
				continue
			}
		} else {
			i = extra[b]
			b++
			if e.rpos[i] > 0 && e.dst[i] == r { // already listed in the CSR
				continue
			}
		}
		fn(i)
	}
}

func (e *chunkEval) outFlows(r int32, fn func(i int32)) {
	for _, i := range e.outList[e.outStart[r]:e.outStart[r+1]] {
		if s, _ := e.endpoints(i); s == r {
			fn(i)
		}
	}
	for k, i := range e.changed {
		if e.cSrc[k] == r && e.src[i] != r {
			fn(i)
		}
	}
}

// initial is rank r's value before step 1 under the current relabeling.
func (e *chunkEval) initial(r int32) val {
	switch e.op {
	case ten.Broadcast:
		if r == e.root {
			return e.weight[r]
		}
		return val{}
	case ten.AllGather:
		if v, ok := e.initOf[r]; ok {
			return v
		}
		send, recv := int32(1<<30), int32(1<<30)
		e.outFlows(r, func(i int32) { send = min(send, e.step[i]) })
		e.inFlows(r, func(i int32) { recv = min(recv, e.step[i]) })
		v := val{}
		if send < 1<<30 && send <= recv {
			v = e.weight[r]
		}
		e.initOf[r] = v
		return v
	}
	return e.weight[r]
}

// state is rank r's value at the end of step s; ok is false when two flows
// of one step write r and one of them replaces.
func (e *chunkEval) state(r, s int32) val {
	v, _ := e.stateOK(r, s)
	return v
}

func (e *chunkEval) stateOK(r, s int32) (val, bool) {
	v := e.initial(r)
	ok := true
	lastStep, lastReplace := int32(-1), false
	e.inFlows(r, func(i int32) {
		if e.step[i] > s {
			return
		}
		if e.step[i] == lastStep && (lastReplace || e.replace[i]) {
			ok = false
		}
		lastStep, lastReplace = e.step[i], e.replace[i]
		if e.replace[i] {
			v = e.value(i)
		} else {
			v = v.add(e.value(i))
		}
	})
	return v, ok
}

func (e *chunkEval) push(i int32) {
	if e.queued[i] {
		return
	}
	e.queued[i] = true
	h := append(e.heap, int64(e.step[i])<<32|int64(i))
	for k := len(h) - 1; k > 0; {
		parent := (k - 1) / 2
		if h[parent] <= h[k] {
			break
		}
		h[parent], h[k] = h[k], h[parent]
		k = parent
	}
	e.heap = h
}

func (e *chunkEval) pop() int32 {
	h := e.heap
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	for k := 0; ; {
		l, r, m := 2*k+1, 2*k+2, k
		if l < n && h[l] < h[m] {
			m = l
		}
		if r < n && h[r] < h[m] {
			m = r
		}
		if m == k {
			break
		}
		h[k], h[m] = h[m], h[k]
		k = m
	}
	e.heap = h
	return int32(top & 0xffffffff)
}

func (e *chunkEval) markAffected(r int32) {
	if e.affect[r] {
		return
	}
	e.affect[r] = true
	e.outFlows(r, e.push)
}

// valid decides whether relabeling the given local flows (new endpoints)
// keeps the chunk exactly-once correct, given that the original is.
func (e *chunkEval) valid(flows, newSrc, newDst []int32) bool {
	defer e.resetScratch()
	for k, i := range flows {
		if newSrc[k] == newDst[k] {
			return false
		}
		if newSrc[k] == e.src[i] && newDst[k] == e.dst[i] {
			continue
		}
		e.changed = append(e.changed, i)
		e.cSrc = append(e.cSrc, newSrc[k])
		e.cDst = append(e.cDst, newDst[k])
		e.rpos[i] = int32(len(e.changed))
	}
	if len(e.changed) == 0 {
		return true
	}
	for k, i := range e.changed {
		for _, r := range [...]int32{e.src[i], e.dst[i], e.cSrc[k], e.cDst[k]} {
			e.markAffected(r)
		}
		e.push(i)
	}
	for len(e.heap) > 0 {
		i := e.pop()
		s, d := e.endpoints(i)
		v, ok := e.stateOK(s, e.step[i]-1)
		if !ok || v.cnt == 0 {
			return false
		}
		if e.op == ten.AllGather && !sameShare(e.frac[i], float64(v.cnt)/float64(e.ranks)) {
			return false
		}
		if e.rpos[i] == 0 && v == e.origVal[i] {
			continue
		}
		e.newVal[i] = v
		e.markAffected(d)
	}
	for r := range e.affect {
		fin, ok := e.stateOK(r, e.steps)
		if !ok {
			return false
		}
		switch e.op {
		case ten.Reduce:
			if r == e.root && fin != e.origFinal[r] {
				return false
			}
		case ten.ReduceScatter:
			if (r == e.owner) != (fin == e.target) {
				return false
			}
		default:
			if fin != e.origFinal[r] {
				return false
			}
		}
	}
	return true
}

func sameShare(a, b float64) bool { d := a - b; return d < 1e-9 && d > -1e-9 }

// Positions answers which occupied vertices of a chunk a given vertex can be
// swapped with (③). The relation is not an equivalence (in a 12-rank tree,
// a~b and b~c while a and c cannot swap; the tests show it), so there are
// no classes to precompute: Partners tests the vertex against every other
// occupied vertex of its chunk with the evaluator, and caches the answer.
// A Positions is not safe for concurrent use.
type Positions struct {
	p      *ten.Pattern
	ix     *ten.ChunkIndex
	w      []val
	evals  []*chunkEval
	verts  [][]Vertex
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

// weights draws each rank's random contribution; the seed is fixed because
// the result must not depend on it.
func weights(n int) []val {
	rng := rand.New(rand.NewPCG(0x5eed, 0x7e11))
	w := make([]val, n)
	for r := range w {
		w[r] = val{rng.Uint64N(prime-1) + 1, rng.Uint64N(prime-1) + 1, 1}
	}
	return w
}

// NewPositions prepares the position queries of a pattern that
// semantics.Check accepts. Chunks are indexed lazily, on first query.
func NewPositions(p *ten.Pattern) *Positions {
	ix := ten.NewChunkIndex(p)
	return &Positions{p: p, ix: ix, w: weights(p.Ranks), evals: make([]*chunkEval, ix.Len()),
		verts: make([][]Vertex, ix.Len()), cached: map[Vertex][]Vertex{}}
}

func (ps *Positions) chunk(c int) (*chunkEval, []Vertex) {
	if ps.evals[c] == nil {
		ps.evals[c] = newChunkEval(ps.p, ps.ix, c, ps.w)
		ps.verts[c] = occupied(ps.p, ps.ix, c)
	}
	return ps.evals[c], ps.verts[c]
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
	e, vs := ps.chunk(int(v.Chunk))
	k := sort.Search(len(vs), func(i int) bool {
		return vs[i].Step > v.Step || (vs[i].Step == v.Step && vs[i].Rank >= v.Rank)
	})
	if k == len(vs) || vs[k] != v {
		return nil
	}
	out := []Vertex{}
	for j, u := range vs {
		if j != k && e.swapValid(v, u) {
			out = append(out, u)
		}
	}
	ps.cached[v] = out
	return out
}

// Occupied lists the occupied vertices of chunk c.
func (ps *Positions) Occupied(c int) []Vertex {
	_, vs := ps.chunk(c)
	return vs
}

// CountAll decides every pair of every chunk and returns how many can be
// swapped: the whole relation the brute force computes, for benchmarks.
func (ps *Positions) CountAll() int {
	n := 0
	for c := range ps.evals {
		e, vs := ps.chunk(c)
		for a := range vs {
			for b := a + 1; b < len(vs); b++ {
				if e.swapValid(vs[a], vs[b]) {
					n++
				}
			}
		}
	}
	return n
}

// swapValid runs the evaluator on a PositionSwap of two vertices of its chunk.
func (e *chunkEval) swapValid(a, b Vertex) bool {
	s := PositionSwap(a, b)
	var fl, ns, nd []int32
	for _, r := range [...]Vertex{a, b} {
		for _, i := range e.inList[e.inStart[r.Rank]:e.inStart[r.Rank+1]] {
			if e.step[i] == r.Step {
				fl = append(fl, i)
			}
		}
		for _, i := range e.outList[e.outStart[r.Rank]:e.outStart[r.Rank+1]] {
			if e.step[i] == r.Step+1 {
				fl = append(fl, i)
			}
		}
	}
	seen := map[int32]bool{}
	for _, i := range fl {
		if seen[i] {
			continue
		}
		seen[i] = true
		f := ten.Flow{Chunk: e.chunk, Step: e.step[i], Src: e.src[i], Dst: e.dst[i]}
		src, dst := s.relabel(&f)
		ns, nd = append(ns, src), append(nd, dst)
	}
	uniq := make([]int32, 0, len(seen))
	for _, i := range fl {
		if seen[i] {
			uniq = append(uniq, i)
			delete(seen, i)
		}
	}
	return e.valid(uniq, ns, nd)
}
