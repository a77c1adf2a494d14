// Package model is REACT's analytical estimate of flow completion times
// (§5.4.1): it predicts how long every flow of a transformed pattern would
// take from what the flows of earlier patterns took, so that a batch can try
// many transforms without running any of them.
//
// An observation is normalised to a cost per byte and per unit of degree,
// c = FCT / (degree * bytes), so that it can be rescaled to a flow of another
// size and degree. A flow between a pair of ranks seen before is estimated
// from the mean cost of that (src, dst) pair; a pair never seen takes the
// median cost of the observed flows with its degree (of all flows, when no
// flow had that degree). Costs older than H epochs are forgotten.
package model

import (
	"fmt"
	"math"
	"sort"

	"github.com/react-torch/react-torch/pkg/ten"
)

type pair struct{ src, dst int32 }

type agg struct {
	sum float64
	n   int
}

// epochRecord is what one epoch added, kept so that it can be forgotten.
type epochRecord struct {
	epoch   int
	pairs   map[pair]agg
	degrees map[int][]float64
}

// History holds the observations of the last H epochs. It is not safe for
// concurrent use.
type History struct {
	h       int
	records []epochRecord
	pairs   map[pair]agg
	median  map[int]float64 // cache, cleared on every change
	all     float64         // median over every degree, cached with median
}

// NewHistory keeps the observations of the last h epochs (h >= 1).
func NewHistory(h int) *History {
	return &History{h: max(h, 1), pairs: map[pair]agg{}}
}

// Observe adds one epoch's FCTs (seconds, one per flow of p) for a message
// of messageBytes, and forgets epochs older than epoch-H+1.
func (hs *History) Observe(epoch int, p *ten.Pattern, deg *ten.Degrees, fct []float64, messageBytes float64) error {
	if len(fct) != len(p.Flows) {
		return fmt.Errorf("model: epoch %d has %d FCTs for %d flows", epoch, len(fct), len(p.Flows))
	}
	rec := epochRecord{epoch: epoch, pairs: map[pair]agg{}, degrees: map[int][]float64{}}
	for i := range p.Flows {
		f := &p.Flows[i]
		d := deg.Flow(f)
		c := fct[i] / (float64(d) * f.Fraction * messageBytes)
		if !(c > 0) || math.IsInf(c, 0) {
			return fmt.Errorf("model: epoch %d flow %d: FCT %v gives no usable cost", epoch, i, fct[i])
		}
		k := pair{f.Src, f.Dst}
		a := rec.pairs[k]
		a.sum += c
		a.n++
		rec.pairs[k] = a
		rec.degrees[d] = append(rec.degrees[d], c)
	}
	for k, a := range rec.pairs {
		t := hs.pairs[k]
		t.sum += a.sum
		t.n += a.n
		hs.pairs[k] = t
	}
	hs.records = append(hs.records, rec)
	for len(hs.records) > 0 && hs.records[0].epoch <= epoch-hs.h {
		for k, a := range hs.records[0].pairs {
			t := hs.pairs[k]
			t.sum -= a.sum
			t.n -= a.n
			if t.n == 0 {
				delete(hs.pairs, k)
			} else {
				hs.pairs[k] = t
			}
		}
		hs.records = hs.records[1:]
	}
	hs.median = nil
	return nil
}

// Len is the number of epochs held.
func (hs *History) Len() int { return len(hs.records) }

func (hs *History) medians() {
	if hs.median != nil {
		return
	}
	byDeg := map[int][]float64{}
	var every []float64
	for _, r := range hs.records {
		for d, cs := range r.degrees {
			byDeg[d] = append(byDeg[d], cs...)
			every = append(every, cs...)
		}
	}
	hs.median = map[int]float64{}
	for d, cs := range byDeg {
		hs.median[d] = medianOf(cs)
	}
	hs.all = medianOf(every)
}

func medianOf(cs []float64) float64 {
	if len(cs) == 0 {
		return 0
	}
	sort.Float64s(cs)
	m := len(cs) / 2
	if len(cs)%2 == 1 {
		return cs[m]
	}
	return (cs[m-1] + cs[m]) / 2
}

// Estimate fills w with the estimated FCT of every flow of p; it reports
// false when the history is empty.
func (hs *History) Estimate(p *ten.Pattern, deg *ten.Degrees, messageBytes float64, w []float64) bool {
	if len(hs.records) == 0 {
		return false
	}
	hs.medians()
	for i := range p.Flows {
		f := &p.Flows[i]
		d := deg.Flow(f)
		c, ok := 0.0, false
		if a, seen := hs.pairs[pair{f.Src, f.Dst}]; seen && a.n > 0 {
			c, ok = a.sum/float64(a.n), true
		}
		if !ok {
			if c, ok = hs.median[d]; !ok {
				c = hs.all
			}
		}
		w[i] = c * float64(d) * f.Fraction * messageBytes
	}
	return true
}
