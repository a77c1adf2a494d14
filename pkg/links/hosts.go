package links

import (
	"math"
	"slices"
)

// SlowHost is a rank that the held epochs show slow itself rather than
// its links congested. Kind says how: "slow", its flows carry as if
// Factor times their bytes (Net.Host: a NIC or a bus slower than its
// peers'); "busy", its sends and receives share its host with Busy
// competing flows (Net.Shared: a CPU that a busy process shares with
// them). Either way its receives may take longer still, beside a count
// on its downlink: a receive does a reduce's work, and a busy CPU stamps
// it late. Send and Receive are what its sends and its receives take
// against the links without it (geometric means over its flows of the
// held patterns).
type SlowHost struct {
	Rank          int
	Kind          string
	Factor        float64 // over all its flows
	SE            float64 // of Factor
	Send, Receive float64
	Busy          float64
}

// hostRounds bounds the descent of a reading's other counts: those its
// flows' peers carried for the fit's miss of it, a few.
const hostRounds = 8

// maxHostChecks bounds the ranks read as hosts in one call, the most
// loaded first: each costs a few line searches and rounds of descent.
const maxHostChecks = 8

// SlowHosts reads again every rank whose uplink and downlink both carry a
// significant count (the 8 most loaded, within hostBudget): as a host that
// is slow or busy (SlowHost) rather than as competing flows on its two
// links. Each reading has two parameters, as the two counts have; it is
// fitted afresh with the counts of the ranks the host's flows go to and
// come from (which made up for the fit's miss of it), the line rate and
// the latency, and the better one is named where it explains the held
// epochs better than the counts by chi2One95 noise variances, its
// slowness stands out of its own uncertainty and its sends and receives
// are slowed alike. Concurrency tells them apart: a congested link slows
// a rank's two concurrent flows less than twice its one, a slow host
// twice, and a busy host's sends slow its receives. Where they explain the epochs alike the links stand: they are
// what the tuner acts on. The fit and the judge are left as they are. nil
// before a fit or where no rank reads as a host.
func (m *Model) SlowHosts() []SlowHost {
	if !m.fitted {
		return nil
	}
	n := m.ranks
	net := m.fit.Net.clone()
	net.Host, net.Shared = make([]float64, n), make([]float64, n)
	// Links read as slow are judged as counts here, as their lone flows
	// see them: a host slow both ways is what the user is told, whichever
	// of the two link readings the judge takes.
	for r := range n {
		net.Up[r], net.Down[r] = net.Load(r, false), net.Load(r, true)
	}
	net.Slow = nil
	cur := m.loss(&net)
	v := m.variance(cur, m.fit.Noise)
	type cand struct {
		r    int
		load float64
	}
	var cs []cand
	for r := 0; r < n; r++ {
		if m.sig.Load(r, false) > 0 && m.sig.Load(r, true) > 0 { // both significant
			cs = append(cs, cand{r, min(net.Load(r, false), net.Load(r, true))})
		}
	}
	slices.SortStableFunc(cs, func(a, b cand) int { return cmpFloat(b.load, a.load) })
	var out []SlowHost
	work := m.evals
	for _, c := range cs[:min(len(cs), maxHostChecks)] {
		if (m.evals-work)*m.flowsHeld() > hostBudget {
			break
		}
		r := c.r
		was := net.clone()
		type reading struct {
			net  Net
			loss float64
			kind int
		}
		// the busy reading must explain more by a noise variance: where
		// the patterns cannot tell them apart the host is named slow
		best := reading{loss: math.Inf(1)}
		for _, kind := range []int{readSlow, readBusy} {
			net = was.clone()
			if l := m.readHost(&net, r, kind); l < best.loss-v {
				best = reading{net.clone(), l, kind}
			}
		}
		net = best.net
		h := m.hostLoad(&net, r)
		h.SE = m.hostSE(&net, r, best.kind, best.loss, v, h.Factor)
		if best.loss < cur-chi2One95*v && h.Factor-1 > 4*h.SE && h.Factor >= 1.2 && alike(h.Send, h.Receive) {
			out = append(out, h)
			cur = best.loss
			continue
		}
		net = was
	}
	slices.SortFunc(out, func(a, b SlowHost) int { return a.Rank - b.Rank })
	return out
}

// alike says whether a host's sends and receives are slowed alike: the
// slower side by at most the square of the other's factor. Where its
// receives alone take the most, the downlink is the likelier cause: on
// the testbed, two external flows into a rank slow its receives x2.4 and,
// through the acknowledgements queued behind them, its sends x1.4, which
// a busy host explains better than the counts; a CPU-starved rank's sends
// took x20-30, its receives x40-60.
func alike(send, receive float64) bool {
	lo, hi := math.Log(min(send, receive)), math.Log(max(send, receive))
	return lo >= hi/2
}

// The readings readHost tries: the slowness a slow host's or a busy
// host's, with what its receives take beyond it on its downlink.
const (
	readSlow = iota
	readBusy
)

// hostBudget bounds the work of one call's readings, in flows replayed:
// every candidate of an 8- or 64-rank group, one or two of 1024 ranks,
// where a reading costs about a second.
const hostBudget = 8_000_000

