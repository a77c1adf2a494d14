package transform

import (
	"math/bits"
	"math/rand/v2"
	"slices"
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

func (a val) sub(b val) val {
	a.h1 += prime - b.h1
	if a.h1 >= prime {
		a.h1 -= prime
	}
	a.h2 += prime - b.h2
	if a.h2 >= prime {
		a.h2 -= prime
	}
	a.cnt -= b.cnt
	return a
}

func addmod(a, b uint64) uint64 {
	a += b
	if a >= prime {
		a -= prime
	}
	return a
}

func submod(a, b uint64) uint64 { return addmod(a, prime-b) }

func mulmod(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b) // < 2^122, so hi < 2^58
	r := (lo & prime) + (hi<<3 | lo>>61)
	if r >= prime {
		r -= prime
	}
	return r
}

func cntmod(c int64) uint64 {
	if c >= 0 {
		return uint64(c) % prime
	}
	return (prime - uint64(-c)%prime) % prime
}

const never = int32(1 << 30) // a step after every step

// chunkEval holds one chunk's original execution, in local flow indexes
// (the chunk's flows in step order), and the scratch of one evaluation.
type chunkEval struct {
	op     ten.Op
	ranks  int
	root   int32
	chunk  int32
	steps  int32
	gains  bool // copies add (allgather, broadcast): every flow's count is pinned
	linear bool // the closure decides the finals (all ops but reducescatter)
	// forwardOnly decides every pair by propagating to the last step,
	// without the closure and the shortcuts: the tests' reference.
	forwardOnly bool
	src         []int32
	dst         []int32
	step        []int32
	replace     []bool
	// per rank CSR, flows in step order, with each position's step
	inStart, inList, inStep    []int32
	outStart, outList, outStep []int32
	// stAfter[k]: the original state of the rank of in-list position k
	// at the end of that flow's step; nextRep[k]: the first step of a
	// replacing in-flow at position k or later.
	stAfter   []val
	nextRep   []int32
	weight    []val // per rank, its contribution
	init      []val // per rank, its original initial state
	origVal   []val // per flow
	origFinal []val // per rank
	target    val   // a complete value (all contributions once)
	owner     int32 // reducescatter: the rank where the chunk completes

	// Closure projections. rho: per rank. bIn, gIn: per flow, beta and
	// gamma (sources included) at its head. bSuf, gSuf: per out-list
	// position, suffix sums over the rank's out-list of bIn, and of gIn
	// plus sigma (the weight of the source vertex a step group leaves).
	rho1, rho2   []uint64
	bIn1, bIn2   []uint64
	bSuf1, bSuf2 []uint64
	gIn, gSig    []uint64
	gSuf         []uint64

	// Occupied vertices in step then rank order, and per vertex: its
	// in-flows at its step (in-list positions vIn0..vIn1) and out-flows at
	// the next (vOut0..vOut1), its rank's last in-step at another step
	// (-1 if none), the sum of its in-flows' values, whether one replaces,
	// and (allgather, broadcast) their count. rvStart/rvList: vertices per
	// rank; byKI: vertices ordered by count; kiSlack: how far counts of
	// swappable vertices of different ranks may differ.
	verts        []Vertex
	vS, vPrev    []val    // original state at the vertex's step and the one before
	vB1, vB2, vG []uint64 // beta, gamma (strict) at the vertex
	vOB1, vOB2   []uint64 // sums of bIn, gIn over its out-flows
	vOG          []uint64
	vIn0, vIn1   []int32
	vOut0, vOut1 []int32
	vLastExcl    []int32
	vIn          []val
	vRep         []bool
	vKI          []int64
	rvStart      []int32
	rvList       []int32
	byKI         []int32
	kiSlack      int64

	sc *scratch
}

// scratch is one evaluation's state. Entries count only when their
// generation stamp equals gen, so starting an evaluation costs nothing.
type scratch struct {
	gen  uint32
	stop int32 // last step the forward part processes
	// relabelled flows
	fGen       []uint32
	nSrc, nDst []int32
	relab      []int32
	// flows whose value changed
	vGen []uint32
	nVal []val
	// ranks whose state changed: state = original + dlt on [dFrom, resetAt)
	rGen    []uint32
	dlt     []val
	dFrom   []int32
	resetAt []int32
	touched []int32
	// allgather: new initial state of x and y
	iGen  []uint32
	nInit []val
	heap  []uint64
}

// common is what the chunks of one pattern share: the contributions, the
// closure's rank weights and the scratch (one evaluation at a time).
type common struct {
	weight     []val
	rho1, rho2 []uint64
	sc         *scratch
}

func newCommon(p *ten.Pattern, weight []val, maxFlows int) *common {
	n := p.Ranks
	cm := &common{weight: weight, rho1: make([]uint64, n), rho2: make([]uint64, n)}
	rng := rand.New(rand.NewPCG(0xbe7a, 0x6a33a))
	for r := 0; r < n; r++ {
		switch {
		case p.Op == ten.Reduce:
			if r == p.Root { // only the root's final is required
				cm.rho1[r], cm.rho2[r] = 1, 1
			}
		default:
			cm.rho1[r], cm.rho2[r] = rng.Uint64N(prime-1)+1, rng.Uint64N(prime-1)+1
		}
	}
	m := maxFlows
	cm.sc = &scratch{fGen: make([]uint32, m), nSrc: make([]int32, m), nDst: make([]int32, m),
		vGen: make([]uint32, m), nVal: make([]val, m),
		rGen: make([]uint32, n), dlt: make([]val, n), dFrom: make([]int32, n), resetAt: make([]int32, n),
		iGen: make([]uint32, n), nInit: make([]val, n)}
	return cm
}

