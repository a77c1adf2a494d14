package tuner

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/react-torch/react-torch/pkg/critpath"
	"github.com/react-torch/react-torch/pkg/detect"
	"github.com/react-torch/react-torch/pkg/links"
	"github.com/react-torch/react-torch/pkg/semantics"
	"github.com/react-torch/react-torch/pkg/ten"
	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// fabricTrial is the link model loop's fallback where the model sees the
// fabric uneven (pairs that stand out of their noise: a switch's ranks
// fast among themselves, cables that slow the pairs whose paths cross
// them), or its flows collide in it (spreadShows), but predicts no change
// that gains. The gain there lies in the
// pairs a pattern has not carried yet and in the sharing of links the
// model does not know (a ToR's uplinks), which a per-pair factor cannot
// foresee; the paper's loop, which tries swaps judged by the pair history
// and keeps what the next batch confirms, finds it. Its trial is judged
// like any change (judgeChange); a revert does not raise the link model's
// margin. Until a fabric trial has been kept in the run, its first
// EMax-1 reverts cost no wait, as in the paper's loop (the run's pattern
// is still one no trial improved; held-out seeds 4-43: ecmp-fattree
// +1.5, fig7a +0.8, fig7b +0.9, overhead-noise +1.1 points), and after
// each kept one fabricFreeAfterKeep; past those, a revert backs the
// search off twice as long as one of the model's own, so that trials
// stay few where the pattern may be the best the fallback reaches (with
// no wait at all,
// TestFabricSpreadTheCollectiveFollows' ring made 15 changes in 150
// epochs, its time 2-9% above its best pattern's after it had found
// that pattern) or where nothing is to be found.
func (t *reactLoop) fabricTrial(d *Decision, epoch int, pr *links.Predictor) *Decision {
	if t.eval != nil || t.next != nil || t.cfg.OneHost {
		return d
	}
	// a network the link model finds quiet reaches here without the
	// search's wait after a revert
	if t.backoff > 0 {
		t.backoff--
		d.Note += "; fabric: backing off after a revert"
		return d
	}
	spread, open := t.fabricOpen(d, pr)
	if !open {
		return d
	}
	return t.pairTrial(d, epoch, pr, spread)
}

// fabricOpen says whether the fallback may try in this batch, and whether
// the FCTs' spread (spreadShows) let it through. It stays out of what the
// model does see (a rank link with a count), out of pairs that are not
// pairs (slowed by their place in the pattern), and out of FCTs the
// collective time does not confirm (the model predicts more than the
// collective took: a busy host; on the slow-host files such pairs stand
// out too, and trials there were pure cost).
func (t *reactLoop) fabricOpen(d *Decision, pr *links.Predictor) (spread, open bool) {
	spread = t.spreadShows(d.Model.Noise, d.Model.Epochs)
	if len(pr.Pairs()) == 0 && !spread {
		return spread, false
	}
	// A pair is a pair in any pattern: where a quarter or more of the
	// pairs seen in two patterns differ between them, the slowness is
	// bound to places in the pattern (a busy CPU that forwards a step),
	// and swapping ranks does not leave it behind. That stays known after
	// the model has forgotten the other pattern's epochs.
	if fit := d.Model; 4*fit.PairsContradicted > fit.PairsCompared {
		t.placeBound = true
	}
	// Where the flows collide in the fabric (spread), a pair's residual
	// depends on what runs beside it, which the pattern (and another
	// tenant's) decides: pairs that differ between patterns are then no
	// sign of a slowness bound to places (fig7b: the ring job's pairs
	// moved when the other job changed its pattern, and it made no trial
	// again for the rest of the run).
	if t.placeBound && !spread {
		return spread, false
	}
	// A rank link with a count is the model's own search's. Where pairs
	// stand out faster than the median pair (ranks of one switch, which
	// never cross the congested fabric), or the FCTs spread as ECMP draws
	// spread them, fractional counts are the fabric read as rank links
	// (0.3-0.5 in fig7's first batches, before any pair stands out,
	// against 1.8 for an external flow on fig5's host links, whose FCTs
	// spread by 0.06): only a competing flow or more is.
	bar := 0.0
	if spread || slices.ContainsFunc(pr.Pairs(), func(p links.Pair) bool { return p.Factor < 1 }) {
		bar = fabricCount
	}
	// Unless, where the FCTs spread, the model's own search predicts less
	// than half the gain a change needs: its counts then explain nothing a
	// swap can leave behind. fig7b, job 1, seed 7: a ToR's congested
	// uplinks read as 1.46 competing flows on rank 3's uplink, which every
	// step of a recursive doubling crosses alike; the best change predicted
	// 1.00-1.04 against 1.10-1.15 needed for the whole run, no trial was
	// made, and the paper's loop gained 24%. Only where the fit explains
	// its flows to within calibrationTolerance (there 0.13): a poorer fit's
	// counts are a busy CPU's as often (the 2-core testbed with nothing to
	// fix, 0.20, whose search found nothing either; 16 ranks on 2 loaded
	// cores, 0.83), and a trial there costs with nothing to find. Not
	// after a fabric trial was reverted, until a change is kept: at the
	// best pattern the fallback can reach, the model's best change
	// predicts as little, and trials there were pure cost
	// (TestFabricSpreadTheCollectiveFollows, seed 3: two more trials, both
	// reverted, after the run had reached the best pattern).
	futile := !t.fabricMissed && spread && d.Model.RMS <= calibrationTolerance && t.quiet != nil && t.quiet.need > 0 && t.quiet.best < t.quiet.need/2
	if !futile && heaviest(pr.Net()) > bar {
		return spread, false
	}
	// The calibration check without the allowance for a poor fit: a blind
	// trial needs FCTs the collective time confirms (on the slow-host
	// files the fit misses by 24%, which let through FCTs 22% above the
	// collective time, and trials that were pure cost).
	now := pr.Time(t.cur, critpath.New(t.cur), t.bytes)
	return spread, !(math.Log(d.Observed/now) < -calibrationTolerance)
}

