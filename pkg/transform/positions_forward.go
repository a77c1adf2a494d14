package transform

import (
	"sort"

	"github.com/react-torch/react-torch/pkg/ten"
)

// The general evaluation of one position swap: relabel, propagate the
// changed values forward in step order, and decide with the closure
// (see the comment in positions.go).

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