// flowsHeld is the flows one loss replays.
func (m *Model) flowsHeld() int {
	f := 0
	for _, g := range m.groups {
		f += len(g.p.Flows)
	}
	return f
}

// readHost reads rank r of net one way (readSlow, readBusy): its counts go,
// and those of the ranks its flows go to or come from, which made up for
// the fit's miss of r (a descent from them stops on their hill); the
// reading's main parameter is line-searched, the line rate and those
// counts fitted again under it (r's links held), then the second
// parameter, the latency, and both refined. It returns the loss.
func (m *Model) readHost(net *Net, r, kind int) float64 {
	k := max(net.Up[r], net.Down[r])
	for _, g := range m.groups {
		for _, f := range g.p.Flows {
			if int(f.Src) == r || int(f.Dst) == r {
				net.Up[f.Src], net.Down[f.Src], net.Up[f.Dst], net.Down[f.Dst] = 0, 0, 0, 0
			}
		}
	}
	ps := m.hostParams(net, r, kind, k)
	search := func(q hostParam, lo, hi float64, iters int, cur float64) float64 {
		try := func(x float64) float64 {
			*q.p = max(x, 0)
			return m.loss(net)
		}
		old := *q.p
		if x, lx := golden(try, lo, hi, iters); lx < cur {
			*q.p = max(x, 0)
			return lx
		}
		*q.p = old
		return cur
	}
	refine := func(cur float64, rounds, iters int, part float64) float64 {
		for range rounds {
			for _, q := range [2]hostParam{ps[1], ps[0]} {
				x := *q.p
				cur = search(q, max(0, x-max(q.w, x*part)), x+max(q.w, x*part), iters, cur)
			}
		}
		return cur
	}
	search(ps[0], 0, ps[0].hi, 14, m.loss(net))
	m.fitScale(net, 0.5)
	cur := m.descend(net, m.loss(net), hostRounds, m.fit.Noise, r)
	cur = search(ps[1], 0, ps[1].hi, 14, cur)
	cur = search(ps[0], 0, ps[0].hi, 14, cur)
	cur = min(cur, m.fitAlpha(net))
	cur = refine(cur, 2, 10, 0.5)
	cur = m.descend(net, cur, hostRounds/2, m.fit.Noise, r)
	return refine(cur, 1, 8, 0.25)
}

// hostParam is one parameter of a reading: where it lives, its search's
// upper end, its refinement's least half-width and the curvature's least
// step.
type hostParam struct {
	p        *float64
	hi, w, h float64
}

// hostParams are the two parameters of reading kind of rank r in net,
// whose larger count was k.
func (m *Model) hostParams(net *Net, r, kind int, k float64) [2]hostParam {
	if kind == readBusy {
		return [2]hostParam{{&net.Shared[r], 2*k + 1, 0.05, 0.25}, {&net.Down[r], k + 1, 0.05, 0.25}}
	}
	return [2]hostParam{{&net.Host[r], 2*k + 1, 0.05, 0.05}, {&net.Down[r], k + 1, 0.05, 0.25}}
}

// hostSE is the standard error of reading kind's slowness of rank r in
// net (at loss cur), as a factor: its main parameter's, scaled for a busy
// host by the factor its count makes (hostLoad's).
func (m *Model) hostSE(net *Net, r, kind int, cur, v, factor float64) float64 {
	main := m.hostParams(net, r, kind, 0)[0]
	x := *main.p
	se := m.stdErr(net, main.p, cur, v, main.h)
	if kind == readBusy && x > 0 {
		se *= (factor - 1) / x
	}
	return se
}

// hostLoad describes rank r's host terms in net (SlowHost): a slow
// host's by its factors, a busy one's by its flows' predicted times with
// them against without.
func (m *Model) hostLoad(net *Net, r int) SlowHost {
	if net.Shared[r] == 0 {
		return SlowHost{Rank: r, Kind: "slow", Factor: 1 + net.Host[r], Send: (1 + net.Host[r]) * (1 + net.Up[r]), Receive: (1 + net.Host[r]) * (1 + net.Down[r])}
	}
	h := SlowHost{Rank: r, Kind: "busy", Busy: net.Shared[r]}
	bare := net.clone()
	bare.Shared[r], bare.Up[r], bare.Down[r] = 0, 0, 0
	var with, without []float64
	var ls, lr, ns, nr float64
	for _, g := range m.groups {
		with, without = grow(with, len(g.p.Flows)), grow(without, len(g.p.Flows))
		m.rp.Replay(g.p, g.dag, g.bytes, net, nil, with)
		m.rp.Replay(g.p, g.dag, g.bytes, &bare, nil, without)
		for i, f := range g.p.Flows {
			d := math.Log(with[i] / without[i])
			if int(f.Src) == r && f.Dst != f.Src {
				ls += d
				ns++
			}
			if int(f.Dst) == r && f.Dst != f.Src {
				lr += d
				nr++
			}
		}
	}
	h.Send, h.Receive, h.Factor = 1, 1, 1
	if ns > 0 {
		h.Send = math.Exp(ls / ns)
	}
	if nr > 0 {
		h.Receive = math.Exp(lr / nr)
	}
	if ns+nr > 0 {
		h.Factor = math.Exp((ls + lr) / (ns + nr))
	}
	return h
}
