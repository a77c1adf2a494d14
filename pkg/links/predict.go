package links

import (
	"slices"

	"github.com/react-torch/react-torch/pkg/critpath"
	"github.com/react-torch/react-torch/pkg/ten"
)

// Predictor judges patterns with the significant part of a fit. It holds
// its own scratch space, so several predictors of one model may run side
// by side; it does not change when the model is refitted.
type Predictor struct {
	net   Net
	pm    *pairModel
	z     float64 // seen pairs pulled z standard errors towards their prior
	pairs []Pair  // the pairs that stand out, in (src, dst) order
	rp    Replayer
	scale []float64
	fct   []float64
	est   Estimator
}

// Predictor returns a judge of the current fit; nil before any fit.
func (m *Model) Predictor() *Predictor {
	if !m.fitted {
		return nil
	}
	return &Predictor{net: m.sig, pm: m.pm, pairs: m.fit.Pairs}
}

// Cautious returns a judge that believes in every significant count and
// residual z standard errors less than the fit does: a gain it still
// predicts does not rest on the fit's uncertainty.
func (m *Model) Cautious(z float64) *Predictor {
	if !m.fitted {
		return nil
	}
	n := m.ranks
	net := Net{C: m.sig.C, Alpha: m.sig.Alpha, Up: make([]float64, n), Down: make([]float64, n), Stepped: m.stepped}
	if m.sig.Slow != nil {
		net.Slow = make([]float64, 2*n)
		for l, x := range m.sig.Slow {
			if x > 0 {
				net.Slow[l] = max(0, x-z*m.fit.SlowSE[l])
			}
		}
	}
	for r := 0; r < n; r++ {
		if m.sig.Up[r] > 0 {
			net.Up[r] = max(0, m.sig.Up[r]-z*m.fit.UpSE[r])
		}
		if m.sig.Down[r] > 0 {
			net.Down[r] = max(0, m.sig.Down[r]-z*m.fit.DownSE[r])
		}
	}
	return &Predictor{net: net, pm: m.pm, z: z, pairs: m.fit.Pairs}
}

// Time predicts the collective time of p for a message of bytes; dag must
// be critpath.New(p). It also leaves every flow's predicted FCT in FCT().
func (pr *Predictor) Time(p *ten.Pattern, dag *critpath.DAG, bytes float64) float64 {
	pr.fct = grow(pr.fct, len(p.Flows))
	return pr.rp.Replay(p, dag, bytes, &pr.net, pr.scales(p), pr.fct)
}

// Estimate is the quick judgement of p (Estimator.Estimate) under the
// fit: it ranks candidates for Time to judge. dag may be nil when the
// executor is stepped.
func (pr *Predictor) Estimate(p *ten.Pattern, dag *critpath.DAG, bytes float64) float64 {
	return pr.est.Estimate(p, dag, bytes, &pr.net, pr.scales(p))
}

// scales is every flow's pair factor, nil when the pair model is off.
func (pr *Predictor) scales(p *ten.Pattern) []float64 {
	pr.scale = pr.pm.scales(p, pr.z, pr.scale)
	return pr.scale
}

// Congested reports whether any count or pair residual is significant:
// without one, every pattern of a symmetric network predicts the same.
func (pr *Predictor) Congested() bool {
	if pr.pm != nil && pr.pm.on {
		return true
	}
	for r := range pr.net.Up {
		if pr.net.Up[r] > 0 || pr.net.Down[r] > 0 {
			return true
		}
	}
	return slices.ContainsFunc(pr.net.Slow, func(x float64) bool { return x > 0 })
}

// Suspects lists the ranks with a significant count or pair residual, in
// rank order: the ranks a useful transform moves.
func (pr *Predictor) Suspects() []int32 {
	mark := make([]bool, len(pr.net.Up))
	for r := range pr.net.Up {
		mark[r] = pr.net.Up[r] > 0 || pr.net.Down[r] > 0
	}
	for l, x := range pr.net.Slow {
		if x > 0 {
			mark[l%len(mark)] = true
		}
	}
	for _, p := range pr.pairs {
		mark[p.Src], mark[p.Dst] = true, true
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

// Pairs returns the pairs that stand out of their noise, in (src, dst)
// order; the predictor judges every pair, these and the others.
func (pr *Predictor) Pairs() []Pair { return pr.pairs }
