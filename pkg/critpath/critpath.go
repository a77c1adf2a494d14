// Package critpath builds the dependency DAG of a collective pattern's flows
// and finds its critical paths (§5.4.1 of the paper): the chains of flows
// whose summed completion times bound the collective's completion time.
//
// It works on plain int32 arrays rather than a general graph library because
// it runs B+1 times per tuning batch on patterns of up to millions of flows
// (a 1024-rank ring allreduce has 2,095,104).
package critpath

import (
	"fmt"
	"math"
	"slices"

	"github.com/react-torch/react-torch/pkg/ten"
)

// DAG is the flow dependency graph of one pattern. Flow f (chunk c, step t,
// source s) depends on every flow g of chunk c with g.Dst == s and
// g.Step < t: those brought s its data for c. Flows of other chunks never
// gate it (each chunk subgraph runs on its own stream), nor do flows of the
// same step (they all read the previous step's state).
//
// Preds and Finish only read the DAG. Critical and CriticalAppend reuse
// scratch space held in the DAG, so a DAG is not safe for concurrent use by
// them; give each goroutine its own DAG.
//
// Internally flows are numbered by their position in a topological order and
// the CSR is kept in that numbering as well, so that the longest-path pass
// reads memory almost sequentially: its preds lie in the previous steps'
// stretch of the order. On a 1024-rank ring this made Critical about seven
// times faster than chasing flow indexes through chunk-major order.
type DAG struct {
	order []int32 // position -> flow index, a topological order
	pos   []int32 // flow index -> position
	start []int32 // CSR by position: preds of order[k] are at [start[k], start[k+1])
	preds []int32 // pred flow indexes
	ppos  []int32 // the same preds as positions

	finish []float64 // scratch by position for Critical, allocated on first use
	best   []int32
}

// New builds the DAG of a structurally valid pattern (see ten.Pattern.Validate)
// in O(flows + edges).
//
// The topological order is (step, flow index): every edge goes to a strictly
// later step, so that order is topological by construction, deterministic,
// and needs no Kahn pass; the rule cannot make a cycle. Stepping through the
// flows step by step, rather than chunk by chunk, reads a step-sorted pattern
// sequentially, which on two million flows is what New's time is made of.
func New(p *ten.Pattern) *DAG {
	nf := len(p.Flows)
	d := &DAG{
		order: stepOrder(p),
		start: make([]int32, nf+1),
		preds: make([]int32, 0, nf+nf/2),
		ppos:  make([]int32, 0, nf+nf/2),
	}
	d.pos = d.order
	if !isIdentity(d.order) {
		d.pos = make([]int32, nf)
		for k, f := range d.order {
			d.pos[f] = int32(k)
		}
	}
	// Per (chunk, rank): the positions of the flows that brought the rank
	// the chunk so far, as a linked list newest first (head, next).
	h := newHeads(p)
	next := make([]int32, nf)
	for i := 0; i < nf; {
		step := p.Flows[d.order[i]].Step
		j := i
		for ; j < nf && p.Flows[d.order[j]].Step == step; j++ {
			fl := &p.Flows[d.order[j]]
			first := len(d.ppos)
			for g := h.get(fl.Chunk, fl.Src); g >= 0; g = next[g] {
				d.ppos = append(d.ppos, g)
			}
			slices.Reverse(d.ppos[first:]) // step order
			for _, g := range d.ppos[first:] {
				d.preds = append(d.preds, d.order[g])
			}
			d.start[j+1] = int32(len(d.ppos))
		}
		// Link only after the whole step: same-step flows are independent.
		for k := i; k < j; k++ {
			fl := &p.Flows[d.order[k]]
			next[k] = h.get(fl.Chunk, fl.Dst)
			h.set(fl.Chunk, fl.Dst, int32(k))
		}
		i = j
	}
	return d
}

// stepOrder returns the flow indexes sorted by step, stable. Patterns are
// usually written step by step already; then it is the identity.
func stepOrder(p *ten.Pattern) []int32 {
	nf := len(p.Flows)
	order := make([]int32, nf)
	for i := range order {
		order[i] = int32(i)
	}
	sorted := true
	for i := 1; i < nf && sorted; i++ {
		sorted = p.Flows[i].Step >= p.Flows[i-1].Step
	}
	if sorted {
		return order
	}
	steps := p.Steps()
	if steps > 4*nf+64 { // sparse step numbers: a counting sort would waste memory
		slices.SortStableFunc(order, func(a, b int32) int { return int(p.Flows[a].Step) - int(p.Flows[b].Step) })
		return order
	}
	at := make([]int32, steps+2)
	for i := range p.Flows {
		at[p.Flows[i].Step+1]++
	}
	for s := 1; s < len(at); s++ {
		at[s] += at[s-1]
	}
	for i := range p.Flows {
		s := p.Flows[i].Step
		order[at[s]] = int32(i)
		at[s]++
	}
	return order
}

