// Package links learns, from flow completion times alone, what each rank's
// links can carry, and predicts how long a whole pattern would take on
// them. It is the tuner's judge: a candidate pattern's time is its
// dependency DAG replayed through the learned links with fair sharing
// (Replayer), so that a transform is judged by what it does to the whole
// collective, concurrency included, rather than by a per-flow estimate.
//
// # What is learned
//
// Every rank has an uplink and a downlink of one line rate C, each shared
// with a real-valued count of competing flows (Net). A count is what
// concurrency reveals: a congested uplink slows a rank's two concurrent
// sends less than twice as much as its single one, a slow link does not.
// What the rank links cannot explain is kept per (src, dst) pair as a
// residual factor: path (fabric) congestion, and with ECMP its variability
// across epochs. Every count has an uncertainty from the curvature of the
// fit, and only counts and residuals that stand out of the measured noise
// are used to predict (Significant), so that noise predicts no gain.
//
// The model knows no topology and runs no simulator; it is fitted by
// coordinate descent against replays of the patterns it observed. One model
// serves a process group: links belong to hosts, not to collectives, so the
// FCTs of every collective (key) of the group feed it, and a key seen for
// the first time is judged by what the group already knows.
package links

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/react-torch/react-torch/pkg/critpath"
	"github.com/react-torch/react-torch/pkg/ten"
)

// obs is one epoch of one key; seq orders the epochs of all keys.
type obs struct {
	key, epoch, seq int
	p               *ten.Pattern
	bytes           float64
	fct             []float64
}

// group is every kept epoch that ran one pattern at one size: the fit's
// unit of data.
type group struct {
	p      *ten.Pattern
	dag    *critpath.DAG
	bytes  float64
	n      int       // epochs
	logObs []float64 // mean log FCT per flow
	pred   []float64 // scratch: predicted FCTs
}

// Pair is a residual of one (src, dst) pair: its flows take Factor times
// what the rank links explain, with standard error SE on log(Factor).
type Pair struct {
	Src, Dst int32
	Factor   float64
	SE       float64
	N        int // flow observations behind it
}

// Fit is the state of the model after a fit.
type Fit struct {
	Net Net // every fitted parameter
	// UpSE and DownSE are the standard errors of the competing counts.
	UpSE, DownSE []float64
	// Noise is the standard deviation of one flow's log FCT from epoch to
	// epoch around its mean (pooled over flows): the measurement noise.
	Noise float64
	// RMS is the root mean square of the log residuals of the flows' mean
	// FCTs after the fit: how well the model explains what it saw.
	RMS   float64
	Pairs []Pair // significant residuals only
	// Epochs and Patterns count the data behind the fit.
	Epochs, Patterns int
	Replays          int // replays the fit cost
}

// Model is one process group's link model. It is not safe for concurrent
// use.
type Model struct {
	ranks, h int
	recent   int // epochs that form the change-point test's newest part
	seq      int
	obs      []obs
	last     map[int]int // newest epoch per key
	dags     map[*ten.Pattern]*critpath.DAG

	fit    Fit
	fitted bool
	sig    Net // the significant part of fit.Net, used to predict
	pairs  map[[2]int32]float64
	rp     Replayer
	groups []*group
	evals  int
}

// NewModel makes the model of a group of ranks that keeps the last h
// epochs of every key, and forgets all but the last recent epochs when they
// differ significantly from the ones before (the network changed).
func NewModel(ranks, h, recent int) (*Model, error) {
	if ranks < 1 {
		return nil, fmt.Errorf("links: %d ranks, want >= 1", ranks)
	}
	if h < 1 {
		return nil, fmt.Errorf("links: history of %d epochs, want >= 1", h)
	}
	if recent < 1 || recent > h {
		return nil, fmt.Errorf("links: change-point window of %d epochs, want in [1, %d]", recent, h)
	}
	return &Model{ranks: ranks, h: h, recent: recent, last: map[int]int{}, dags: map[*ten.Pattern]*critpath.DAG{}}, nil
}

// Observe adds one epoch of key: the pattern it ran (which must not be
// modified afterwards), the message size and every flow's FCT in seconds.
// Epochs of a key must increase; those older than h epochs are forgotten.
func (m *Model) Observe(key, epoch int, p *ten.Pattern, bytes float64, fct []float64) error {
	if p.Ranks != m.ranks {
		return fmt.Errorf("links: pattern of %d ranks in a model of %d", p.Ranks, m.ranks)
	}
	if len(fct) != len(p.Flows) {
		return fmt.Errorf("links: key %d epoch %d: %d FCTs for %d flows", key, epoch, len(fct), len(p.Flows))
	}
	if !(bytes > 0) || math.IsInf(bytes, 0) {
		return fmt.Errorf("links: key %d epoch %d: message of %v bytes", key, epoch, bytes)
	}
	for i, v := range fct {
		if !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("links: key %d epoch %d flow %d: FCT %v, want a positive finite time", key, epoch, i, v)
		}
	}
	if e, ok := m.last[key]; ok && epoch <= e {
		return fmt.Errorf("links: key %d: epoch %d after epoch %d", key, epoch, e)
	}
	m.last[key] = epoch
	m.seq++
	m.obs = append(m.obs, obs{key: key, epoch: epoch, seq: m.seq, p: p, bytes: bytes, fct: slices.Clone(fct)})
	k := 0
	for _, o := range m.obs {
		if o.epoch > m.last[o.key]-m.h {
			m.obs[k] = o
			k++
		}
	}
	clear(m.obs[k:])
	m.obs = m.obs[:k]
	return nil
}

