package transform

// One evaluation's state: generation-stamped relabellings, new values and
// state changes, and the event heap the forward part runs on.

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
