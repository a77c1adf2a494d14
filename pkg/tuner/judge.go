package tuner

import (
	"math"

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
// significant after maxExtensions extra batches; extend otherwise.
func judgeChange(before, after []float64, conf, minGain float64, extensions int) (verdict, float64) {
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