// Epochs is the number of epochs held.
func (m *Model) Epochs() int { return len(m.obs) }

func (m *Model) dag(p *ten.Pattern) *critpath.DAG {
	d, ok := m.dags[p]
	if !ok {
		d = critpath.New(p)
		m.dags[p] = d
	}
	return d
}

// buildGroups collects the kept epochs by (pattern, size) and measures the
// epoch-to-epoch noise.
func (m *Model) buildGroups() (noise float64) {
	type gk struct {
		p     *ten.Pattern
		bytes float64
	}
	idx := map[gk]*group{}
	m.groups = m.groups[:0]
	for _, o := range m.obs {
		g := idx[gk{o.p, o.bytes}]
		if g == nil {
			g = &group{p: o.p, dag: m.dag(o.p), bytes: o.bytes, logObs: make([]float64, len(o.fct)), pred: make([]float64, len(o.fct))}
			idx[gk{o.p, o.bytes}] = g
			m.groups = append(m.groups, g)
		}
		g.n++
		for i, v := range o.fct {
			g.logObs[i] += math.Log(v)
		}
	}
	for _, g := range m.groups {
		for i := range g.logObs {
			g.logObs[i] /= float64(g.n)
		}
	}
	// pooled within-group variance of log FCT
	ss, dof := 0.0, 0
	for _, o := range m.obs {
		g := idx[gk{o.p, o.bytes}]
		if g.n < 2 {
			continue
		}
		for i, v := range o.fct {
			d := math.Log(v) - g.logObs[i]
			ss += d * d
		}
	}
	for _, g := range m.groups {
		if g.n >= 2 {
			dof += (g.n - 1) * len(g.logObs)
		}
	}
	// drop patterns no longer observed
	for p := range m.dags {
		if !slices.ContainsFunc(m.groups, func(g *group) bool { return g.p == p }) {
			delete(m.dags, p)
		}
	}
	if dof == 0 {
		return 0
	}
	return math.Sqrt(ss / float64(dof))
}

// changeZ is the bar of the change-point test: the mean squared z-score
// of the flows' shifts, or any one flow's |z|, beyond which the newest
// epochs no longer belong with the older ones.
const changeZ = 5

// forgetOnChange compares, for the pattern and size of the newest epoch,
// the last recent epochs with the older ones flow by flow (z-scores of the
// shift of mean log FCT); when the network has moved, everything older
// than the recent epochs is forgotten, so that the fit describes the
// network as it is rather than an average of before and after.
func (m *Model) forgetOnChange() {
	if len(m.obs) == 0 {
		return
	}
	newest := m.obs[len(m.obs)-1]
	var old, rec []*obs
	for i := range m.obs {
		o := &m.obs[i]
		if o.p != newest.p || o.bytes != newest.bytes || o.key != newest.key {
			continue
		}
		if o.seq > newest.seq-m.recent*m.keys() {
			rec = append(rec, o)
		} else {
			old = append(old, o)
		}
	}
	if len(rec) < 2 || len(old) < 2 {
		return
	}
	nf := len(newest.fct)
	stat := func(part []*obs, f int) (float64, float64) {
		s, ss := 0.0, 0.0
		for _, o := range part {
			v := math.Log(o.fct[f])
			s += v
			ss += v * v
		}
		n := float64(len(part))
		mu := s / n
		return mu, max(0, ss/n-mu*mu) * n / (n - 1)
	}
	sumZ2, maxZ := 0.0, 0.0
	for f := 0; f < nf; f++ {
		mo, vo := stat(old, f)
		mr, vr := stat(rec, f)
		se := math.Sqrt(vo/float64(len(old)) + vr/float64(len(rec)))
		se = max(se, 0.005*math.Sqrt(1/float64(len(old))+1/float64(len(rec))))
		z := (mr - mo) / se
		sumZ2 += z * z
		maxZ = max(maxZ, math.Abs(z))
	}
	if sumZ2/float64(nf) < changeZ && maxZ < 2*changeZ {
		return
	}
	first := rec[0].seq
	k := 0
	for _, o := range m.obs {
		if o.seq >= first {
			m.obs[k] = o
			k++
		}
	}
	clear(m.obs[k:])
	m.obs = m.obs[:k]
}

