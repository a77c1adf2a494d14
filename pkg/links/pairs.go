package links

import (
	"cmp"
	"math"
	"slices"

	"github.com/react-torch/react-torch/pkg/ten"
)

// The pair model: what the rank links leave unexplained, per (src, dst)
// pair. In a shared fabric this is most of what there is to see: a pair
// whose ranks hang off one switch never crosses the congested ToR uplinks
// that every other pair does; a degraded cable slows the pairs whose ECMP
// paths cross it. With ECMP a pair crosses a slow link only in the epochs
// whose draw routes it there, so one epoch says little; the mean over the
// kept epochs says what the pair costs on average, with a standard error
// from its own epoch-to-epoch spread.
//
// The pairs that stand out of their noise, fast or slow, say that the
// fabric is uneven; only the slow ones enter the judge (factor says why).

// pairEst is what the model knows of one pair that carried flows.
type pairEst struct {
	mean float64 // mean log residual over the epochs (of per-epoch means)
	se   float64 // standard error of mean
	n    int     // epochs
	// slow: above the median pair beyond slowSE's bar (the judge's rule)
	slow   bool
	slowSE float64
}

// pairModel is the fitted pair model; on says whether any pair stands out
// of its noise (without one it predicts nothing: every pair the same).
type pairModel struct {
	on     bool
	slow   bool // some pair is slow: the judge uses the factors
	mu     float64
	median float64
	seen   map[[2]int32]*pairEst
}

// pairMin and pairZ are the bar a pair's deviation from the mean pair must
// clear for the pair model to be used: a tenth in log terms (10%) and pairZ
// standard errors of its own mean (with 56 pairs of 8 ranks, noise alone
// passes 4 in about one fit of 300).
// A pair must also have been seen in two batches' epochs (2 recent):
// one batch's spread says little of the next. slowZ is the judge's bar for
// a slow pair (factor).
const (
	slowZ   = 5
	pairMin = 0.1
	pairZ   = 4
)

// contradiction is how far, in log terms, a pair's residuals in two
// patterns may differ before the pair is not one (beside pairZ standard
// errors).
const contradiction = 0.15

// pairPriorDOF is how many epochs the measured noise is worth in a pair's
// own spread.
const pairPriorDOF = 6

// factor is the log factor the judge uses for a pair: a slow pair's
// excess over the median pair (z > 0 pulls it z standard errors down,
// Cautious); every other pair, a fast one and one never seen included,
// is judged at the line rate.
//
// Measured, a judge that believed every pair's shrunk estimate read a
// fit's misses as slow pairs (the fixtures' degree law, no noise: a pair
// 20% slow with a standard error under 1%) and proposed leaving them,
// changes that gained nothing (pkg/tuner's react.txt, 8 and 16 ranks); a
// fast pair lures flows onto it the same way. Telling misses from pairs
// is the open part; until then the pairs that stand out say that the
// fabric is uneven (fabricTrial in pkg/tuner), and the judge keeps its
// slow-pair rule.
func (pm *pairModel) factor(src, dst int32, z float64) float64 {
	e, ok := pm.seen[[2]int32{src, dst}]
	if !ok || !e.slow {
		return 0
	}
	return max(0, min(e.mean-pm.median, math.Log(8))-z*e.slowSE)
}

// acc sums a pair's per-epoch mean residuals.
type acc struct {
	sum, ss float64
	n       int // epochs
	flows   int // flow observations
}

func (a *acc) add(x float64, flows int) {
	a.sum += x
	a.ss += x * x
	a.n++
	a.flows += flows
}

func (a *acc) mean() float64 { return a.sum / float64(a.n) }

// se is the standard error of the mean: the spread of the epochs' means,
// pooled with what the measured noise gives a mean of the pair's flows in
// one epoch, worth pairPriorDOF epochs (a few epochs' spread is itself
// uncertain).
//
// It is never below what the pooled noise alone gives: a few epochs can
// spread less than the noise by chance, and noise alone then made a pair
// stand out (halving-doubling on 6 ranks under noise of 0.2).
func (a *acc) se(noise float64) float64 {
	v0 := max(noise*noise, 1e-4) * float64(a.n) / float64(a.flows)
	mu := a.mean()
	ss := max(0, a.ss-float64(a.n)*mu*mu)
	v := max(v0, (ss+pairPriorDOF*v0)/float64(a.n-1+pairPriorDOF))
	return math.Sqrt(v / float64(a.n))
}

