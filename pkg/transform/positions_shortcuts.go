package transform

import (
	"github.com/react-torch/react-torch/pkg/ten"
)

// The exact shortcuts of the position evaluator (see the comment in
// positions.go): swaps of one step, and swaps whose change stays local
// to the two ranks, decided from tables without propagation.

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
