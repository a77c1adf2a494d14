package links

import (
	"errors"
	"math"
	"slices"
)

// loss replays every group under net and returns the epoch-weighted sum of
// squared log residuals of the flows' mean FCTs; the predictions are left
// in each group's pred.
func (m *Model) loss(net *Net) float64 {
	m.evals++
	s := 0.0
	for _, g := range m.groups {
		m.rp.Replay(g.p, g.dag, g.bytes, net, nil, g.pred)
		w := float64(g.n)
		for i, lo := range g.logObs {
			d := lo - math.Log(g.pred[i])
			s += w * d * d
		}
	}
	return s
}

// weight is the number of flow observations the loss sums over.
func (m *Model) weight() float64 {
	w := 0.0
	for _, g := range m.groups {
		w += float64(g.n * len(g.logObs))
	}
	return w
}

// errNoData is returned by Refit before any observation.
var errNoData = errors.New("links: no observations to fit")

// Refit fits the model to the epochs held, starting from the previous fit.
func (m *Model) Refit() (Fit, error) {
	if len(m.obs) == 0 {
		return Fit{}, errNoData
	}
	m.evals = 0
	if m.fitted && m.explains() {
		// The links stand; the pairs' means still sharpen with every
		// epoch (under ECMP noise a pair needs a few batches to stand out).
		m.fitPairs(m.buildGroups())
		m.fit.Replays = m.evals
		return m.fit, nil
	}
	m.forgetOnChange()
	noise := m.buildGroups()
	n := m.ranks
	net := Net{Up: make([]float64, n), Down: make([]float64, n), Stepped: m.stepped}
	if m.fitted {
		copy(net.Up, m.fit.Net.Up)
		copy(net.Down, m.fit.Net.Down)
		net.Slow = slices.Clone(m.fit.Net.Slow)
		net.Alpha = m.fit.Net.Alpha
	}
	m.fitScale(&net, 0.5)
	if !m.fitted {
		m.fitScale(&net, 0.8) // most flows are not congested
	}
	cur := m.loss(&net)
	cur = m.descend(&net, cur, 4*n+8, noise, -1)
	m.fitScale(&net, 0.5)
	cur = m.fitAlpha(&net)
	cur = m.descend(&net, cur, 2*n+4, noise, -1)
	cur = m.readSlow(&net, cur, noise)

	f := Fit{Net: net, Noise: noise, Epochs: len(m.obs), Patterns: len(m.groups), RMS: m.misfit(cur, noise)}
	f.UpSE, f.DownSE = m.uncertainty(&net, cur, noise)
	f.SlowSE = m.slowUncertainty(&net, cur, noise)
	m.fit, m.fitted = f, true
	m.significant()
	m.fitPairs(noise)
	m.fit.Replays = m.evals
	return m.fit, nil
}

// misfit is the root mean square of the log residuals of the flows' mean
// FCTs at loss cur, less what the measured noise alone leaves in a mean of
// that many epochs: a flow's mean over n epochs misses its true mean by
// noise/sqrt(n) on its own, that part of the residuals is the data's, not
// the fit's. Under ECMP (noise 0.3-0.5 a flow) a fit that explains every
// pair's mean looked 15-20% off without it.
func (m *Model) misfit(cur, noise float64) float64 {
	total, flows := 0, 0
	for _, g := range m.groups {
		total += g.n * len(g.logObs)
		flows += len(g.logObs)
	}
	if total == 0 {
		return 0
	}
	return math.Sqrt(max(0, cur-noise*noise*float64(flows)) / float64(total))
}

// explains says whether the last fit still describes the newest epochs:
// their mean log FCT per flow within the measured noise of one replay of
// their pattern under it (mean squared z-score below 3, none above 6).
// Then the fit stands as it is, and a steady network costs one replay a
// batch instead of a fit.
func (m *Model) explains() bool {
	newest := m.obs[len(m.obs)-1]
	var rec []*obs
	for i := len(m.obs) - 1; i >= 0 && len(rec) < m.recent; i-- {
		o := &m.obs[i]
		if o.p == newest.p && o.bytes == newest.bytes && o.key == newest.key {
			rec = append(rec, o)
		}
	}
	if len(rec) < m.recent {
		return false
	}
	pred := make([]float64, len(newest.logFCT))
	m.evals++
	m.scale = m.pm.scales(newest.p, 0, m.scale)
	m.rp.Replay(newest.p, m.dag(newest.p), newest.bytes, &m.fit.Net, m.scale, pred)
	sd := max(m.fit.Noise, 0.01) / math.Sqrt(float64(len(rec)))
	sum := 0.0
	for f := range pred {
		mu := 0.0
		for _, o := range rec {
			mu += o.logFCT[f]
		}
		z := (mu/float64(len(rec)) - math.Log(pred[f])) / sd
		if math.Abs(z) > 6 {
			return false
		}
		sum += z * z
	}
	return sum/float64(len(pred)) < 3
}

