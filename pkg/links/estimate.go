package links

import (
	"github.com/react-torch/react-torch/pkg/critpath"
	"github.com/react-torch/react-torch/pkg/ten"
)

// Estimator is the quick judgement of a pattern that screens many
// candidates before the replay judges the few that look best. Its scratch
// space is reused across calls; it is not safe for concurrent use.
type Estimator struct {
	in, out []int32   // flows into / out of a rank at a step, index step*ranks+rank
	load    []float64 // bytes through each rank's uplink, then downlink
	w, fin  []float64
	ready   []float64 // stepped: when each rank has finished its latest step
	order   []int32   // stepped: flows by step
	at      []int32
}

// Estimate judges p under net as Replay would, for a message of bytes
// bytes whose flow f carries Fraction*bytes*scale[f] bytes (scale nil: 1),
// but quickly: every flow runs from start to end at the rate its busier
// link gives it when that link is shared equally by the flows of its step
// on it and the link's competing flows, and starts when its inputs have
// arrived (Stepped: when both its ends have finished their previous step);
// no link carries its bytes faster than its share beside its competing
// flows when its busiest step's flows run together. It ignores how the sharing changes as flows come and go, so it
// ranks patterns and is not a prediction. It costs O(flows), a small part
// of a replay. dag must be critpath.New(p) unless net.Stepped.
func (e *Estimator) Estimate(p *ten.Pattern, dag *critpath.DAG, bytes float64, net *Net, scale []float64) float64 {
	n, nf, steps := p.Ranks, len(p.Flows), p.Steps()
	e.in = grow(e.in, (steps+1)*n)
	e.out = grow(e.out, (steps+1)*n)
	clear(e.in)
	clear(e.out)
	for i := range p.Flows {
		f := &p.Flows[i]
		e.out[int(f.Step)*n+int(f.Src)]++
		e.in[int(f.Step)*n+int(f.Dst)]++
	}
	e.w = grow(e.w, nf)
	e.load = grow(e.load, 2*n)
	clear(e.load)
	for i := range p.Flows {
		f := &p.Flows[i]
		b := f.Fraction * bytes
		if scale != nil {
			b *= scale[i]
		}
		share := max((net.Up[f.Src]+float64(e.out[int(f.Step)*n+int(f.Src)]))/net.rate(int(f.Src)),
			(net.Down[f.Dst]+float64(e.in[int(f.Step)*n+int(f.Dst)]))/net.rate(n+int(f.Dst)))
		e.w[i] = b*share + net.Alpha
		e.load[f.Src] += b
		e.load[n+int(f.Dst)] += b
	}
	bound := 0.0
	for r := 0; r < n; r++ {
		mu, md := int32(1), int32(1) // most flows of one step on the link
		for st := 1; st <= steps; st++ {
			mu, md = max(mu, e.out[st*n+r]), max(md, e.in[st*n+r])
		}
		bound = max(bound, e.load[r]*(1+net.Up[r]/float64(mu))/net.rate(r), e.load[n+r]*(1+net.Down[r]/float64(md))/net.rate(n+r))
	}
	e.fin = grow(e.fin, nf)
	if !net.Stepped {
		return max(bound, dag.Finish(e.w, e.fin))
	}
	// Stepped: the flows of a step start together once both ends are free.
	e.at = grow(e.at, steps+2)
	clear(e.at)
	for i := range p.Flows {
		e.at[p.Flows[i].Step+1]++
	}
	for s := 1; s < len(e.at); s++ {
		e.at[s] += e.at[s-1]
	}
	e.order = grow(e.order, nf)
	for i := range p.Flows {
		s := p.Flows[i].Step
		e.order[e.at[s]] = int32(i)
		e.at[s]++
	}
	e.ready = grow(e.ready, n)
	clear(e.ready)
	mk := 0.0
	for k := 0; k < nf; {
		s := p.Flows[e.order[k]].Step
		j := k
		for ; j < nf && p.Flows[e.order[j]].Step == s; j++ {
			f := &p.Flows[e.order[j]]
			e.fin[e.order[j]] = max(e.ready[f.Src], e.ready[f.Dst]) + e.w[e.order[j]]
		}
		for _, g := range e.order[k:j] {
			f := &p.Flows[g]
			e.ready[f.Src] = max(e.ready[f.Src], e.fin[g])
			e.ready[f.Dst] = max(e.ready[f.Dst], e.fin[g])
			mk = max(mk, e.fin[g])
		}
		k = j
	}
	return max(bound, mk)
}