func isIdentity(order []int32) bool {
	for k, f := range order {
		if int(f) != k {
			return false
		}
	}
	return true
}

// heads maps (chunk, rank) to the newest position in its received list, -1
// for none: a dense table when chunks*ranks is of the order of the flow count
// (every generated pattern), a map for sparse chunk numbering.
type heads struct {
	ranks  int64
	dense  []int32
	sparse map[int64]int32
}

func newHeads(p *ten.Pattern) heads {
	h := heads{ranks: int64(p.Ranks)}
	if n := int64(p.Chunks()) * h.ranks; n <= 4*int64(len(p.Flows))+h.ranks {
		h.dense = make([]int32, n)
		for i := range h.dense {
			h.dense[i] = -1
		}
	} else {
		h.sparse = make(map[int64]int32)
	}
	return h
}

func (h *heads) get(c, r int32) int32 {
	k := int64(c)*h.ranks + int64(r)
	if h.dense != nil {
		return h.dense[k]
	}
	if v, ok := h.sparse[k]; ok {
		return v
	}
	return -1
}

func (h *heads) set(c, r, v int32) {
	k := int64(c)*h.ranks + int64(r)
	if h.dense != nil {
		h.dense[k] = v
		return
	}
	h.sparse[k] = v
}

// Len is the number of flows.
func (d *DAG) Len() int { return len(d.order) }

// Preds returns the flows that flow f waits for, in step order and then flow
// index order. The slice aliases the DAG: do not modify it.
func (d *DAG) Preds(f int) []int32 {
	k := d.pos[f]
	return d.preds[d.start[k]:d.start[k+1]]
}

func (d *DAG) checkLen(name string, n int) {
	if n != d.Len() {
		panic(fmt.Sprintf("critpath: len(%s) = %d, want %d flows", name, n, d.Len()))
	}
}

// Finish fills finish[f] = w[f] + the largest finish of f's preds (0 without
// preds) and returns the makespan, the largest finish (0 without flows).
// Weights are normally FCTs in seconds. w and finish have one entry per flow,
// by flow index; it panics otherwise. It does not allocate.
func (d *DAG) Finish(w, finish []float64) float64 {
	d.checkLen("w", len(w))
	d.checkLen("finish", len(finish))
	mk := 0.0
	for k, f := range d.order {
		ps := d.preds[d.start[k]:d.start[k+1]]
		m := 0.0
		if len(ps) > 0 {
			m = math.Inf(-1)
			for _, g := range ps {
				m = max(m, finish[g])
			}
		}
		finish[f] = w[f] + m
		if k == 0 || finish[f] > mk {
			mk = finish[f]
		}
	}
	return mk
}

// minDuration stands in for a flow that arrived no later than its last
// input (clocks of two ranks that entered the call at different times).
const minDuration = 1e-9

// Durations is Finish's inverse: given each flow's arrival (its finish,
// from the moment its receiver entered the collective), it fills dur[f]
// with the time from the flow's start to its arrival. A flow starts when
// the last of its inputs reached its sender (the latest arrival among its
// preds), which is when a dataflow executor sends it, and not before both
// its ends entered the call: a send completes only into a posted receive.
//
// entry holds each rank's entry into the call on a clock the ranks share,
// p.Ranks values; each arrival is then read on that clock (entry[dst] +
// arrival[f]). With entry nil every rank entered at 0: the simulator's
// setting, and without a shared clock the only reading that compares two
// ranks' times. Values below minDuration become minDuration. p is the
// pattern the DAG was built from. It panics on lengths other than the flow
// and rank counts and does not allocate.
func (d *DAG) Durations(p *ten.Pattern, arrival, entry, dur []float64) {
	d.checkLen("arrival", len(arrival))
	d.checkLen("dur", len(dur))
	if entry != nil && len(entry) != p.Ranks {
		panic(fmt.Sprintf("critpath: len(entry) = %d, want %d ranks", len(entry), p.Ranks))
	}
	at := func(f int32) float64 { // arrival on the shared clock
		if entry == nil {
			return arrival[f]
		}
		return entry[p.Flows[f].Dst] + arrival[f]
	}
	for k, f := range d.order {
		start := 0.0
		if entry != nil {
			fl := &p.Flows[f]
			start = max(entry[fl.Src], entry[fl.Dst])
		}
		for _, g := range d.preds[d.start[k]:d.start[k+1]] {
			start = max(start, at(g))
		}
		dur[f] = max(at(f)-start, minDuration)
	}
}

