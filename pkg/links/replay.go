package links

import (
	"cmp"
	"math"
	"slices"

	"github.com/react-torch/react-torch/pkg/critpath"
	"github.com/react-torch/react-torch/pkg/ten"
)

// Net is what the model believes of the links the ranks send and receive
// on: every rank has an uplink and a downlink of line rate C bytes/s, each
// shared with Up[r] (Down[r]) competing flows of other tenants, which take
// their max-min fair share like the pattern's own flows; every flow pays
// Alpha seconds of latency after its last byte. Counts are real numbers: a
// link that is merely slower than the line rate has a fractional count.
//
// Stepped describes an executor that runs each rank's steps one after
// another (react_torch's: a rank posts step s once everything of its step
// s-1, sends and receives of every chunk, is done): a flow starts when both
// its ends have started its step, and its FCT is timed from the receiver's
// step start, waiting for a late sender included. Without it flows run as
// data allows, one stream per chunk (NCCL's channels, the simulator).
//
// Host, where not nil, is every rank's slowness as a host: a flow carries
// 1+x times its bytes where x is the larger Host of its two ends, as a
// lone flow on a link slows beside x competing flows. A slow host slows
// its flows in both directions alike whatever they share a link with;
// competing flows slow a rank's concurrent flows less than its single one.
//
// Slow, where not nil, is every rank link's slowness as a link (uplinks,
// then downlinks): link l carries C/(1+Slow[l]), shared by the pattern's
// flows and its competing ones, a cable degraded to a lower rate. A lone
// flow slows on it as beside Slow[l] competing flows, but n concurrent
// flows of the pattern slow n times as much, where a count slows them
// less: the epochs' concurrency tells the two apart.
//
// Shared, where not nil, gives every rank r with Shared[r] above zero a
// third link, its host's, that all its flows both ways pass through
// beside Shared[r] competing flows: a CPU or a bus that a rank's sends and
// receives share, and a busy process shares with them.
type Net struct {
	C, Alpha     float64
	Up, Down     []float64
	Host, Shared []float64
	Slow         []float64
	Stepped      bool
}

// rate is link l's line rate (l: uplinks, downlinks, then hosts').
func (n *Net) rate(l int) float64 {
	if n.Slow == nil || l >= len(n.Slow) {
		return n.C
	}
	return n.C / (1 + n.Slow[l])
}

// Load is what the model sees on rank r's uplink (down: its downlink):
// its competing count plus its slowness as a link, either the slowdown of
// a lone flow.
func (n *Net) Load(r int, down bool) float64 {
	l, k := r, n.Up[r]
	if down {
		l, k = len(n.Up)+r, n.Down[r]
	}
	if n.Slow != nil {
		k += n.Slow[l]
	}
	return k
}

// hostFactor is the slowness flow src->dst takes from its hosts.
func (n *Net) hostFactor(src, dst int32) float64 {
	if n.Host == nil {
		return 1
	}
	return 1 + max(n.Host[src], n.Host[dst])
}

// clone is a copy of n that shares no slice with it.
func (n *Net) clone() Net {
	c := *n
	c.Up, c.Down, c.Host, c.Shared, c.Slow = slices.Clone(n.Up), slices.Clone(n.Down), slices.Clone(n.Host), slices.Clone(n.Shared), slices.Clone(n.Slow)
	return c
}

// Replayer runs a pattern's dependency DAG through a Net with fair
// sharing: a flow starts when its inputs have arrived (critpath's rule),
// shares its source's uplink and its destination's downlink max-min fairly
// with the other flows active on them, and completes Alpha after its last
// byte. It is the model's whole-pattern judge: a candidate's time is its
// replay's makespan. Scratch space is reused across calls; a Replayer is
// not safe for concurrent use.
type Replayer struct {
	left   []int32   // preds not yet complete, by flow
	succ   []int32   // successors, CSR by flow
	sstart []int32   // CSR offsets into succ
	rem    []float64 // bytes left, by flow
	rate   []float64
	start  []float64
	active []int32
	done   []int32 // transfer ended, completion pending (FIFO: Alpha is constant)
	doneAt []float64

	// per link: capacity left, unfrozen pattern flows, its active flows
	// lflows[lstart[l]:lend[l]]
	lcap   []float64
	lcnt   []int32
	lown   []int32 // share: the first active flow seen on each link
	lstart []int32
	lend   []int32
	lflows []int32
	touch  []int32
	cursor []int32
	heap   []shareEntry
	live   []int32    // fillLinear: the links left, and the share each
	key    []float64  // was last judged at
	flink  [][4]int32 // by flow: the links it passes through, -1 padded
	comp   []float64  // by link: its competing flows

	// dataflow: the DAG whose successor lists succ holds, every flow's
	// pred count and the flows without preds, for the next replay of it
	// (a search replays many candidates of one DAG)
	sdag  *critpath.DAG
	npred []int32
	roots []int32

	// share: the flows that started or ended since its last call, and the
	// links and flows they reach (marked with gen in lseen and fseen)
	moved  []int32
	clinks []int32
	cflows []int32
	lseen  []uint32
	fseen  []uint32
	gen    uint32

	// Stepped: each rank's flows by step (CSR over rflows, rank-major,
	// step order), the rank's position in it, the flows of its current
	// step not yet complete, and when each flow's receiver entered its step
	// (kept in start: a stepped FCT counts from there).
	rstart []int32
	rflows []int32
	rpos   []int32
	busy   []int32
	mark   []int8 // flow: ends that have entered its step
}

