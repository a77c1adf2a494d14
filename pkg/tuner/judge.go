package tuner

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// verdict is what the batches after a change say of it.
type verdict int

const (
	extend verdict = iota // not yet significant either way: run another batch
	keep
	revert
)

// maxExtensions bounds the batches a change may run beyond its first
// before it must prove itself.
const maxExtensions = 2

// judgeChange compares the collective times of the old pattern (before)
// with those of the new one (after) by Welch's one-sided t-test at level
// conf: keep a significant gain of at least minGain; revert when the new
// pattern gains less than minGain, or when its gain is still not
// significant after maxExtensions extra batches, unless keepUndecided;
// extend otherwise. keepUndecided is for a blind trial that a prior
// predicted (the pair history's, let through by the FCTs' ECMP spread):
// still not significant after its last batch but gaining at least
// minGain, it is kept, as the paper's loop keeps a trial the next batch
// does not show slower. Under ECMP draws the old pattern's few epochs
// before a change are a lucky or an unlucky sample of it (ecmp-fattree,
// reduce-scatter seed 1: 2.18 ms before, 2.15 ms after, while the static
// pattern took 2.40 ms over the same epochs), and reverting such a trial
// threw away 42 points.
//
// Each sample's one most extreme time is first pulled in to its fence
// (clipOutlier), so that one slow epoch cannot revert a change, nor one
// fast epoch keep it.
func judgeChange(before, after []float64, conf, minGain float64, extensions int, keepUndecided bool) (verdict, float64) {
	before, after = clipOutlier(before), clipOutlier(after)
	mb, vb := stat.MeanVariance(before, nil)
	ma, va := stat.MeanVariance(after, nil)
	gain := mb/ma - 1
	if len(before) < 2 || len(after) < 2 {
		vb, va = 0, 0
	}
	if !(gain >= minGain) || !(ma < mb) {
		return revert, gain
	}
	se2 := vb/float64(len(before)) + va/float64(len(after))
	if se2 <= 0 || significant(mb-ma, se2, vb, va, len(before), len(after), conf) {
		return keep, gain
	}
	if extensions < maxExtensions {
		return extend, gain
	}
	if keepUndecided {
		return keep, gain
	}
	return revert, gain
}

// significant reports whether a difference d with squared standard error
// se2 is above the one-sided Student quantile of level conf, with Welch's
// degrees of freedom.
func significant(d, se2, vb, va float64, nb, na int, conf float64) bool {
	qb, qa := vb/float64(nb), va/float64(na)
	den := 0.0
	if nb > 1 {
		den += qb * qb / float64(nb-1)
	}
	if na > 1 {
		den += qa * qa / float64(na-1)
	}
	df := 1.0
	if den > 0 {
		df = max(1, se2*se2/den)
	}
	tq := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(conf)
	return d/math.Sqrt(se2) > tq
}

// baseline is the sample of the pattern in force a change is judged
// against: batch and, before it, hist (earlier epochs of the same
// pattern), unless their collective times differ at the 0.95 level either
// way (or, without spread, at all): the network changed since (congestion
// that began, another tenant's move), and batch alone speaks for the
// pattern now.
func baseline(hist, batch times) times {
	if len(hist.e) < 2 || len(batch.e) < 2 || differ(hist.e, batch.e) {
		return batch.clone()
	}
	out := hist.clone()
	out.add(batch)
	return out
}

// differ says whether the means of two samples (two or more values each)
// differ at the 0.95 level either way (Welch), or at all where neither
// spreads.
func differ(x, y []float64) bool {
	mx, vx := stat.MeanVariance(x, nil)
	my, vy := stat.MeanVariance(y, nil)
	se2 := vx/float64(len(x)) + vy/float64(len(y))
	if !(se2 > 0) {
		return math.Abs(mx-my) > 1e-9*math.Abs(my)
	}
	return significant(mx-my, se2, vx, vy, len(x), len(y), 0.975) || significant(my-mx, se2, vy, vx, len(y), len(x), 0.975)
}