// ReadArrivals turns one epoch's arrivals into durations by the rule a
// tuner reads FCTs by (tuner.Config.ReadsStepped): StepDurations when
// stepped, else Durations with the ranks' entries (or nil). p is the
// pattern the DAG was built from.
func (d *DAG) ReadArrivals(p *ten.Pattern, stepped bool, arrival, entry, dur []float64) {
	if stepped {
		StepDurations(p, arrival, dur)
		return
	}
	d.Durations(p, arrival, entry, dur)
}

// StepDurations is Durations for a step-by-step reading of arrivals: dur[f]
// is arrival[f] less the latest arrival at f's receiver in an earlier step
// (0 without one), the receiver's step start, so that every value is one
// rank's clock against itself (the link model's Stepped replay reads FCTs
// so). Values below minDuration become minDuration.
func StepDurations(p *ten.Pattern, arrival, dur []float64) {
	if len(arrival) != len(p.Flows) || len(dur) != len(p.Flows) {
		panic(fmt.Sprintf("critpath: %d arrivals, %d durations for %d flows", len(arrival), len(dur), len(p.Flows)))
	}
	order := stepOrder(p)
	last := make([]float64, p.Ranks) // per receiver: latest arrival of the steps before
	next := make([]float64, p.Ranks)
	for i := 0; i < len(order); {
		step := p.Flows[order[i]].Step
		j := i
		for ; j < len(order) && p.Flows[order[j]].Step == step; j++ {
			f := order[j]
			r := p.Flows[f].Dst
			dur[f] = max(arrival[f]-last[r], minDuration)
			next[r] = max(next[r], arrival[f])
		}
		copy(last, next)
		i = j
	}
}

// Critical returns the length of a longest path and that path, as flow
// indexes from first to last. See CriticalAppend for how ties are broken.
func (d *DAG) Critical(w []float64) (float64, []int32) {
	return d.CriticalAppend(nil, w)
}

// CriticalAppend is Critical appending the path to dst and returning the
// extended slice, so that a caller passing a reused buffer (dst[:0]) gets
// no allocation. w has one entry per flow; it panics otherwise.
//
// Ties, on exactly equal lengths, go to the lowest flow index: the path ends
// at the lowest-index flow among those with the largest finish, and each step
// back takes the lowest-index pred among those with the largest finish.
// Equivalently, among the longest paths that start at a flow without preds,
// it returns the least when paths are compared last flow first. A path always
// starts at a flow without preds, even through zero weights.
func (d *DAG) CriticalAppend(dst []int32, w []float64) (float64, []int32) {
	d.checkLen("w", len(w))
	nf := d.Len()
	if nf == 0 {
		return 0, dst
	}
	if d.finish == nil {
		d.finish = make([]float64, nf)
		d.best = make([]int32, nf)
	}
	finish, best := d.finish, d.best
	end := 0
	for k, f := range d.order {
		lo, hi := d.start[k], d.start[k+1]
		bk, bf := int32(-1), int32(-1)
		m := 0.0
		for j := lo; j < hi; j++ {
			g := d.ppos[j]
			if bk < 0 || finish[g] > m || (finish[g] == m && d.preds[j] < bf) {
				bk, bf, m = g, d.preds[j], finish[g]
			}
		}
		best[k] = bk
		finish[k] = w[f] + m
		if finish[k] > finish[end] || (finish[k] == finish[end] && f < d.order[end]) {
			end = k
		}
	}
	first := len(dst)
	for k := int32(end); k >= 0; k = best[k] {
		dst = append(dst, d.order[k])
	}
	slices.Reverse(dst[first:])
	return finish[end], dst
}

// PathLength sums w over a path: the time a path takes under other weights,
// as when the tuner re-weighs old critical paths after a transform.
func PathLength(path []int32, w []float64) float64 {
	s := 0.0
	for _, f := range path {
		s += w[f]
	}
	return s
}
