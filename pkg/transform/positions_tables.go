package transform

import (
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/react-torch/react-torch/pkg/ten"
)

// A chunk's original execution and the per-rank and per-vertex tables the
// position evaluator reads (see the comment in positions.go).

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