// times are what epochs of one pattern took: each one's measured
// collective time (e) and the critical path of its own FCTs (c).
type times struct{ e, c []float64 }

func (s *times) add(o times) {
	s.e = append(s.e, o.e...)
	s.c = append(s.c, o.c...)
}

func (s times) clone() times { return times{e: slices.Clone(s.e), c: slices.Clone(s.c)} }

// judged returns the times the judge compares, for the epochs of the old
// pattern (before) and of the new one (after): per epoch, in log terms,
// the mix w*log(e) + (1-w)*log(c) whose spread about each pattern's mean is
// least, w from the two measures' pooled variances and covariance. A
// collective time jittered apart from its flows (a host's timing of the
// whole call; the noise files' measurement noise) leans on the critical
// path, whose jitter averages over the flows along it; FCTs timed worse
// than the collective lean on the collective time; where the two agree
// the collective time is used as it is. The mix is a measure of the
// collective time only while the collective time and the critical path
// keep their ratio: where the mean log ratio differs between the two
// patterns at the 0.95 level, or a side has fewer than two epochs, the
// collective times are returned.
func judged(before, after times) (b, a []float64) {
	if len(before.e) < 2 || len(after.e) < 2 {
		return before.e, after.e
	}
	var vy, vx, cxy float64
	var gap [2][]float64
	for i, s := range []times{before, after} {
		y, x := logs(s.e), logs(s.c)
		my, mx := stat.Mean(y, nil), stat.Mean(x, nil)
		for k := range y {
			dy, dx := y[k]-my, x[k]-mx
			vy += dy * dy
			vx += dx * dx
			cxy += dy * dx
			gap[i] = append(gap[i], x[k]-y[k])
		}
	}
	den := vx + vy - 2*cxy
	if den <= 1e-9*(vx+vy) {
		return before.e, after.e
	}
	if differ(gap[0], gap[1]) {
		return before.e, after.e
	}
	w := min(1, max(0, (vx-cxy)/den))
	mix := func(s times) []float64 {
		out := make([]float64, len(s.e))
		for k := range out {
			out[k] = math.Exp(w*math.Log(s.e[k]) + (1-w)*math.Log(s.c[k]))
		}
		return out
	}
	return mix(before), mix(after)
}

func logs(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = math.Log(x)
	}
	return out
}

// cv is the coefficient of variation of xs (0 for fewer than two).
func cv(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	m, sd := stat.MeanStdDev(xs, nil)
	if m <= 0 {
		return 0
	}
	return sd / m
}

// outlierFence is how far from the median, in robust standard deviations
// (1.4826 times the median absolute deviation, at least outlierFloor of
// the median), a time lies before the judge clips it. Five: Gaussian
// noise crosses it about once in a million epochs, while a host's hiccup
// (on the 2-core testbed, an epoch of 0.93 s among 0.40 to 0.61 s) lies
// far beyond.
const (
	outlierFence = 5.0
	outlierFloor = 0.005
)

// clipOutlier returns xs with its one value farthest from the median
// moved to the fence when it lies beyond it; xs itself when nothing is
// clipped or with fewer than four values (too few to tell). The median and
// its deviation are robust to that one value, and a shift that lasts
// several epochs spreads them as far as it goes.
func clipOutlier(xs []float64) []float64 {
	if len(xs) < 4 {
		return xs
	}
	sorted := slices.Clone(xs)
	slices.Sort(sorted)
	med := median(sorted)
	far := 0
	dev := make([]float64, len(xs))
	for i, x := range xs {
		dev[i] = math.Abs(x - med)
		if dev[i] > dev[far] {
			far = i
		}
	}
	slices.Sort(dev)
	fence := outlierFence * max(1.4826*median(dev), outlierFloor*math.Abs(med))
	if math.Abs(xs[far]-med) <= fence {
		return xs
	}
	out := slices.Clone(xs)
	out[far] = med + math.Copysign(fence, xs[far]-med)
	return out
}

// median of sorted values.
func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}
