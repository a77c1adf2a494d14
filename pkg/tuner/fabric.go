package tuner

import (
	"fmt"
	"math"
	"slices"

	"github.com/react-torch/react-torch/pkg/critpath"
	"github.com/react-torch/react-torch/pkg/detect"
	"github.com/react-torch/react-torch/pkg/links"
	"github.com/react-torch/react-torch/pkg/semantics"
)

// fabricTrial is the link model loop's fallback where the model sees the
// fabric uneven (pairs that stand out of their noise: a switch's ranks
// fast among themselves, cables that slow the pairs whose paths cross
// them) but predicts no change that gains. The gain there lies in the
// pairs a pattern has not carried yet and in the sharing of links the
// model does not know (a ToR's uplinks), which a per-pair factor cannot
// foresee; the paper's loop, which tries swaps judged by the pair history
// and keeps what the next batch confirms, finds it. Its trial is judged
// like any change (judgeChange); a revert does not raise the link model's
// margin and backs the search off twice as long as a revert of the
// model's own, so the trials stay few (backing off as long gained fig7a
// 2-5 points for half a change a run more, and made 8-10 changes in 150
// epochs on TestFabricTrialsAreJudgedAndFew's tree).
//
// It stays out of what the model does see (a rank link with a count),
// out of pairs that are not pairs (slowed by their place in the pattern),
// and out of FCTs the collective time does not confirm (the model
// predicts more than the collective took: a busy host; on the slow-host
// files such pairs stand out too, and trials there were pure cost).
func (t *reactLoop) fabricTrial(d *Decision, epoch int, pr *links.Predictor) *Decision {
	if len(pr.Pairs()) == 0 || t.eval != nil || t.next != nil {
		return d
	}
	// A pair is a pair in any pattern: where a quarter or more of the
	// pairs seen in two patterns differ between them, the slowness is
	// bound to places in the pattern (a busy CPU that forwards a step),
	// and swapping ranks does not leave it behind. That stays known after
	// the model has forgotten the other pattern's epochs.
	if fit := d.Model; 4*fit.PairsContradicted > fit.PairsCompared {
		t.placeBound = true
	}
	if t.placeBound {
		return d
	}
	// A rank link with a count is the model's own search's. Where pairs
	// stand out faster than the median pair (ranks of one switch, which
	// never cross the congested fabric), fractional counts are the fabric
	// read as rank links (0.1-0.4 on fig7a, against 1.8 for an external
	// flow on fig5's host links): only a competing flow or more is.
	fast := false
	for _, p := range pr.Pairs() {
		fast = fast || p.Factor < 1
	}
	bar := 0.0
	if fast {
		bar = 1
	}
	net := pr.Net()
	for r := range net.Up {
		if net.Up[r] > bar || net.Down[r] > bar {
			return d
		}
	}
	// The calibration check without the allowance for a poor fit: a blind
	// trial needs FCTs the collective time confirms (on the slow-host
	// files the fit misses by 24%, which let through FCTs 22% above the
	// collective time, and trials that were pure cost).
	if now := pr.Time(t.cur, critpath.New(t.cur), t.bytes); math.Log(d.Observed/now) < -calibrationTolerance {
		return d
	}
	rep, err := detect.Detect(t.cur, t.deg, t.batch, t.bytes, detect.Config{Delta1: t.cfg.Delta1, Delta2: t.cfg.Delta2})
	if err != nil { // inputs were validated in Observe
		panic(err)
	}
	if !rep.Congested() {
		return d
	}
	g, trials, steps := t.explore(rep)
	if g == nil || slices.Equal(g.Flows, t.cur.Flows) || t.rejected[fingerprint(g)] {
		return d
	}
	if err := semantics.Check(g); err != nil { // a hash collision in the position evaluator
		t.rejected[fingerprint(g)] = true
		return d
	}
	before, after := 0.0, 0.0
	for _, tr := range trials {
		if tr.Accepted {
			if before == 0 {
				before = tr.Before
			}
			after = tr.After
		}
	}
	predicted := 1.0
	if after > 0 {
		predicted = before / after
	}
	d.Explored, d.Trials = true, trials
	d.Note = fmt.Sprintf("%s; fabric: the pair history's trial (predicted speed-up %.3f)", d.Note, predicted)
	t.eval = &evaluation{prev: t.cur, before: slices.Clone(t.elapsed), predicted: predicted, steps: steps, fabric: true}
	t.emit(d, g, epoch)
	return d
}
