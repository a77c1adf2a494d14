// Package detect classifies the flows of a collective pattern as steady or
// erratically congested from their completion times alone (§5.2 of the
// paper), and names the problem vertices and ranks the tuner should swap.
//
// It needs no switch counters and no knowledge of other tenants: a flow is
// judged against flows of the same degree in the same pattern, over one
// batch of epochs.
package detect

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"

	"github.com/react-torch/react-torch/pkg/ten"
)

// Config holds the detection thresholds.
type Config struct {
	// Delta1: a flow is steady-congested when its p90 throughput is below
	// (1-Delta1) times the mean throughput of flows of its degree.
	Delta1 float64
	// Delta2: a flow is erratic-congested when the std/mean of its
	// throughput over the batch exceeds Delta2.
	Delta2 float64
}

// DefaultConfig returns the paper's thresholds: a 20% drop is worth acting
// on, and 15% spread is beyond the stack's own noise.
func DefaultConfig() Config { return Config{Delta1: 0.2, Delta2: 0.15} }

// Class is the congestion a flow shows over a batch.
type Class uint8

// Congestion classes.
const (
	None Class = iota
	// Steady: slow in (nearly) every epoch, typically an unavoidable
	// server-ToR link. It takes precedence over Erratic.
	Steady
	// Erratic: slow in some epochs only, typically a multipath link that
	// ECMP or adaptive routing sometimes picks.
	Erratic
)

func (c Class) String() string {
	switch c {
	case None:
		return "none"
	case Steady:
		return "steady"
	case Erratic:
		return "erratic"
	}
	return fmt.Sprintf("class(%d)", uint8(c))
}

// Vertex is a TEN vertex (chunk, step, rank) that congested flows touch:
// flow (chunk c, step t, src s, dst d) joins (c, t-1, s) to (c, t, d).
// Congested counts the congested flows incident to it, Steady those of them
// that are steady.
type Vertex struct {
	Chunk, Step, Rank int32
	Congested, Steady int32
}

// Report is the outcome of one batch. Per-flow slices are indexed like the
// pattern's flows; per-rank slices by rank.
type Report struct {
	Class []Class
	// Degree is the flow's degree (ten.Degrees.Flow), the index into DegreeMean.
	Degree []int32
	// P90 and Mean are of the flow's throughput over the batch, in bytes/s;
	// NormStd is its std/mean (sample std; 0 for a one-epoch batch).
	P90, Mean, NormStd []float64
	// DegreeMean[k] is the mean throughput over all epochs of all flows of
	// degree k, 0 where no flow has degree k.
	DegreeMean []float64
	// Vertices are the problem vertices, most steady first, then most
	// congested, then by chunk, step, rank.
	Vertices []Vertex
	// SteadyIn[r]: every flow into r (all chunks, all steps) is steady, so
	// r's downlink is the likely culprit; SteadyOut[r] likewise for flows
	// out of r and its uplink. False for a rank with no such flows.
	SteadyIn, SteadyOut []bool
}

// Congested reports whether any flow is classified.
func (r *Report) Congested() bool {
	return slices.ContainsFunc(r.Class, func(c Class) bool { return c != None })
}

// InputError says what was wrong with Detect's input. Epoch and Flow are -1
// where they do not apply.
type InputError struct {
	Field string // "config", "messageBytes", "fct", "pattern"
	Epoch int
	Flow  int
	Msg   string
}

func (e *InputError) Error() string {
	switch {
	case e.Flow >= 0:
		return fmt.Sprintf("detect: %s: epoch %d flow %d: %s", e.Field, e.Epoch, e.Flow, e.Msg)
	case e.Epoch >= 0:
		return fmt.Sprintf("detect: %s: epoch %d: %s", e.Field, e.Epoch, e.Msg)
	}
	return fmt.Sprintf("detect: %s: %s", e.Field, e.Msg)
}

func inputErr(field string, epoch, flow int, format string, args ...any) error {
	return &InputError{Field: field, Epoch: epoch, Flow: flow, Msg: fmt.Sprintf(format, args...)}
}