// newChunkEval prepares chunk c on its own.
func newChunkEval(p *ten.Pattern, ix *ten.ChunkIndex, c int, weight []val) *chunkEval {
	return newChunkEvalIn(p, ix, c, newCommon(p, weight, len(ix.Chunk(c))))
}

func newChunkEvalIn(p *ten.Pattern, ix *ten.ChunkIndex, c int, cm *common) *chunkEval {
	weight := cm.weight
	fl := ix.Chunk(c)
	m, n := len(fl), p.Ranks
	e := &chunkEval{op: p.Op, ranks: n, root: int32(p.Root), chunk: int32(c),
		src: make([]int32, m), dst: make([]int32, m), step: make([]int32, m), replace: make([]bool, m),
		weight: weight, rho1: cm.rho1, rho2: cm.rho2, sc: cm.sc, owner: -1}
	e.gains = p.Op == ten.AllGather || p.Op == ten.Broadcast
	e.linear = p.Op != ten.ReduceScatter
	for i, g := range fl {
		f := &p.Flows[g]
		e.src[i], e.dst[i], e.step[i] = f.Src, f.Dst, f.Step
		e.replace[i] = f.Kind == ten.KindCopy && !e.gains
		e.steps = max(e.steps, f.Step)
	}
	e.inStart, e.inList = csr(n, e.dst)
	e.outStart, e.outList = csr(n, e.src)
	e.inStep, e.outStep = make([]int32, m), make([]int32, m)
	for k := range e.inList {
		e.inStep[k] = e.step[e.inList[k]]
		e.outStep[k] = e.step[e.outList[k]]
	}
	for r := 0; r < n; r++ {
		e.target = e.target.add(weight[r])
	}
	if p.Op == ten.Broadcast {
		e.target = weight[p.Root]
	}
	e.init = make([]val, n)
	for r := 0; r < n; r++ {
		e.init[r] = e.initial(int32(r))
	}
	e.origVal = make([]val, m)
	e.origFinal = make([]val, n)
	e.stAfter = make([]val, m)
	e.nextRep = make([]int32, m)
	// Flows are in step order, so every source state a flow reads is final
	// once the previous step is applied.
	cur := append([]val(nil), e.init...)
	for lo := 0; lo < m; {
		hi := lo
		for hi < m && e.step[hi] == e.step[lo] {
			e.origVal[hi] = cur[e.src[hi]]
			hi++
		}
		for i := lo; i < hi; i++ {
			d := e.dst[i]
			if e.replace[i] {
				cur[d] = e.origVal[i]
			} else {
				cur[d] = cur[d].add(e.origVal[i])
			}
		}
		lo = hi
	}
	for r := 0; r < n; r++ {
		e.origFinal[r] = cur[r]
		if p.Op == ten.ReduceScatter && cur[r] == e.target {
			e.owner = int32(r)
		}
		lo, hi := e.inStart[r], e.inStart[r+1]
		st := e.init[r]
		for k := lo; k < hi; k++ {
			i := e.inList[k]
			if e.replace[i] {
				st = e.origVal[i]
			} else {
				st = st.add(e.origVal[i])
			}
			e.stAfter[k] = st
		}
		for k := hi - 2; k >= lo; k-- { // every flow of a step sees the step's end
			if e.inStep[k] == e.inStep[k+1] {
				e.stAfter[k] = e.stAfter[k+1]
			}
		}
		next := never
		for k := hi - 1; k >= lo; k-- {
			if e.replace[e.inList[k]] {
				next = e.inStep[k]
			}
			e.nextRep[k] = next
		}
	}
	e.projections()
	e.indexVertices(e.occupied())
	return e
}