// fitPairs measures every pair's residual against the rank links of the
// fit (m.fit.Net), epoch by epoch, and fits the pair model to them.
func (m *Model) fitPairs(noise float64) {
	type gk struct {
		p     *ten.Pattern
		bytes float64
	}
	m.fit.PairsCompared, m.fit.PairsContradicted = 0, 0
	byGroup := map[gk]*group{}
	for _, g := range m.groups {
		m.rp.Replay(g.p, g.dag, g.bytes, &m.fit.Net, nil, g.pred)
		byGroup[gk{g.p, g.bytes}] = g
	}
	byPair := map[[2]int32]*acc{}
	type pg struct {
		pair [2]int32
		g    *group
	}
	byPG := map[pg]*acc{}
	type ep struct {
		sum float64
		n   int
	}
	epoch := map[[2]int32]*ep{}
	for i := range m.obs {
		o := &m.obs[i]
		g := byGroup[gk{o.p, o.bytes}]
		clear(epoch)
		for f, v := range o.fct {
			fl := &o.p.Flows[f]
			k := [2]int32{fl.Src, fl.Dst}
			e := epoch[k]
			if e == nil {
				e = &ep{}
				epoch[k] = e
			}
			e.sum += math.Log(v) - math.Log(g.pred[f])
			e.n++
		}
		for k, e := range epoch {
			x := e.sum / float64(e.n)
			a, b := byPair[k], byPG[pg{k, g}]
			if a == nil {
				a = &acc{}
				byPair[k] = a
			}
			if b == nil {
				b = &acc{}
				byPG[pg{k, g}] = b
			}
			a.add(x, e.n)
			b.add(x, e.n)
		}
	}
	pm := &pairModel{seen: make(map[[2]int32]*pairEst, len(byPair))}
	for k, a := range byPair {
		pm.seen[k] = &pairEst{n: a.n, mean: a.mean(), se: a.se(noise)}
	}
	// A pair is a pair whatever pattern it runs in: one whose residual
	// differs between two patterns (each over a batch of epochs or more)
	// is slowed by its place in the pattern, not by its path.
	best := map[[2]int32][2]*acc{}
	for k, b := range byPG {
		if b.n < m.recent {
			continue
		}
		two := best[k.pair]
		switch {
		case two[0] == nil || b.n > two[0].n:
			two[0], two[1] = b, two[0]
		case two[1] == nil || b.n > two[1].n:
			two[1] = b
		}
		best[k.pair] = two
	}
	for _, two := range best {
		if two[1] == nil {
			continue
		}
		m.fit.PairsCompared++
		d := two[0].mean() - two[1].mean()
		se := math.Hypot(two[0].se(noise), two[1].se(noise))
		if math.Abs(d) >= contradiction && math.Abs(d) >= pairZ*se {
			m.fit.PairsContradicted++
		}
	}
	m.pm = pm
	if len(pm.seen) == 0 {
		return
	}
	keys := make([][2]int32, 0, len(pm.seen))
	for k := range pm.seen {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]int32) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	for _, k := range keys {
		pm.mu += pm.seen[k].mean
	}
	pm.mu /= float64(len(keys))
	// The judge's slow pairs: above the median pair by a tenth and five
	// standard errors of the pooled noise over the pair's flows.
	means := make([]float64, len(keys))
	for i, k := range keys {
		means[i] = pm.seen[k].mean
	}
	slices.Sort(means)
	pm.median = means[len(means)/2]
	sd := max(noise, 0.01)
	m.fit.Pairs = nil // a fresh slice: predictors of earlier fits keep theirs
	for _, k := range keys {
		e, a := pm.seen[k], byPair[k]
		e.slowSE = sd / math.Sqrt(float64(a.flows))
		if d := e.mean - pm.median; d >= pairMin && d >= slowZ*e.slowSE {
			e.slow, pm.slow = true, true
		}
		if d := math.Abs(e.mean - pm.mu); (d >= pairMin && d >= pairZ*e.se && e.n >= 2*m.recent) || e.slow {
			pm.on = true
			m.fit.Pairs = append(m.fit.Pairs, Pair{Src: k[0], Dst: k[1], Factor: math.Exp(e.mean - pm.median), SE: e.se, N: e.n})
		}
	}
}

// scales fills scale with every flow's pair factor under pm (z as in
// factor) and returns it; nil without a slow pair.
func (pm *pairModel) scales(p *ten.Pattern, z float64, scale []float64) []float64 {
	if pm == nil || !pm.slow {
		return nil
	}
	scale = grow(scale, len(p.Flows))
	for i := range p.Flows {
		f := &p.Flows[i]
		scale[i] = math.Exp(pm.factor(f.Src, f.Dst, z))
	}
	return scale
}