// keys is the number of keys seen.
func (m *Model) keys() int { return max(1, len(m.last)) }

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
	m.forgetOnChange()
	noise := m.buildGroups()
	n := m.ranks
	net := Net{Up: make([]float64, n), Down: make([]float64, n)}
	if m.fitted {
		copy(net.Up, m.fit.Net.Up)
		copy(net.Down, m.fit.Net.Down)
		net.Alpha = m.fit.Net.Alpha
	}
	m.fitScale(&net, 0.5)
	if !m.fitted {
		m.fitScale(&net, 0.8) // most flows are not congested
	}
	cur := m.loss(&net)
	cur = m.descend(&net, cur, 4*n+8, noise)
	m.fitScale(&net, 0.5)
	cur = m.fitAlpha(&net)
	cur = m.descend(&net, cur, 2*n+4, noise)

	f := Fit{Net: net, Noise: noise, Epochs: len(m.obs), Patterns: len(m.groups)}
	total := 0
	for _, g := range m.groups {
		total += g.n * len(g.logObs)
	}
	if total > 0 {
		f.RMS = math.Sqrt(cur / float64(total))
	}
	f.UpSE, f.DownSE = m.uncertainty(&net, cur, noise)
	m.fit, m.fitted = f, true
	m.significant()
	m.residuals(noise)
	m.fit.Replays = m.evals
	return m.fit, nil
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
	a, b := 0.0, 0.9*lo
	l0 := f(0)
	const phi = 0.6180339887498949
	x1, x2 := b-phi*(b-a), a+phi*(b-a)
	f1, f2 := f(x1), f(x2)
	for range 14 {
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
	best, bl := 0.0, l0
	if x := (a + b) / 2; f(x) < bl {
		best = x
	}
	net.Alpha = best
	m.fitScale(net, 0.5)
	return m.loss(net)
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
// point most strongly one way, take the best improvement, repeat.
func (m *Model) descend(net *Net, cur float64, rounds int, noise float64) float64 {
	n := m.ranks
	score := make([]float64, 2*n)
	hits := make([]float64, 2*n)
	for range rounds {
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
			if hits[l] == 0 {
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
	a, b := max(0, bestK-max(0.5, bestK/2)), bestK+max(0.5, bestK/2)
	const phi = 0.6180339887498949
	x1, x2 := b-phi*(b-a), a+phi*(b-a)
	f1, f2 := try(x1), try(x2)
	for range 8 {
		if f1 < f2 {
			b, x2, f2 = x2, x1, f1
			x1 = b - phi*(b-a)
			f1 = try(x1)
		} else {
			a, x1, f1 = x1, x2, f2
			x2 = a + phi*(b-a)
			f2 = try(x2)
		}
	}
	for _, c := range [][2]float64{{x1, f1}, {x2, f2}} {
		if c[1] < bestL {
			bestK, bestL = c[0], c[1]
		}
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
	total := 0.0
	for _, g := range m.groups {
		total += float64(g.n * len(g.logObs))
	}
	v := noise * noise
	if v == 0 && total > 0 {
		v = cur / total
	}
	v = max(v, 1e-6) // a floor: no fit is better than a part in a thousand
	for l := 0; l < 2*n; l++ {
		k := m.count(net, l)
		old := *k
		h := max(0.25, old/4)
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
		se := math.Inf(1)
		if curv > 0 {
			se = math.Sqrt(2 / curv)
		}
		if l < n {
			up[l] = se
		} else {
			down[l-n] = se
		}
	}
	return up, down
}

// significant keeps the counts that stand out of their uncertainty.
func (m *Model) significant() {
	n := m.ranks
	m.sig = Net{C: m.fit.Net.C, Alpha: m.fit.Net.Alpha, Up: make([]float64, n), Down: make([]float64, n)}
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

// residuals measures, per (src, dst) pair, what the significant links do
// not explain, and keeps the pairs whose factor stands out of the noise.
func (m *Model) residuals(noise float64) {
	type acc struct {
		sum float64
		n   int
	}
	byPair := map[[2]int32]*acc{}
	for _, g := range m.groups {
		m.rp.Replay(g.p, g.dag, g.bytes, &m.fit.Net, nil, g.pred)
		for i, lo := range g.logObs {
			fl := &g.p.Flows[i]
			k := [2]int32{fl.Src, fl.Dst}
			a := byPair[k]
			if a == nil {
				a = &acc{}
				byPair[k] = a
			}
			a.sum += float64(g.n) * (lo - math.Log(g.pred[i]))
			a.n += g.n
		}
	}
	m.pairs = map[[2]int32]float64{}
	m.fit.Pairs = m.fit.Pairs[:0]
	sd := max(noise, 0.01)
	keys := make([][2]int32, 0, len(byPair))
	means := make([]float64, 0, len(byPair))
	for k, a := range byPair {
		keys = append(keys, k)
		means = append(means, a.sum/float64(a.n))
	}
	// A residual common to every pair is the line rate's error, not a path.
	slices.Sort(means)
	center := 0.0
	if len(means) > 0 {
		center = means[len(means)/2]
	}
	slices.SortFunc(keys, func(a, b [2]int32) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	for _, k := range keys {
		a := byPair[k]
		mean := a.sum/float64(a.n) - center
		se := sd / math.Sqrt(float64(a.n))
		// Only slow pairs count: a pair faster than its links is the link
		// fit being wrong, not a path, and would lure flows onto it. There
		// are many more pairs than links, hence the higher bar.
		if mean < 0.1 || mean < 5*se {
			continue
		}
		f := math.Exp(min(mean, math.Log(8)))
		m.pairs[k] = f
		m.fit.Pairs = append(m.fit.Pairs, Pair{Src: k[0], Dst: k[1], Factor: f, SE: se, N: a.n})
	}
}

// Fitted returns the last fit and whether there was one.
func (m *Model) Fitted() (Fit, bool) { return m.fit, m.fitted }

// Predictor judges patterns with the significant part of a fit. It holds
// its own scratch space, so several predictors of one model may run side
// by side; it does not change when the model is refitted.
type Predictor struct {
	net   Net
	pairs map[[2]int32]float64
	rp    Replayer
	scale []float64
	fct   []float64
}

// Predictor returns a judge of the current fit; nil before any fit.
func (m *Model) Predictor() *Predictor {
	if !m.fitted {
		return nil
	}
	return &Predictor{net: m.sig, pairs: m.pairs}
}

// Cautious returns a judge that believes in every significant count and
// residual z standard errors less than the fit does: a gain it still
// predicts does not rest on the fit's uncertainty.
func (m *Model) Cautious(z float64) *Predictor {
	if !m.fitted {
		return nil
	}
	n := m.ranks
	net := Net{C: m.sig.C, Alpha: m.sig.Alpha, Up: make([]float64, n), Down: make([]float64, n)}
	for r := 0; r < n; r++ {
		if m.sig.Up[r] > 0 {
			net.Up[r] = max(0, m.sig.Up[r]-z*m.fit.UpSE[r])
		}
		if m.sig.Down[r] > 0 {
			net.Down[r] = max(0, m.sig.Down[r]-z*m.fit.DownSE[r])
		}
	}
	pairs := map[[2]int32]float64{}
	for _, p := range m.fit.Pairs {
		if v := math.Log(p.Factor) - z*p.SE; v > 0 {
			pairs[[2]int32{p.Src, p.Dst}] = math.Exp(v)
		}
	}
	return &Predictor{net: net, pairs: pairs}
}

// Time predicts the collective time of p for a message of bytes; dag must
// be critpath.New(p). It also leaves every flow's predicted FCT in FCT().
func (pr *Predictor) Time(p *ten.Pattern, dag *critpath.DAG, bytes float64) float64 {
	pr.fct = grow(pr.fct, len(p.Flows))
	var scale []float64
	if len(pr.pairs) > 0 {
		pr.scale = grow(pr.scale, len(p.Flows))
		for i := range p.Flows {
			f := &p.Flows[i]
			pr.scale[i] = 1
			if v, ok := pr.pairs[[2]int32{f.Src, f.Dst}]; ok {
				pr.scale[i] = v
			}
		}
		scale = pr.scale
	}
	return pr.rp.Replay(p, dag, bytes, &pr.net, scale, pr.fct)
}

// Congested reports whether any count or pair residual is significant:
// without one, every pattern of a symmetric network predicts the same.
func (pr *Predictor) Congested() bool {
	if len(pr.pairs) > 0 {
		return true
	}
	for r := range pr.net.Up {
		if pr.net.Up[r] > 0 || pr.net.Down[r] > 0 {
			return true
		}
	}
	return false
}

// Suspects lists the ranks with a significant count or pair residual, in
// rank order: the ranks a useful transform moves.
func (pr *Predictor) Suspects() []int32 {
	mark := make([]bool, len(pr.net.Up))
	for r := range pr.net.Up {
		mark[r] = pr.net.Up[r] > 0 || pr.net.Down[r] > 0
	}
	for k := range pr.pairs {
		mark[k[0]], mark[k[1]] = true, true
	}
	var out []int32
	for r, ok := range mark {
		if ok {
			out = append(out, int32(r))
		}
	}
	return out
}

// Net returns the significant links the predictor judges with.
func (pr *Predictor) Net() *Net { return &pr.net }