// occupied lists the chunk's vertices that have a flow, in step then rank
// order (as the package function occupied, without a map).
func (e *chunkEval) occupied() []Vertex {
	n := int64(e.ranks)
	keys := make([]int64, 0, 2*len(e.src))
	for f := range e.src {
		keys = append(keys, int64(e.step[f]-1)*n+int64(e.src[f]), int64(e.step[f])*n+int64(e.dst[f]))
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	vs := make([]Vertex, len(keys))
	for i, k := range keys {
		vs[i] = Vertex{e.chunk, int32(k / n), int32(k % n)}
	}
	return vs
}

func (e *chunkEval) indexVertices(vs []Vertex) {
	nv, n := len(vs), e.ranks
	e.verts = vs
	e.vIn0, e.vIn1, e.vOut0, e.vOut1 = make([]int32, nv), make([]int32, nv), make([]int32, nv), make([]int32, nv)
	e.vLastExcl, e.vIn, e.vRep, e.vKI = make([]int32, nv), make([]val, nv), make([]bool, nv), make([]int64, nv)
	key := make([]int32, nv)
	for i, v := range vs {
		r := v.Rank
		key[i] = r
		e.vIn0[i] = e.lowerIn(r, v.Step)
		k := e.vIn0[i]
		for ; k < e.inStart[r+1] && e.inStep[k] == v.Step; k++ {
			f := e.inList[k]
			e.vIn[i] = e.vIn[i].add(e.origVal[f])
			e.vRep[i] = e.vRep[i] || e.replace[f]
			e.vKI[i] += e.origVal[f].cnt
		}
		e.vIn1[i] = k
		e.vOut0[i] = e.lowerOut(r, v.Step+1)
		k = e.vOut0[i]
		for k < e.outStart[r+1] && e.outStep[k] == v.Step+1 {
			k++
		}
		e.vOut1[i] = k
		e.vLastExcl[i] = -1
		for k := e.inStart[r+1] - 1; k >= e.inStart[r]; k-- {
			if e.inStep[k] != v.Step {
				e.vLastExcl[i] = e.inStep[k]
				break
			}
		}
	}
	e.rvStart, e.rvList = csr(n, key)
	e.vS, e.vPrev = make([]val, nv), make([]val, nv)
	e.vB1, e.vB2, e.vG = make([]uint64, nv), make([]uint64, nv), make([]uint64, nv)
	e.vOB1, e.vOB2, e.vOG = make([]uint64, nv), make([]uint64, nv), make([]uint64, nv)
	for i, v := range vs {
		r := v.Rank
		e.vS[i], e.vPrev[i] = e.origState(r, v.Step), e.origState(r, v.Step-1)
		e.vB1[i], e.vB2[i] = e.betaV(r, v.Step)
		if e.gains {
			e.vG[i] = e.gammaStrict(r, v.Step)
		}
		for _, f := range e.outList[e.vOut0[i]:e.vOut1[i]] {
			e.vOB1[i], e.vOB2[i], e.vOG[i] = addmod(e.vOB1[i], e.bIn1[f]), addmod(e.vOB2[i], e.bIn2[f]), addmod(e.vOG[i], e.gIn[f])
		}
	}
	if e.gains {
		e.kiSlack = 0 // broadcast: the root is every rank's only origin
		if e.op == ten.AllGather {
			e.kiSlack = 1
		}
		e.byKI = make([]int32, nv)
		for i := range e.byKI {
			e.byKI[i] = int32(i)
		}
		sort.SliceStable(e.byKI, func(a, b int) bool { return e.vKI[e.byKI[a]] < e.vKI[e.byKI[b]] })
	}
}

// projections fills the closure's beta and gamma tables, from the last
// step back: a head's projection depends only on later flows.
func (e *chunkEval) projections() {
	m := len(e.src)
	rng := rand.New(rand.NewPCG(0x5167, uint64(e.chunk)))
	draw := func() uint64 { return rng.Uint64N(prime-1) + 1 }
	e.bIn1, e.bIn2, e.gIn = make([]uint64, m), make([]uint64, m), make([]uint64, m)
	e.bSuf1, e.bSuf2, e.gSuf, e.gSig = make([]uint64, m), make([]uint64, m), make([]uint64, m), make([]uint64, m)
	if e.gains {
		for k := range e.outList {
			if q := e.src[e.outList[k]]; k == int(e.outStart[q]) || e.outStep[k-1] != e.outStep[k] {
				e.gSig[k] = draw()
			}
		}
	}
	outPos := make([]int32, m)
	for k, f := range e.outList {
		outPos[f] = int32(k)
	}
	for hi := m; hi > 0; {
		lo := hi - 1
		for lo > 0 && e.step[lo-1] == e.step[hi-1] {
			lo--
		}
		s := e.step[lo]
		for f := lo; f < hi; f++ { // heads read only later steps
			e.bIn1[f], e.bIn2[f] = e.betaV(e.dst[f], s)
			if e.gains {
				e.gIn[f] = e.gammaIncl(e.dst[f], s)
			}
		}
		for f := hi - 1; f >= lo; f-- { // positions of one rank fill from its end
			k := outPos[f]
			b1, b2, g := e.bIn1[f], e.bIn2[f], addmod(e.gIn[f], e.gSig[k])
			if k+1 < e.outStart[e.src[f]+1] {
				b1, b2, g = addmod(b1, e.bSuf1[k+1]), addmod(b2, e.bSuf2[k+1]), addmod(g, e.gSuf[k+1])
			}
			e.bSuf1[k], e.bSuf2[k], e.gSuf[k] = b1, b2, g
		}
		hi = lo
	}
}

// reach is the range of q's out-list positions that vertex (s, q) reaches
// along its hold chain: flows after s up to the next replacing in-flow
// (which cuts the chain); held says whether the chain reaches the end.
func (e *chunkEval) reach(q, s int32) (k1, k2 int32, held bool) {
	nr := e.nextRepAfter(q, s)
	k1, k2 = e.lowerOut(q, s+1), e.outStart[q+1]
	if nr != never {
		k2 = e.lowerOut(q, nr+1)
	}
	return k1, k2, nr == never
}

func sufRange(suf []uint64, k1, k2, end int32) uint64 {
	var a, b uint64
	if k1 < end {
		a = suf[k1]
	}
	if k2 < end {
		b = suf[k2]
	}
	return submod(a, b)
}

// betaV is beta at vertex (s, q): the rho-weighted count of its paths to
// the final vertices, in two independent components.
func (e *chunkEval) betaV(q, s int32) (b1, b2 uint64) {
	k1, k2, held := e.reach(q, s)
	end := e.outStart[q+1]
	b1, b2 = sufRange(e.bSuf1, k1, k2, end), sufRange(e.bSuf2, k1, k2, end)
	if held {
		b1, b2 = addmod(b1, e.rho1[q]), addmod(b2, e.rho2[q])
	}
	return b1, b2
}

// gammaIncl is the sigma-weighted count of the paths from vertex (s, q) to
// source vertices, (s, q) itself included.
func (e *chunkEval) gammaIncl(q, s int32) uint64 {
	k1, k2, _ := e.reach(q, s)
	return sufRange(e.gSuf, k1, k2, e.outStart[q+1])
}

// gammaStrict is gammaIncl without (s, q) itself.
func (e *chunkEval) gammaStrict(q, s int32) uint64 {
	g := e.gammaIncl(q, s)
	if k := e.lowerOut(q, s+1); k < e.outStart[q+1] && e.outStep[k] == s+1 {
		g = submod(g, e.gSig[k])
	}
	return g
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

// initial is rank r's original value before step 1.
func (e *chunkEval) initial(r int32) val {
	switch e.op {
	case ten.Broadcast:
		if r == e.root {
			return e.weight[r]
		}
		return val{}
	case ten.AllGather:
		send, recv := never, never
		if k := e.outStart[r]; k < e.outStart[r+1] {
			send = e.outStep[k]
		}
		if k := e.inStart[r]; k < e.inStart[r+1] {
			recv = e.inStep[k]
		}
		if send < never && send <= recv {
			return e.weight[r]
		}
		return val{}
	}
	return e.weight[r]
}

// lowerIn is the first position of r's in-list whose step is >= s.
func (e *chunkEval) lowerIn(r, s int32) int32 {
	lo, hi := e.inStart[r], e.inStart[r+1]
	for hi-lo > 8 {
		mid := int32(uint32(lo+hi) >> 1)
		if e.inStep[mid] < s {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	for lo < hi && e.inStep[lo] < s {
		lo++
	}
	return lo
}

// lowerOut is the first position of r's out-list whose step is >= s.
func (e *chunkEval) lowerOut(r, s int32) int32 {
	lo, hi := e.outStart[r], e.outStart[r+1]
	for hi-lo > 8 {
		mid := int32(uint32(lo+hi) >> 1)
		if e.outStep[mid] < s {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	for lo < hi && e.outStep[lo] < s {
		lo++
	}
	return lo
}

// origState is rank r's original value at the end of step s.
func (e *chunkEval) origState(r, s int32) val {
	k := e.lowerIn(r, s+1) - 1
	if k < e.inStart[r] {
		return e.init[r]
	}
	return e.stAfter[k]
}

// --- one evaluation ---

func (e *chunkEval) begin() {
	sc := e.sc
	sc.gen++
	if sc.gen == 0 { // wrapped: forget every stamp
		clear(sc.fGen)
		clear(sc.vGen)
		clear(sc.rGen)
		clear(sc.iGen)
		sc.gen = 1
	}
	sc.relab, sc.touched, sc.heap = sc.relab[:0], sc.touched[:0], sc.heap[:0]
}

func (e *chunkEval) relabelled(f int32) bool { return e.sc.fGen[f] == e.sc.gen }

func (e *chunkEval) newSrc(f int32) int32 {
	if e.relabelled(f) {
		return e.sc.nSrc[f]
	}
	return e.src[f]
}

func (e *chunkEval) newDst(f int32) int32 {
	if e.relabelled(f) {
		return e.sc.nDst[f]
	}
	return e.dst[f]
}

func (e *chunkEval) value(f int32) val {
	if e.sc.vGen[f] == e.sc.gen {
		return e.sc.nVal[f]
	}
	return e.origVal[f]
}

// stateNow is rank r's new value at the end of step s, valid once every
// update up to step s is applied.
func (e *chunkEval) stateNow(r, s int32) val {
	v := e.origState(r, s)
	sc := e.sc
	if sc.rGen[r] == sc.gen && s >= sc.dFrom[r] && s < sc.resetAt[r] {
		v = v.add(sc.dlt[r])
	}
	return v
}

// Heap keys: step, then kind: flow evaluations (reads) before rank updates
// (writes) before final checks, then id. Equal keys pop together, which
// deduplicates them.
const (
	kindShift  = 32
	stepShift  = 34
	idMask     = 1<<kindShift - 1
	kindEval   = 0
	kindUpdate = 1
	kindCheck  = 2
)

func evalKey(s, f int32) uint64   { return uint64(s)<<stepShift | uint64(f) }
func updateKey(s, r int32) uint64 { return uint64(s)<<stepShift | kindUpdate<<kindShift | uint64(r) }
func checkKey(s, r int32) uint64  { return uint64(s)<<stepShift | kindCheck<<kindShift | uint64(r) }

func (e *chunkEval) push(k uint64) {
	h := append(e.sc.heap, k)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if h[p] <= h[i] {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
	e.sc.heap = h
}

func (e *chunkEval) pop() uint64 {
	h := e.sc.heap
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && h[l] < h[m] {
			m = l
		}
		if l+1 < n && h[l+1] < h[m] {
			m = l + 1
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	e.sc.heap = h
	return top
}

// finalOK says whether v is an acceptable final value of rank r.
func (e *chunkEval) finalOK(r int32, v val) bool {
	switch e.op {
	case ten.Reduce:
		return r != e.root || v == e.origFinal[r]
	case ten.ReduceScatter:
		return (r == e.owner) == (v == e.target)
	}
	return v == e.origFinal[r]
}

// newLastIn is the last step at which rank r receives after relabelling.
func (e *chunkEval) newLastIn(r int32) int32 {
	last := int32(-1)
	for k := e.inStart[r+1] - 1; k >= e.inStart[r]; k-- {
		if f := e.inList[k]; e.newDst(f) == r {
			last = e.inStep[k]
			break
		}
	}
	for _, f := range e.sc.relab {
		if e.sc.nDst[f] == r && e.dst[f] != r {
			last = max(last, e.step[f])
		}
	}
	return last
}

// newInitial is an allgather rank's initial value after relabelling: it is
// an origin when it sends no later than it first receives.
func (e *chunkEval) newInitial(r int32) val {
	send, recv := never, never
	for k := e.outStart[r]; k < e.outStart[r+1]; k++ {
		if f := e.outList[k]; e.newSrc(f) == r {
			send = e.outStep[k]
			break
		}
	}
	for k := e.inStart[r]; k < e.inStart[r+1]; k++ {
		if f := e.inList[k]; e.newDst(f) == r {
			recv = e.inStep[k]
			break
		}
	}
	for _, f := range e.sc.relab {
		if e.sc.nSrc[f] == r && e.src[f] != r {
			send = min(send, e.step[f])
		}
		if e.sc.nDst[f] == r && e.dst[f] != r {
			recv = min(recv, e.step[f])
		}
	}
	if send < never && send <= recv {
		return e.weight[r]
	}
	return val{}
}

// relabel records the new endpoints of the flows the PositionSwap of
// vertices i and j moves (the rule of Swap.relabel); false if one becomes a
// self flow.
func (e *chunkEval) relabel(i, j int) bool {
	sc := e.sc
	a, b := e.verts[i], e.verts[j]
	x, y := a.Rank, b.Rank
	for _, v := range [2]int{i, j} {
		for _, fl := range [2][]int32{e.inList[e.vIn0[v]:e.vIn1[v]], e.outList[e.vOut0[v]:e.vOut1[v]]} {
			for _, f := range fl {
				if sc.fGen[f] == sc.gen {
					continue
				}
				s, d := e.src[f], e.dst[f]
				switch st := e.step[f]; {
				case st == a.Step && d == x:
					d = y
				case st == b.Step && d == y:
					d = x
				}
				switch st := e.step[f]; {
				case st == a.Step+1 && s == x:
					s = y
				case st == b.Step+1 && s == y:
					s = x
				}
				if s == d {
					return false
				}
				sc.fGen[f], sc.nSrc[f], sc.nDst[f] = sc.gen, s, d
				sc.relab = append(sc.relab, f)
			}
		}
	}
	return true
}

// index is the position of occupied vertex v in e.verts, or -1.
func (e *chunkEval) index(v Vertex) int {
	vs := e.verts
	k := sort.Search(len(vs), func(i int) bool {
		return vs[i].Step > v.Step || (vs[i].Step == v.Step && vs[i].Rank >= v.Rank)
	})
	if k == len(vs) || vs[k] != v {
		return -1
	}
	return k
}

// swapValid decides whether the PositionSwap of two occupied vertices of
// the chunk keeps it exactly-once correct, given that the original is.
func (e *chunkEval) swapValid(a, b Vertex) bool {
	i, j := e.index(a), e.index(b)
	if i < 0 || j < 0 {
		return false
	}
	return e.swapIdx(i, j)
}

// swapIdx is swapValid for vertices e.verts[i] and e.verts[j]: the O(1)
// paths first, then the forward part and the closure.
func (e *chunkEval) swapIdx(i, j int) bool {
	if e.verts[i].Rank == e.verts[j].Rank { // relabels nothing
		return true
	}
	if e.verts[i].Step > e.verts[j].Step { // the swap is symmetric
		i, j = j, i
	}
	a, b := e.verts[i], e.verts[j]
	x, y := a.Rank, b.Rank
	if !e.forwardOnly && e.linear {
		if a.Step == b.Step && e.originsKept(i, j) {
			return e.sameStep(i, j)
		}
		if e.op != ten.AllGather && a.Step < b.Step {
			if !e.finalsKnown(i, j) {
				return false
			}
			if valid, decided := e.local(i, j); decided {
				return valid
			}
		}
	}
	e.begin()
	if !e.relabel(i, j) {
		return false
	}
	sc := e.sc
	sc.stop = never
	if e.linear && !e.forwardOnly {
		sc.stop = b.Step
	}
	initChanged := false
	if e.op == ten.AllGather {
		for _, r := range [2]int32{x, y} {
			if v := e.newInitial(r); v != e.init[r] {
				sc.iGen[r], sc.nInit[r] = sc.gen, v
				initChanged = true
			}
		}
	}
	if e.gains && !e.forwardOnly && !e.countsKept(x, y) {
		return false
	}
	if initChanged {
		for _, r := range [2]int32{x, y} {
			if sc.iGen[r] == sc.gen {
				e.push(updateKey(0, r))
			}
		}
	}
	// After its last in-flow a rank's value is final; check x and y there
	// rather than at the end.
	for _, r := range [2]int32{x, y} {
		if l := e.newLastIn(r); l < sc.stop {
			e.push(checkKey(max(l, 0), r))
		}
	}
	for _, f := range sc.relab {
		s := e.step[f]
		if s > sc.stop {
			continue
		}
		e.push(evalKey(s, f))
		if nd := sc.nDst[f]; nd != e.dst[f] {
			e.push(updateKey(s, nd))
			e.push(updateKey(s, e.dst[f]))
		}
	}
	last := ^uint64(0)
	for len(sc.heap) > 0 {
		k := e.pop()
		if k == last {
			continue
		}
		last = k
		s, id := int32(k>>stepShift), int32(k&idMask)
		var ok bool
		switch k >> kindShift & 3 {
		case kindEval:
			ok = e.evalFlow(id, s)
		case kindUpdate:
			ok = e.updateRank(id, s)
		default:
			ok = e.finalOK(id, e.stateNow(id, s))
		}
		if !ok {
			return false
		}
	}
	if sc.stop != never {
		return e.closure(x, y, sc.stop, e.stateNow(x, sc.stop), e.stateNow(y, sc.stop))
	}
	for _, r := range sc.touched {
		if !e.finalOK(r, e.stateNow(r, e.steps)) {
			return false
		}
	}
	return true
}

// finalsKnown is a necessary condition, for vertices i before j (steps t <
// t') and initial values the swap cannot change (all ops but allgather):
// when the last flow into x or y in the relabelled pattern arrives at step
// t or earlier, that rank's final value follows from original states alone,
// and it must be acceptable.
func (e *chunkEval) finalsKnown(i, j int) bool {
	a, b := e.verts[i], e.verts[j]
	x, y, t := a.Rank, b.Rank, a.Step
	nx, ny := e.vIn1[i]-e.vIn0[i], e.vIn1[j]-e.vIn0[j] // flows into a and b
	// y keeps its flows but those at t', and gains a's at t.
	ly := e.vLastExcl[j]
	if nx > 0 {
		ly = max(ly, t)
	}
	switch {
	case ly < t:
		if !e.finalOK(y, e.origState(y, ly)) {
			return false
		}
	case ly == t: // y's own flows at t plus a's
		v, _, ok := e.merged(y, t, i)
		if !ok || !e.finalOK(y, v) {
			return false
		}
	}
	// x keeps its flows but those at t, and gains b's at t' > t.
	if lx := e.vLastExcl[i]; ny == 0 && lx < t && !e.finalOK(x, e.origState(x, lx)) {
		return false
	}
	return true
}

// nextRepAfter is the first step after s at which r receives a replacing
// copy in the original pattern (never if none).
func (e *chunkEval) nextRepAfter(r, s int32) int32 {
	if k := e.lowerIn(r, s+1); k < e.inStart[r+1] {
		return e.nextRep[k]
	}
	return never
}

// sendsIn says whether r has an original out-flow at a step in [lo, hi].
func (e *chunkEval) sendsIn(r, lo, hi int32) bool {
	k := e.lowerOut(r, lo)
	return k < e.outStart[r+1] && e.outStep[k] <= hi
}

// local decides a swap of vertices i before j (steps t < t') without
// propagation when the change stays at x and y until t': a's flows move to
// y at t, so x differs by dX and y by dY from t on, until a replacing copy
// resets them; if no flow leaves x or y with a changed value before t'
// (the out-flows of a, which y now sends, included), every other rank is
// unchanged at t', the new states of x and y at t' follow from tables,
// and the closure decides. decided is false when the change escapes. Not
// for allgather, whose origins the swap may move.
func (e *chunkEval) local(i, j int) (valid, decided bool) {
	a, b := e.verts[i], e.verts[j]
	x, y, t, tp := a.Rank, b.Rank, a.Step, b.Step
	adjacent := tp == t+1 // a flow x -> y at t+1 leaves a and enters b: it becomes y -> x
	for _, f := range e.inList[e.vIn0[i]:e.vIn1[i]] {
		if e.src[f] == y {
			return false, true // self flow
		}
	}
	for _, f := range e.outList[e.vOut0[j]:e.vOut1[j]] {
		if e.dst[f] == x {
			return false, true
		}
	}
	if !adjacent {
		for _, f := range e.outList[e.vOut0[i]:e.vOut1[i]] {
			if e.dst[f] == y {
				return false, true
			}
		}
		for _, f := range e.inList[e.vIn0[j]:e.vIn1[j]] {
			if e.src[f] == x {
				return false, true
			}
		}
	}
	// Step t: y receives its own flows and a's; x receives nothing.
	nowY, _, ok := e.merged(y, t, i)
	if !ok {
		return false, true
	}
	wasY := e.origState(y, t)
	dY, dX := nowY.sub(wasY), e.vPrev[i].sub(e.vS[i])
	if e.vOut1[i] > e.vOut0[i] && nowY != e.vS[i] {
		return false, false // a's out-flows carry a new value
	}
	rX, rY := e.nextRepAfter(x, t), e.nextRepAfter(y, t)
	if dX != (val{}) && e.sendsIn(x, t+2, min(tp, rX)) {
		return false, false
	}
	if dY != (val{}) && e.sendsIn(y, t+1, min(tp, rY)) {
		return false, false
	}
	if tp-1 >= rX {
		dX = val{}
	}
	if tp-1 >= rY {
		dY = val{}
	}
	// Step t': y has no flows left; x receives its own and b's.
	nowYb := e.vPrev[j].add(dY)
	nowXb, rep, ok := e.merged(x, tp, j)
	if !ok {
		return false, true
	}
	if !rep {
		nowXb = nowXb.add(dX)
	}
	wasXb := e.origState(x, tp)
	if e.gains { // pinned counts of the flows x sends at t'+1
		if (e.vOut1[j] > e.vOut0[j] && nowXb.cnt != e.vS[j].cnt) || (e.sendsIn(x, tp+1, tp+1) && nowXb.cnt != wasXb.cnt) {
			return false, true
		}
	}
	bx1, bx2 := e.betaV(x, tp)
	f1 := submod(addmod(mulmod(nowXb.h1, addmod(bx1, e.vOB1[j])), mulmod(nowYb.h1, submod(e.vB1[j], e.vOB1[j]))),
		addmod(mulmod(wasXb.h1, bx1), mulmod(e.vS[j].h1, e.vB1[j])))
	f2 := submod(addmod(mulmod(nowXb.h2, addmod(bx2, e.vOB2[j])), mulmod(nowYb.h2, submod(e.vB2[j], e.vOB2[j]))),
		addmod(mulmod(wasXb.h2, bx2), mulmod(e.vS[j].h2, e.vB2[j])))
	if f1 != 0 || f2 != 0 || !e.gains {
		return f1 == 0 && f2 == 0, true
	}
	gx := e.gammaStrict(x, tp)
	g := submod(addmod(mulmod(cntmod(nowXb.cnt), addmod(gx, e.vOG[j])), mulmod(cntmod(nowYb.cnt), submod(e.vG[j], e.vOG[j]))),
		addmod(mulmod(cntmod(wasXb.cnt), gx), mulmod(cntmod(e.vS[j].cnt), e.vG[j])))
	return g == 0, true
}

// merged is rank r's new state at step s when it receives, besides its own
// flows of that step, those into vertex v, all with original values and on
// top of r's original state at s-1; rep says whether one of them replaces,
// ok is false on conflicting writes.
func (e *chunkEval) merged(r, s int32, v int) (now val, rep, ok bool) {
	k0 := e.lowerIn(r, s)
	k1 := k0
	rep = e.vRep[v]
	var rv val
	for k1 < e.inStart[r+1] && e.inStep[k1] == s {
		if f := e.inList[k1]; e.replace[f] {
			rep, rv = true, e.origVal[f]
		}
		k1++
	}
	if rep && int(k1-k0)+int(e.vIn1[v]-e.vIn0[v]) > 1 { // semantics: conflicting writes
		return val{}, true, false
	}
	switch {
	case e.vRep[v]:
		return e.vIn[v], true, true
	case rep:
		return rv, true, true
	}
	was := e.init[r] // original state at the end of step s
	if k1 > e.inStart[r] {
		was = e.stAfter[k1-1]
	}
	return was.add(e.vIn[v]), false, true
}

// sameStep decides a swap of two vertices i and j of one step t of
// different ranks x and y whose initial values it cannot change, in O(1)
// from per-vertex tables: the flows into the vertices read states of step
// t-1, which are unchanged, so the new states at t follow directly, and the
// closure decides (x's vertex now has y's out-flows and the reverse).
func (e *chunkEval) sameStep(i, j int) bool {
	x, y := e.verts[i].Rank, e.verts[j].Rank
	if e.gains && e.vKI[i] != e.vKI[j] { // see countsKept
		return false
	}
	for _, f := range e.inList[e.vIn0[i]:e.vIn1[i]] {
		if e.src[f] == y { // it would run y -> y
			return false
		}
	}
	for _, f := range e.inList[e.vIn0[j]:e.vIn1[j]] {
		if e.src[f] == x {
			return false
		}
	}
	for _, f := range e.outList[e.vOut0[i]:e.vOut1[i]] {
		if e.dst[f] == y {
			return false
		}
	}
	for _, f := range e.outList[e.vOut0[j]:e.vOut1[j]] {
		if e.dst[f] == x {
			return false
		}
	}
	nowX, nowY := e.vIn[j], e.vIn[i]
	if !e.vRep[j] {
		nowX = e.vPrev[i].add(nowX)
	}
	if !e.vRep[i] {
		nowY = e.vPrev[j].add(nowY)
	}
	if e.gains { // pinned counts of the out-flows each vertex takes over
		if (e.vOut1[j] > e.vOut0[j] && nowX.cnt != e.vS[j].cnt) || (e.vOut1[i] > e.vOut0[i] && nowY.cnt != e.vS[i].cnt) {
			return false
		}
	}
	bx1 := addmod(submod(e.vB1[i], e.vOB1[i]), e.vOB1[j])
	bx2 := addmod(submod(e.vB2[i], e.vOB2[i]), e.vOB2[j])
	by1 := addmod(submod(e.vB1[j], e.vOB1[j]), e.vOB1[i])
	by2 := addmod(submod(e.vB2[j], e.vOB2[j]), e.vOB2[i])
	f1 := submod(addmod(mulmod(nowX.h1, bx1), mulmod(nowY.h1, by1)), addmod(mulmod(e.vS[i].h1, e.vB1[i]), mulmod(e.vS[j].h1, e.vB1[j])))
	if f1 != 0 {
		return false
	}
	f2 := submod(addmod(mulmod(nowX.h2, bx2), mulmod(nowY.h2, by2)), addmod(mulmod(e.vS[i].h2, e.vB2[i]), mulmod(e.vS[j].h2, e.vB2[j])))
	if f2 != 0 || !e.gains {
		return f2 == 0
	}
	gx := addmod(submod(e.vG[i], e.vOG[i]), e.vOG[j])
	gy := addmod(submod(e.vG[j], e.vOG[j]), e.vOG[i])
	g := submod(addmod(mulmod(cntmod(nowX.cnt), gx), mulmod(cntmod(nowY.cnt), gy)),
		addmod(mulmod(cntmod(e.vS[i].cnt), e.vG[i]), mulmod(cntmod(e.vS[j].cnt), e.vG[j])))
	return g == 0
}

// originsKept says, for vertices i and j of one step, that the swap leaves
// every allgather origin as it is: x and y still send at t+1 and receive at
// t exactly when they did, so their first send and receive stay.
func (e *chunkEval) originsKept(i, j int) bool {
	return e.op != ten.AllGather ||
		((e.vOut1[i] > e.vOut0[i]) == (e.vOut1[j] > e.vOut0[j]) && (e.vIn1[i] > e.vIn0[i]) == (e.vIn1[j] > e.vIn0[j]))
}

// countsKept is the count balance of the package comment for the swap in
// the scratch (allgather and broadcast): the final counts of x and y, their
// initial counts plus their in-flows' pinned counts, must not change.
func (e *chunkEval) countsKept(x, y int32) bool {
	sc := e.sc
	var dx, dy int64
	for _, r := range [2]int32{x, y} {
		if sc.iGen[r] == sc.gen {
			d := sc.nInit[r].cnt - e.init[r].cnt
			if r == x {
				dx += d
			} else {
				dy += d
			}
		}
	}
	for _, f := range sc.relab {
		if nd, d := sc.nDst[f], e.dst[f]; nd != d {
			k := e.origVal[f].cnt
			switch nd {
			case x:
				dx += k
			case y:
				dy += k
			}
			switch d {
			case x:
				dx -= k
			case y:
				dy -= k
			}
		}
	}
	return dx == 0 && dy == 0
}

// evalFlow recomputes the value flow f carries at step s: its new source's
// state at the end of step s-1.
func (e *chunkEval) evalFlow(f, s int32) bool {
	var v val
	sc := e.sc
	if q := e.src[f]; !e.relabelled(f) || sc.nSrc[f] == q {
		v = e.origVal[f] // the source's original state at the end of step s-1
		if sc.rGen[q] == sc.gen && s-1 >= sc.dFrom[q] && s-1 < sc.resetAt[q] {
			v = v.add(sc.dlt[q])
		}
	} else {
		v = e.stateNow(sc.nSrc[f], s-1)
	}
	if v.cnt == 0 { // semantics: empty flow
		return false
	}
	o := e.origVal[f]
	if e.gains && v.cnt != o.cnt { // semantics: wrong share (allgather); see countsKept
		return false
	}
	if v != o {
		sc.vGen[f], sc.nVal[f] = sc.gen, v
		e.push(updateKey(s, e.newDst(f)))
	}
	return true
}

// updateRank recomputes rank r's state at the end of step s from its new
// in-flows of that step, and schedules the flows that read the change.
func (e *chunkEval) updateRank(r, s int32) bool {
	sc := e.sc
	start, end := e.inStart[r], e.inStart[r+1]
	k0 := e.lowerIn(r, s)
	k1 := k0
	for k1 < end && e.inStep[k1] == s {
		k1++
	}
	was := e.init[r] // original state at the end of step s
	if k1 > start {
		was = e.stAfter[k1-1]
	}
	var v val
	if s == 0 {
		v = sc.nInit[r]
	} else {
		writes, rep := 0, false
		var sum, rv val
		take := func(f int32) {
			writes++
			if e.replace[f] {
				rep, rv = true, e.value(f)
			} else {
				sum = sum.add(e.value(f))
			}
		}
		for k := k0; k < k1; k++ {
			if f := e.inList[k]; e.newDst(f) == r {
				take(f)
			}
		}
		for _, f := range sc.relab {
			if sc.nDst[f] == r && e.dst[f] != r && e.step[f] == s {
				take(f)
			}
		}
		if writes > 1 && rep { // semantics: conflicting writes
			return false
		}
		if rep {
			v = rv
		} else {
			v = e.init[r] // state at the end of step s-1
			if k0 > start {
				v = e.stAfter[k0-1]
			}
			if sc.rGen[r] == sc.gen && s-1 >= sc.dFrom[r] && s-1 < sc.resetAt[r] {
				v = v.add(sc.dlt[r])
			}
			v = v.add(sum)
		}
	}
	d := v.sub(was)
	if sc.rGen[r] != sc.gen {
		sc.rGen[r] = sc.gen
		sc.touched = append(sc.touched, r)
	}
	reset := never
	if k1 < end {
		reset = e.nextRep[k1]
	}
	sc.dlt[r], sc.dFrom[r], sc.resetAt[r] = d, s, reset
	if d != (val{}) {
		until := min(reset, sc.stop)
		for k := e.lowerOut(r, s+1); k < e.outStart[r+1] && e.outStep[k] <= until; k++ {
			if f := e.outList[k]; e.newSrc(f) == r {
				e.push(evalKey(e.outStep[k], f))
			}
		}
	}
	// Nothing reaches r after its last in-flow: its final value is known.
	if (k1 == end || e.relabelled(e.inList[end-1])) && e.newLastIn(r) <= s && !e.finalOK(r, v) {
		return false
	}
	return true
}

// closure decides the swap from the states at the end of step tp (the later
// vertex's step), as the package comment explains: x and y are the two
// ranks, whose vertices at tp are the ones whose out-flows change, with new
// states nowX and nowY; every other rank's change is in the scratch.
func (e *chunkEval) closure(x, y, tp int32, nowX, nowY val) bool {
	sc := e.sc
	var f1, f2, g uint64
	for _, q := range sc.touched {
		if q == x || q == y {
			continue
		}
		d := e.stateNow(q, tp).sub(e.origState(q, tp))
		if d == (val{}) {
			continue
		}
		if e.gains {
			if k := e.lowerOut(q, tp+1); d.cnt != 0 && k < e.outStart[q+1] && e.outStep[k] == tp+1 {
				return false // a flow at tp+1 reads a changed count
			}
			g = addmod(g, mulmod(cntmod(d.cnt), e.gammaStrict(q, tp)))
		}
		b1, b2 := e.betaV(q, tp)
		f1 = addmod(f1, mulmod(d.h1, b1))
		f2 = addmod(f2, mulmod(d.h2, b2))
	}
	for _, q := range [2]int32{x, y} {
		now, was := nowX, e.origState(q, tp)
		if q == y {
			now = nowY
		}
		b1, b2 := e.betaV(q, tp)
		n1, n2 := b1, b2
		var gs, gn uint64
		if e.gains {
			gs = e.gammaStrict(q, tp)
			gn = gs
		}
		for _, f := range sc.relab { // only flows leaving the vertices change source
			if e.step[f] != tp+1 {
				continue
			}
			if sc.nSrc[f] == q && e.src[f] != q {
				n1, n2 = addmod(n1, e.bIn1[f]), addmod(n2, e.bIn2[f])
				gn = addmod(gn, e.gIn[f])
			} else if e.src[f] == q && sc.nSrc[f] != q {
				n1, n2 = submod(n1, e.bIn1[f]), submod(n2, e.bIn2[f])
				gn = submod(gn, e.gIn[f])
			}
		}
		f1 = addmod(f1, submod(mulmod(now.h1, n1), mulmod(was.h1, b1)))
		f2 = addmod(f2, submod(mulmod(now.h2, n2), mulmod(was.h2, b2)))
		if e.gains {
			g = addmod(g, submod(mulmod(cntmod(now.cnt), gn), mulmod(cntmod(was.cnt), gs)))
			for k := e.lowerOut(q, tp+1); k < e.outStart[q+1] && e.outStep[k] == tp+1; k++ {
				if f := e.outList[k]; !e.relabelled(f) {
					if now.cnt != e.origVal[f].cnt {
						return false
					}
				}
			}
			for _, f := range sc.relab {
				if e.step[f] == tp+1 && sc.nSrc[f] == q && now.cnt != e.origVal[f].cnt {
					return false
				}
			}
		}
	}
	return f1 == 0 && f2 == 0 && g == 0
}

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