// fitScale sets C so that the q-quantile of the flows' implied line rates
// matches: with Alpha = 0 every time scales as 1/C, so one replay at C = 1
// gives every flow's implied C.
func (m *Model) fitScale(net *Net, q float64) {
	alpha := net.Alpha
	net.C, net.Alpha = 1, 0
	m.loss(net)
	var imp []float64
	for _, g := range m.groups {
		for i, lo := range g.logObs {
			obs := math.Exp(lo) - alpha
			if obs > 0 {
				imp = append(imp, math.Log(g.pred[i])-math.Log(obs))
			}
		}
	}
	net.Alpha = alpha
	if len(imp) == 0 {
		net.C = 1
		return
	}
	slices.Sort(imp)
	net.C = math.Exp(imp[min(len(imp)-1, int(q*float64(len(imp))))])
}

// fitAlpha finds the per-flow latency by golden-section search, keeping it
// only where it explains the data better than none.
func (m *Model) fitAlpha(net *Net) float64 {
	lo := math.Inf(1)
	for _, g := range m.groups {
		for _, v := range g.logObs {
			lo = min(lo, math.Exp(v))
		}
	}
	f := func(a float64) float64 {
		net.Alpha = a
		c := net.C
		m.fitScale(net, 0.5)
		l := m.loss(net)
		net.C = c
		return l
	}
	l0 := f(0)
	best := 0.0
	if x, lx := golden(f, 0, 0.9*lo, 14); lx < l0 {
		best = x
	}
	net.Alpha = best
	m.fitScale(net, 0.5)
	return m.loss(net)
}

// golden minimises f over [a, b] by golden-section search in iters steps
// and returns the best point it evaluated and its value.
func golden(f func(float64) float64, a, b float64, iters int) (float64, float64) {
	const phi = 0.6180339887498949
	x1, x2 := b-phi*(b-a), a+phi*(b-a)
	f1, f2 := f(x1), f(x2)
	for range iters {
		if f1 < f2 {
			b, x2, f2 = x2, x1, f1
			x1 = b - phi*(b-a)
			f1 = f(x1)
		} else {
			a, x1, f1 = x1, x2, f2
			x2 = a + phi*(b-a)
			f2 = f(x2)
		}
	}
	if f1 < f2 {
		return x1, f1
	}
	return x2, f2
}

// count returns a pointer to link l's competing count: l < ranks is rank
// l's uplink, the others downlinks.
func (m *Model) count(net *Net, l int) *float64 {
	if l < m.ranks {
		return &net.Up[l]
	}
	return &net.Down[l-m.ranks]
}

// spurious is the loss reduction, in units of the measurement noise's
// variance, that a count fitted to noise alone reaches only rarely: each
// free parameter lowers the weighted squared residuals by a chi-square
// of one degree of freedom times the variance, and the descent picks the
// best of many, so the bar is well above one.
const spurious = 12

// descend is coordinate descent on the competing counts: score every link
// by the residuals of the flows that cross it, line-search the few that
// point most strongly one way, take the best improvement, repeat. The
// links of rank hold (-1: none) stay as they are.
func (m *Model) descend(net *Net, cur float64, rounds int, noise float64, hold int) float64 {
	n := m.ranks
	score := make([]float64, 2*n)
	hits := make([]float64, 2*n)
	for range rounds {
		if m.spent() {
			break
		}
		clear(score)
		clear(hits)
		m.loss(net)
		for _, g := range m.groups {
			w := float64(g.n)
			for i, lo := range g.logObs {
				fl := &g.p.Flows[i]
				d := lo - math.Log(g.pred[i])
				score[fl.Src] += w * d
				score[n+int(fl.Dst)] += w * d
				hits[fl.Src] += w
				hits[n+int(fl.Dst)] += w
			}
		}
		type cand struct {
			l int
			s float64
		}
		var cs []cand
		for l := range score {
			if hits[l] == 0 || (hold >= 0 && (l == hold || l == n+hold)) {
				continue
			}
			s := score[l] / hits[l]
			if math.Abs(s) < 0.002 {
				continue // a part in 500: below anything worth a replay
			}
			if s > 0 || *m.count(net, l) > 0 {
				cs = append(cs, cand{l, s})
			}
		}
		slices.SortFunc(cs, func(a, b cand) int { return cmpFloat(math.Abs(b.s), math.Abs(a.s)) })
		if len(cs) > 4 {
			cs = cs[:4]
		}
		bestL, bestK, bestLoss := -1, 0.0, cur
		for _, c := range cs {
			k := m.count(net, c.l)
			old := *k
			kk, ll := m.lineSearch(net, k, c.s)
			*k = old
			if ll < bestLoss {
				bestL, bestK, bestLoss = c.l, kk, ll
			}
		}
		if bestL < 0 || cur-bestLoss < max(1e-3*cur, 1e-8*m.weight(), spurious*noise*noise) {
			break
		}
		*m.count(net, bestL) = bestK
		cur = bestLoss
	}
	return cur
}

