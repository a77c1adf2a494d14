package links

import "math"

// Link is one rank's uplink (Down false) or downlink.
type Link struct {
	Rank int
	Down bool
}

// chi2One95 is the 95% quantile of a chi-square of one degree of freedom:
// a loss, in units of the noise's variance, that one parameter moved
// elsewhere may add and still explain the observations as well.
const chi2One95 = 3.841

// Ambiguous lists the links that explain what l's load (its competing
// count and its slowness) explains: moving l's load to zero and refitting
// the other link's count leaves the loss within chi2One95 noise variances
// of the fit's. Flows
// a->b load up[a] and down[b] alike; unless the patterns seen send a's
// flows to several ranks, or several ranks' flows to b, concurrently, the
// observations cannot tell the two apart, and a report that named one
// would send an operator to the wrong switch. Only links that carry a
// flow with l are tried. It replays the held epochs a few times per
// candidate; nil before a fit or for a link with no load.
func (m *Model) Ambiguous(l Link) []Link {
	if !m.fitted || l.Rank < 0 || l.Rank >= m.ranks {
		return nil
	}
	net := m.fit.Net.clone()
	li := m.linkIndex(l)
	k := m.count(&net, li)
	var s *float64 // l's slowness, where it reads slow
	if net.Slow != nil {
		s = &net.Slow[li]
	}
	load := net.Load(l.Rank, l.Down)
	if load < 0.01 {
		return nil
	}
	cur := m.loss(&net)
	v := m.variance(cur, m.fit.Noise)
	old := *k
	*k = 0
	if s != nil {
		*s = 0
	}
	var out []Link
	for _, o := range m.sharing(l) {
		oi := m.linkIndex(o)
		ok := m.count(&net, oi)
		was := *ok
		// the other link takes what l carried: as a guess, its count grown
		// by l's, refined by the line search
		_, best := m.lineSearch(&net, ok, math.Log((was+load+1)/(was+1)))
		*ok = was
		if best-cur < chi2One95*v {
			out = append(out, o)
		}
	}
	*k = old
	return out
}

// linkIndex is l's index in count's numbering.
func (m *Model) linkIndex(l Link) int {
	if l.Down {
		return m.ranks + l.Rank
	}
	return l.Rank
}

// sharing lists the links other than l that carry at least one flow with
// l in the patterns held, uplinks first, each in rank order.
func (m *Model) sharing(l Link) []Link {
	up, down := make([]bool, m.ranks), make([]bool, m.ranks)
	for _, g := range m.groups {
		for _, f := range g.p.Flows {
			if f.Src == f.Dst {
				continue
			}
			if (!l.Down && int(f.Src) == l.Rank) || (l.Down && int(f.Dst) == l.Rank) {
				up[f.Src], down[f.Dst] = true, true
			}
		}
	}
	if l.Down {
		down[l.Rank] = false
	} else {
		up[l.Rank] = false
	}
	var out []Link
	for r, on := range up {
		if on {
			out = append(out, Link{Rank: r})
		}
	}
	for r, on := range down {
		if on {
			out = append(out, Link{Rank: r, Down: true})
		}
	}
	return out
}