// pairTrial emits the paper's exploration's change where detection finds
// congestion and the pair history a swap that gains: a pair that stands
// out must have led here in the batch before too, unless the FCTs spread.
func (t *reactLoop) pairTrial(d *Decision, epoch int, pr *links.Predictor, spread bool) *Decision {
	rep, err := detect.Detect(t.cur, t.deg, t.batch, t.bytes, detect.Config{Delta1: t.cfg.Delta1, Delta2: t.cfg.Delta2})
	if err != nil { // inputs were validated in Observe
		panic(err)
	}
	if !rep.Congested() {
		return d
	}
	was := maps.Clone(t.resolved)
	g, trials, steps := t.explore(rep)
	var resolved []int32
	for r := range t.resolved {
		if !was[r] {
			resolved = append(resolved, r)
		}
	}
	slices.Sort(resolved)
	unresolve := func() { // no trial: the ranks stay where they are
		for _, r := range resolved {
			delete(t.resolved, r)
		}
	}
	if g == nil || slices.Equal(g.Flows, t.cur.Flows) || t.rejected[fingerprint(g)] {
		unresolve()
		return d
	}
	if err := semantics.Check(g); err != nil { // a hash collision in the position evaluator
		t.rejected[fingerprint(g)] = true
		unresolve()
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
	// Pairs that stand out without the spread are tried only when they
	// led here in the batch before too, and one of them is slower than
	// the median pair by pairSlow: on the 2-core testbed with nothing to
	// fix, pairs stand out in every run, a busy host's (0->1 x0.81-0.85,
	// 2->1 x1.09-1.13), and their trials were kept by chance; the
	// degraded cables of fig8 slow the pairs that cross them by more.
	wanted := t.fabricWanted
	t.fabricWanted = t.batchNo + 1
	slow := slices.ContainsFunc(pr.Pairs(), func(p links.Pair) bool { return p.Factor >= pairSlow })
	if !spread && (wanted == 0 || wanted != t.batchNo || !slow) {
		unresolve()
		return d
	}
	d.Explored, d.Trials = true, trials
	d.Note = fmt.Sprintf("%s; fabric: the pair history's trial (predicted speed-up %.3f)", d.Note, predicted)
	t.eval = &evaluation{prev: t.cur, before: t.base(), predicted: predicted, steps: steps, fabric: true, spread: spread, resolved: resolved}
	d.Expected = predicted
	t.emit(d, g, epoch)
	return d
}

// pairSlow is how much slower than the median pair a pair must stand out
// for a fabric trial without the spread (fabricTrial).
const pairSlow = 1.15

// fabricFreeAfterKeep is how many fabric reverts after a kept fabric trial
// cost no wait. A kept trial says the pattern was not the best the
// fallback reaches, and the next blind draw that misses says little more;
// with a wait from the first revert (twice the model's), a run stopped
// short of that best (TestFabricSpreadTheCollectiveFollows, seed 2: x0.857
// of the initial time where x0.762 is reachable, found now at epoch 135).
// Held-out seeds 4-43, tuned jobs, against a wait from the first revert:
// fig7a +2.0 (0.6), fig7a-lingjun +1.5 (0.6), fig7b +1.4 (1.6),
// ecmp-fattree +0.6 (0.3), overhead +0.3 (0.2), overhead-contention +0.3
// (0.1), overhead-noise +0.2 (0.1), at 7.4-7.5 changes per 100 epochs on
// fig7a and fig7a-lingjun against 6.3 (paper-REACT 7.9-8.2). Four
// (EMax-1, as before any keep) gained no more, at 7.6-7.7.
const fabricFreeAfterKeep = 2

// fabricConfidence is the level at which a fabric trial's gain must be
// significant to be kept where the FCTs spread and the collective follows
// (spreadShows). Where ECMP draws spread the collective time from epoch
// to epoch (a coefficient of variation of 10-20%), a trial that gains
// 5-10% was seldom significant at 95% within the three batches a change
// gets, and was reverted: on the fig7 files at 0.95 the trials gained 4-5
// points less (5 seeds a cell) for as many changes, with no worse tail.
// Elsewhere (a pair that stands out, the testbed's CPU-bound flows with
// nothing to fix) 80% kept a trial that gained nothing.
const fabricConfidence = 0.8

// Where no pair stands out, the flows may still collide in the fabric:
// on a fat tree every pair of a random placement crosses the core alike,
// so they all look the same, and what there is to gain (25-30% on
// ecmp-fattree's rings) lies in pairs the pattern never carried, whose
// ranks share a pod. What shows it is a spread of the FCTs from epoch to
// epoch (ECMP draws: 0.2-0.4 in log terms) that the collective time
// follows: the critical path of an epoch's own FCTs rises and falls with
// the measured time. A clock's jitter, or a busy host's timing of its
// flows, spreads the FCTs and not the collective (the noise files,
// tuner_test's quiet networks), and nothing is tried there.
const (
	// log standard deviation of a flow's FCT: ECMP draws spread it by
	// 0.15-0.45 (ecmp-fattree's allgather and reduce-scatter rings
	// 0.15-0.17, where one trial gains 11-13%; at 0.2 they made none);
	// the 2-core namespace testbed with nothing to fix, 4 ranks, by
	// 0.12-0.14 (CPU scheduling, which its collective time follows too
	// and no placement leaves behind)
	spreadMin = 0.15
	// The correlation is weak where the times are measured with noise:
	// under a jitter of 0.2 on each FCT and on the collective time
	// (overhead-noise), a ring whose true time varies by 10% from epoch
	// to epoch correlates with its critical path by 0.2-0.45, which only
	// several batches make significant. Its bar and level were 0.5 and
	// 0.99 over 18 epochs of one pattern: held-out seeds 4-43 of
	// overhead-noise, 0.25 and 0.975 over 48 epochs of any patterns gain
	// 1.0 point (0.3), the rings at a noise of 0.2 3-6; the noisy star
	// (no congestion) made a trial in 1 run of 640 (a costless one), at
	// 0.95 in 4, and at 0.99 the gain was half.
	spreadCorr  = 0.25 // of the epochs' critical paths and measured times
	spreadLevel = 0.975
	// epochs the correlation is measured over, the latest of whichever
	// patterns ran them
	spreadEpochs = 48
)

// spreadRec holds, per epoch, the log of the critical path of its FCTs
// and of its measured collective time, and which pattern ran it (a count
// that moves on at each change); and the answer for the batch last
// recorded (batch: 1 + its number).
type spreadRec struct {
	p      *ten.Pattern
	serial int
	x, y   []float64
	of     []int
	batch  int
	shows  bool
}

// spreadShows records the batch (once, however often it is asked) and
// says whether the FCTs spread by spreadMin or more and the collective
// time follows them, over the last spreadEpochs epochs.
func (t *reactLoop) spreadShows(noise float64, held int) bool {
	if t.spread.batch != t.batchNo+1 {
		shows := t.spreadRecord(noise, held)
		t.spread.batch, t.spread.shows = t.batchNo+1, shows
	}
	return t.spread.shows
}

func (t *reactLoop) spreadRecord(noise float64, held int) bool {
	if noise < spreadMin || t.untimed { // a stand-in follows by construction
		return false
	}
	// Where the noise rests on this batch alone (a run's first), one
	// epoch can carry it past the bar: on the 2-core testbed with nothing
	// to fix, the first recorded epoch took 1.36 times the median with its
	// flows skewed, and the trial that spread let through was kept by
	// chance. Under ECMP every epoch draws its own collisions.
	if held <= len(t.batch) && looSpread(t.batch) < spreadMin {
		return false
	}
	sp := &t.spread
	if sp.p != t.cur {
		sp.p = t.cur
		sp.serial++
	}
	for i, c := range t.paths {
		sp.x = append(sp.x, math.Log(c))
		sp.y = append(sp.y, math.Log(t.elapsed[i]))
		sp.of = append(sp.of, sp.serial)
	}
	if n := len(sp.x); n > spreadEpochs {
		sp.x = append(sp.x[:0], sp.x[n-spreadEpochs:]...)
		sp.y = append(sp.y[:0], sp.y[n-spreadEpochs:]...)
		sp.of = append(sp.of[:0], sp.of[n-spreadEpochs:]...)
	}
	r, n := withinCorrelation(sp.x, sp.y, sp.of)
	if n < 4 {
		return false
	}
	// significant at spreadLevel by Fisher's z (one batch of 6 epochs
	// needs 0.81, eight 0.28); false when either is constant (NaN)
	return r >= spreadCorr && math.Atanh(min(r, 1-1e-12))*math.Sqrt(float64(n-3)) >= distuv.UnitNormal.Quantile(spreadLevel)
}

// withinCorrelation is the correlation of x and y about the means of the
// runs of equal of (a pattern's epochs: a change moves both the critical
// path and the collective time, which says nothing of whether one follows
// the other from epoch to epoch), and the count of points it is worth
// (one less for each mean after the first).
func withinCorrelation(x, y []float64, of []int) (r float64, n int) {
	dx, dy := slices.Clone(x), slices.Clone(y)
	groups := 0
	for lo := 0; lo < len(of); {
		hi := lo + 1
		for hi < len(of) && of[hi] == of[lo] {
			hi++
		}
		mx, my := stat.Mean(x[lo:hi], nil), stat.Mean(y[lo:hi], nil)
		for i := lo; i < hi; i++ {
			dx[i] -= mx
			dy[i] -= my
		}
		groups++
		lo = hi
	}
	if groups == 0 {
		return math.NaN(), 0
	}
	return stat.Correlation(dx, dy, nil), len(x) - groups + 1
}

// looSpread is the pooled standard deviation of the epochs' log FCTs about
// each flow's mean with the epoch that adds most to it left out (0 with
// fewer than three epochs).
func looSpread(batch [][]float64) float64 {
	e := len(batch)
	if e < 3 {
		return 0
	}
	nf := len(batch[0])
	lg := make([][]float64, e)
	for i, fct := range batch {
		lg[i] = make([]float64, nf)
		for f, v := range fct {
			lg[i][f] = math.Log(v)
		}
	}
	best := math.Inf(1)
	for k := range e {
		ss := 0.0
		for f := range nf {
			m := 0.0
			for i := range e {
				if i != k {
					m += lg[i][f]
				}
			}
			m /= float64(e - 1)
			for i := range e {
				if i != k {
					d := lg[i][f] - m
					ss += d * d
				}
			}
		}
		best = min(best, ss/float64((e-2)*nf))
	}
	return math.Sqrt(best)
}

// fabricCount is the count of competing flows on a rank link up to which,
// where the fabric is uneven or the FCTs spread, the link model's counts
// are the fabric read as rank links (fabricOpen, reactLoop.propose): an
// external flow on a host link reads as 1.8 on fig5, the fabric as
// 0.1-0.5 on fig7.
const fabricCount = 1

// heaviest is the largest count of competing flows the link model puts on
// one rank link, either way.
func heaviest(net *links.Net) float64 {
	h := 0.0
	for r := range net.Up {
		h = max(h, net.Load(r, false), net.Load(r, true))
	}
	return h
}