// Detect classifies every flow of a structurally valid pattern p from a
// batch of FCTs. deg must be ten.NewDegrees(p). fct[e][f] is the completion
// time in seconds of flow f in epoch e; messageBytes is the collective's
// full buffer size, of which flow f carries Fraction.
//
// Throughput, not FCT, is compared so that flows carrying different shares
// of the buffer are comparable; flows are compared only with flows of the
// same degree, since a rank sending two flows at once gives each about half
// its link, congested or not.
//
// The 90th percentile is gonum's stat.LinInterp (Hyndman and Fan's type 4:
// the empirical CDF interpolated linearly between order statistics, no
// extrapolation beyond the sample). With the paper's B = 6 it is
// 0.6*b(5) + 0.4*b(6) of the sorted throughputs, so one unusually fast epoch
// cannot on its own clear a flow that is slow in the other five, as the
// empirical (type 1) quantile, which is b(6) = max there, would.
func Detect(p *ten.Pattern, deg *ten.Degrees, fct [][]float64, messageBytes float64, cfg Config) (*Report, error) {
	if !(cfg.Delta1 >= 0 && cfg.Delta1 < 1) {
		return nil, inputErr("config", -1, -1, "Delta1 = %v, want it in [0, 1)", cfg.Delta1)
	}
	if !(cfg.Delta2 >= 0) || math.IsInf(cfg.Delta2, 1) {
		return nil, inputErr("config", -1, -1, "Delta2 = %v, want a finite value >= 0", cfg.Delta2)
	}
	if !(messageBytes > 0) || math.IsInf(messageBytes, 1) {
		return nil, inputErr("messageBytes", -1, -1, "%v, want a finite size > 0", messageBytes)
	}
	if p == nil || deg == nil {
		return nil, inputErr("pattern", -1, -1, "nil pattern or degrees")
	}
	if deg.Steps() != p.Steps() {
		return nil, inputErr("pattern", -1, -1, "degrees index %d steps, pattern has %d: not the pattern's degrees", deg.Steps(), p.Steps())
	}
	nf, nb := len(p.Flows), len(fct)
	if nb == 0 {
		return nil, inputErr("fct", -1, -1, "empty batch: no epochs")
	}
	for e, row := range fct {
		if len(row) != nf {
			return nil, inputErr("fct", e, -1, "%d FCTs, pattern has %d flows", len(row), nf)
		}
		for f, v := range row {
			if !(v > 0) || math.IsInf(v, 1) {
				return nil, inputErr("fct", e, f, "FCT %v s, want finite and > 0", v)
			}
		}
	}

	r := &Report{
		Class:   make([]Class, nf),
		Degree:  make([]int32, nf),
		P90:     make([]float64, nf),
		Mean:    make([]float64, nf),
		NormStd: make([]float64, nf),
	}
	maxDeg := int32(0)
	for f := range p.Flows {
		r.Degree[f] = int32(deg.Flow(&p.Flows[f]))
		maxDeg = max(maxDeg, r.Degree[f])
	}
	r.DegreeMean = make([]float64, maxDeg+1)
	count := make([]int, maxDeg+1)

	b := make([]float64, nb)
	for f := range p.Flows {
		bytes := p.Flows[f].Fraction * messageBytes
		for e := range fct {
			b[e] = bytes / fct[e][f]
			if math.IsInf(b[e], 1) {
				return nil, inputErr("fct", e, f, "FCT %v s too small: throughput overflows", fct[e][f])
			}
		}
		k := r.Degree[f]
		if nb > 1 {
			mean, std := stat.MeanStdDev(b, nil)
			r.Mean[f], r.NormStd[f] = mean, std/mean
		} else {
			r.Mean[f] = b[0]
		}
		r.DegreeMean[k] += r.Mean[f] // every flow has nb samples: mean of means is the mean
		count[k]++
		slices.Sort(b)
		r.P90[f] = stat.Quantile(0.9, stat.LinInterp, b, nil)
	}
	for k := range r.DegreeMean {
		if count[k] > 0 {
			r.DegreeMean[k] /= float64(count[k])
		}
	}

	var ends []flowEnd
	for f := range p.Flows {
		switch {
		case r.P90[f] < r.DegreeMean[r.Degree[f]]*(1-cfg.Delta1):
			r.Class[f] = Steady
		case r.NormStd[f] > cfg.Delta2:
			r.Class[f] = Erratic
		default:
			continue
		}
		fl := &p.Flows[f]
		st := r.Class[f] == Steady
		ends = append(ends, flowEnd{fl.Chunk, fl.Step - 1, fl.Src, st}, flowEnd{fl.Chunk, fl.Step, fl.Dst, st})
	}
	r.Vertices = vertices(ends)
	r.SteadyIn, r.SteadyOut = steadyRanks(p, r.Class)
	return r, nil
}

// flowEnd is one end of a congested flow.
type flowEnd struct {
	chunk, step, rank int32
	steady            bool
}

// vertices counts the congested flow ends per vertex and sorts the result.
func vertices(ends []flowEnd) []Vertex {
	byVertex := func(a, b flowEnd) int {
		return cmp.Or(cmp.Compare(a.chunk, b.chunk), cmp.Compare(a.step, b.step), cmp.Compare(a.rank, b.rank))
	}
	slices.SortFunc(ends, byVertex)
	var vs []Vertex
	for i, e := range ends {
		if i == 0 || byVertex(e, ends[i-1]) != 0 {
			vs = append(vs, Vertex{Chunk: e.chunk, Step: e.step, Rank: e.rank})
		}
		v := &vs[len(vs)-1]
		v.Congested++
		if e.steady {
			v.Steady++
		}
	}
	// Stable: equal counts keep the (chunk, step, rank) order.
	slices.SortStableFunc(vs, func(a, b Vertex) int {
		return cmp.Or(cmp.Compare(b.Steady, a.Steady), cmp.Compare(b.Congested, a.Congested))
	})
	return vs
}

// steadyRanks marks the ranks all of whose incoming (outgoing) flows are
// steady-congested: then the rank's own downlink (uplink) is the common
// factor, rather than any one peer or path.
func steadyRanks(p *ten.Pattern, class []Class) (in, out []bool) {
	const (
		seen   = 1
		broken = 2
	)
	inS := make([]uint8, p.Ranks)
	outS := make([]uint8, p.Ranks)
	for f := range p.Flows {
		fl := &p.Flows[f]
		inS[fl.Dst] |= seen
		outS[fl.Src] |= seen
		if class[f] != Steady {
			inS[fl.Dst] |= broken
			outS[fl.Src] |= broken
		}
	}
	in, out = make([]bool, p.Ranks), make([]bool, p.Ranks)
	for i := range in {
		in[i] = inS[i] == seen
		out[i] = outS[i] == seen
	}
	return in, out
}