func grow[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n)
	}
	return b[:n]
}

// Replay fills fct (one entry per flow, seconds) with every flow's
// completion time under net, for a message of bytes bytes whose flow f
// carries Fraction*bytes*scale[f] bytes (scale nil: 1), and returns the
// makespan. dag must be critpath.New(p).
func (r *Replayer) Replay(p *ten.Pattern, dag *critpath.DAG, bytes float64, net *Net, scale, fct []float64) float64 {
	nf := len(p.Flows)
	n := p.Ranks
	r.rem = grow(r.rem, nf)
	r.rate = grow(r.rate, nf)
	r.start = grow(r.start, nf)
	if net.Stepped {
		r.stepped(p)
	} else {
		r.dataflow(dag, nf)
	}
	r.linkState(p, net, n)
	r.done, r.doneAt = r.done[:0], r.doneAt[:0]
	for f := 0; f < nf; f++ {
		fl := &p.Flows[f]
		b := fl.Fraction * bytes * net.hostFactor(fl.Src, fl.Dst)
		if scale != nil {
			b *= scale[f]
		}
		r.rem[f] = b
	}
	if net.Stepped {
		r.active = r.active[:0]
		for x := 0; x < n; x++ {
			r.enter(p, int32(x), 0)
		}
	}
	return r.run(p, net, fct)
}

// links readies every flow's links (uplink, downlink, then its hosts'
// where net shares them) and every link's competing flows, which share
// would otherwise work out on every event.
func (r *Replayer) links(p *ten.Pattern, net *Net) {
	n := int32(p.Ranks)
	r.flink = grow(r.flink, len(p.Flows))
	for f := range p.Flows {
		fl := &p.Flows[f]
		ls := [4]int32{fl.Src, n + fl.Dst, -1, -1}
		if net.Shared != nil {
			h := hostLinks(fl, n, net.Shared)
			ls[2], ls[3] = h[0], h[1]
		}
		r.flink[f] = ls
	}
	r.comp = grow(r.comp, 3*int(n))
	copy(r.comp, net.Up)
	copy(r.comp[n:], net.Down)
	if net.Shared != nil {
		copy(r.comp[2*n:], net.Shared)
	} else {
		clear(r.comp[2*n:])
	}
}

// dataflow readies the DAG's successor lists and the flows without preds;
// the lists stay for the next replay of the same DAG.
func (r *Replayer) dataflow(dag *critpath.DAG, nf int) {
	r.left = grow(r.left, nf)
	if dag != r.sdag || len(r.npred) != nf {
		r.index(dag, nf)
	}
	copy(r.left, r.npred)
	r.active = append(r.active[:0], r.roots...)
	for _, f := range r.roots {
		r.start[f] = 0
	}
}

// index builds the successor lists of dag (CSR), the pred counts and the
// roots.
func (r *Replayer) index(dag *critpath.DAG, nf int) {
	r.sdag = nil
	r.npred = grow(r.npred, nf)
	r.sstart = grow(r.sstart, nf+1)
	clear(r.sstart)
	edges := 0
	for f := 0; f < nf; f++ {
		ps := dag.Preds(f)
		r.npred[f] = int32(len(ps))
		for _, g := range ps {
			r.sstart[g+1]++
		}
		edges += len(ps)
	}
	for f := 0; f < nf; f++ {
		r.sstart[f+1] += r.sstart[f]
	}
	r.succ = grow(r.succ, edges)
	r.cursor = append(r.cursor[:0], r.sstart[:nf]...)
	for f := 0; f < nf; f++ {
		for _, g := range dag.Preds(f) {
			r.succ[r.cursor[g]] = int32(f)
			r.cursor[g]++
		}
	}
	r.roots = r.roots[:0]
	for f := 0; f < nf; f++ {
		if r.npred[f] == 0 {
			r.roots = append(r.roots, int32(f))
		}
	}
	r.sdag = dag
}