// lineSearch minimises the loss over one count, starting from a guess the
// mean residual s of its flows gives (a flow sharing with one other of its
// own sees its time grow by (1+k)/1 ... roughly k' = (k+1)e^s - 1).
func (m *Model) lineSearch(net *Net, k *float64, s float64) (float64, float64) {
	old := *k
	guess := max(0, (old+1)*math.Exp(s)-1)
	try := func(v float64) float64 {
		*k = max(v, 0)
		return m.loss(net)
	}
	bestK, bestL := old, math.Inf(1)
	for _, v := range []float64{guess, 0, (old + guess) / 2, guess * 1.5, guess + 1} {
		if l := try(v); l < bestL {
			bestK, bestL = max(v, 0), l
		}
	}
	// golden refinement around the best point
	if x, lx := golden(try, max(0, bestK-max(0.5, bestK/2)), bestK+max(0.5, bestK/2), 8); lx < bestL {
		bestK, bestL = x, lx
	}
	*k = old
	return bestK, bestL
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// uncertainty is each count's standard error from the loss's curvature,
// the loss read as a chi-square with the measured noise (or, without
// repeated epochs, the fit's own residual spread).
func (m *Model) uncertainty(net *Net, cur, noise float64) (up, down []float64) {
	n := m.ranks
	up, down = make([]float64, n), make([]float64, n)
	v := m.variance(cur, noise)
	for l := 0; l < 2*n; l++ {
		k := m.count(net, l)
		if *k < 0.01 {
			continue // a count of zero is never significant: no replays for it
		}
		se := m.stdErr(net, k, cur, v, 0.25)
		if l < n {
			up[l] = se
		} else {
			down[l-n] = se
		}
	}
	return up, down
}

// stdErr is the standard error of the parameter k points to, at loss cur
// and observation variance v, from the loss's curvature over a step of a
// quarter of it, at least least.
func (m *Model) stdErr(net *Net, k *float64, cur, v, least float64) float64 {
	old := *k
	h := max(least, old/4)
	*k = old + h
	lp := m.loss(net)
	lm := cur
	if old-h >= 0 {
		*k = old - h
		lm = m.loss(net)
	} else {
		// one-sided at the boundary: curvature from k, k+h, k+2h
		*k = old + 2*h
		l2 := m.loss(net)
		lm = 2*lp - l2
		lm = max(lm, cur)
	}
	*k = old
	curv := (lp - 2*cur + lm) / (h * h) / v
	if curv <= 0 {
		return math.Inf(1)
	}
	return math.Sqrt(2 / curv)
}

// variance is the variance of one flow observation's log FCT that the
// loss is read against: the measured noise's or, without repeated epochs,
// the fit's own residual spread (loss cur).
func (m *Model) variance(cur, noise float64) float64 {
	v := noise * noise
	if w := m.weight(); v == 0 && w > 0 {
		v = cur / w
	}
	return max(v, 1e-6) // a floor: no fit is better than a part in a thousand
}

// significant keeps the counts that stand out of their uncertainty.
func (m *Model) significant() {
	n := m.ranks
	m.sig = Net{C: m.fit.Net.C, Alpha: m.fit.Net.Alpha, Up: make([]float64, n), Down: make([]float64, n), Stepped: m.stepped}
	if m.fit.Net.Slow != nil {
		m.sig.Slow = make([]float64, 2*n)
		for l, x := range m.fit.Net.Slow {
			if Significant(x, m.fit.SlowSE[l]) {
				m.sig.Slow[l] = x
			}
		}
	}
	for r := 0; r < n; r++ {
		if k := m.fit.Net.Up[r]; Significant(k, m.fit.UpSE[r]) {
			m.sig.Up[r] = k
		}
		if k := m.fit.Net.Down[r]; Significant(k, m.fit.DownSE[r]) {
			m.sig.Down[r] = k
		}
	}
}

// Significant says whether a competing count k with standard error se is
// evidence of congestion: at least a fifth of a flow and four standard
// errors above zero.
func Significant(k, se float64) bool { return k >= 0.2 && k > 4*se }