// run is the event loop: fair rates, the next transfer end or completion,
// completions releasing what waited for them.
func (r *Replayer) run(p *ten.Pattern, net *Net, fct []float64) float64 {
	now, mk := 0.0, 0.0
	head := 0
	dirty := true
	r.moved = append(r.moved[:0], r.active...)
	for len(r.active) > 0 || head < len(r.done) {
		if dirty {
			r.share(net)
			dirty = false
		}
		tEnd := math.Inf(1)
		for _, f := range r.active {
			if r.rate[f] > 0 {
				tEnd = min(tEnd, now+r.rem[f]/r.rate[f])
			} else if r.rem[f] <= 0 {
				tEnd = now
			}
		}
		tDone := math.Inf(1)
		if head < len(r.done) {
			tDone = r.doneAt[head]
		}
		t := min(tEnd, tDone)
		if math.IsInf(t, 1) { // no progress possible: a link of no capacity
			for f := range fct {
				fct[f] = math.Inf(1)
			}
			return math.Inf(1)
		}
		dt := t - now
		tol := 1e-12 * max(t, 1e-9)
		for _, f := range r.active {
			r.rem[f] -= r.rate[f] * dt
		}
		now = t
		// transfers that ended
		k := 0
		for _, f := range r.active {
			if r.rem[f] <= r.rate[f]*tol+1e-9 {
				r.done = append(r.done, f)
				r.doneAt = append(r.doneAt, now+net.Alpha)
				r.moved = append(r.moved, f)
				dirty = true
				continue
			}
			r.active[k] = f
			k++
		}
		r.active = r.active[:k]
		// completions: inputs arrive, successors start
		for head < len(r.done) && r.doneAt[head] <= now+tol {
			f := r.done[head]
			end := r.doneAt[head]
			head++
			fct[f] = end - r.start[f]
			mk = max(mk, end)
			if net.Stepped {
				fl := &p.Flows[f]
				for _, x := range [2]int32{fl.Src, fl.Dst} {
					if r.busy[x]--; r.busy[x] == 0 {
						r.enter(p, x, end)
					}
				}
				dirty = true
				continue
			}
			for _, s := range r.succ[r.sstart[f]:r.sstart[f+1]] {
				if r.left[s]--; r.left[s] == 0 {
					r.start[s] = end
					r.active = append(r.active, s)
					r.moved = append(r.moved, s)
					dirty = true
				}
			}
		}
	}
	return mk
}

// hostLinks are the host links flow fl passes through, each end's whose
// Shared count is above zero (-1: none; a flow to itself passes once).
func hostLinks(fl *ten.Flow, n int32, shared []float64) [2]int32 {
	ls := [2]int32{-1, -1}
	if shared[fl.Src] > 0 {
		ls[0] = 2*n + fl.Src
	}
	if fl.Dst != fl.Src && shared[fl.Dst] > 0 {
		ls[1] = 2*n + fl.Dst
	}
	return ls
}

// stepped indexes every rank's flows by step for the stepped executor.
func (r *Replayer) stepped(p *ten.Pattern) {
	n, nf := p.Ranks, len(p.Flows)
	r.rstart = grow(r.rstart, n+1)
	clear(r.rstart)
	for i := range p.Flows {
		f := &p.Flows[i]
		r.rstart[f.Src+1]++
		r.rstart[f.Dst+1]++
	}
	for x := 0; x < n; x++ {
		r.rstart[x+1] += r.rstart[x]
	}
	r.rflows = grow(r.rflows, 2*nf)
	r.cursor = append(r.cursor[:0], r.rstart[:n]...)
	for i := range p.Flows {
		f := &p.Flows[i]
		for _, x := range [2]int32{f.Src, f.Dst} {
			r.rflows[r.cursor[x]] = int32(i)
			r.cursor[x]++
		}
	}
	for x := 0; x < n; x++ {
		fl := r.rflows[r.rstart[x]:r.rstart[x+1]]
		slices.SortStableFunc(fl, func(a, b int32) int { return cmp.Compare(p.Flows[a].Step, p.Flows[b].Step) })
	}
	r.rpos = append(r.rpos[:0], r.rstart[:n]...)
	r.busy = grow(r.busy, n)
	clear(r.busy)
	r.mark = grow(r.mark, nf)
	clear(r.mark)
}

// enter moves rank x, whose current step is done, into its next step with
// flows at time t: the step's flows whose other end is there too start.
func (r *Replayer) enter(p *ten.Pattern, x int32, t float64) {
	k, end := r.rpos[x], r.rstart[x+1]
	if k >= end {
		return
	}
	step := p.Flows[r.rflows[k]].Step
	for ; k < end && p.Flows[r.rflows[k]].Step == step; k++ {
		f := r.rflows[k]
		r.busy[x]++
		if p.Flows[f].Dst == x {
			r.start[f] = t // the receiver's step start: where a stepped FCT counts from
		}
		if r.mark[f]++; r.mark[f] == 2 {
			r.active = append(r.active, f)
			r.moved = append(r.moved, f)
		}
	}
	r.rpos[x] = k
}

// linkState sizes the per-link state for n ranks' links (up, down and
// each rank's host link) and works out every flow's links.
func (r *Replayer) linkState(p *ten.Pattern, net *Net, n int) {
	r.lcap = grow(r.lcap, 3*n)
	r.lcnt = grow(r.lcnt, 3*n)
	clear(r.lcnt)
	r.lown = grow(r.lown, 3*n)
	r.lstart = grow(r.lstart, 3*n)
	r.lend = grow(r.lend, 3*n)
	r.links(p, net)
}
