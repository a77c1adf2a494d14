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
// What the rank links cannot explain is measured per (src, dst) pair, its
// mean over the kept epochs through the ECMP noise (pairs.go): pairs that
// stand out, fast or slow, show the fabric uneven, and the slow ones are
// avoided by the judge. Every count has an uncertainty from the curvature
// of the fit, and only counts and pairs that stand out of the measured
// noise are used (Significant), so that noise predicts no gain.
//
// A rank slow itself (a busy CPU, a slow NIC) reads as counts on both its
// links; on request the model reads such ranks again as hosts (hosts.go),
// for a report: the judge goes on with the counts, as congestion into a
// host that delays its sends' acknowledgements reads alike.
//
// The model knows no topology and runs no simulator; it is fitted by
// coordinate descent against replays of the patterns it observed. One model
// serves a process group: links belong to hosts, not to collectives, so the
// FCTs of every collective (key) of the group feed it, and a key seen for
// the first time is judged by what the group already knows.
package links

import (
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
	logFCT          []float64 // log of every flow's FCT, taken once
}

// groupKey is what the kept epochs are grouped by: pattern and size.
type groupKey struct {
	p     *ten.Pattern
	bytes float64
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

// Pair is a residual of one (src, dst) pair that stands out of its noise:
// its flows take Factor times what the rank links explain for the median
// pair (above 1: slower), with standard error SE on its own mean.
type Pair struct {
	Src, Dst int32
	Factor   float64
	SE       float64
	N        int // flow observations behind it
}

// Fit is the state of the model after a fit.
type Fit struct {
	Net Net // every fitted parameter
	// UpSE and DownSE are the standard errors of the competing counts
	// (0 where the count is 0: not measured, as it cannot be significant).
	UpSE, DownSE []float64
	// SlowSE are the standard errors of Net.Slow (nil where no link reads
	// as slow).
	SlowSE []float64
	// Noise is the standard deviation of one flow's log FCT from epoch to
	// epoch around its mean (pooled over flows): the measurement noise.
	Noise float64
	// RMS is the root mean square of the log residuals of the flows' mean
	// FCTs after the fit of the rank links, less what the measured noise
	// alone leaves in a mean of that many epochs: how far the links miss
	// what they saw. The pair model's factors are left out: they would
	// hide a miss of the links as slow pairs.
	RMS   float64
	Pairs []Pair // the pairs that stand out of their noise (pairs.go)
	// PairsCompared counts the pairs seen in two patterns for a batch or
	// more each; PairsContradicted those whose residuals differ between
	// them: slowed by their place in the pattern, not by their path.
	PairsCompared, PairsContradicted int
	// Epochs and Patterns count the data behind the fit.
	Epochs, Patterns int
	Replays          int // replays the fit cost
}

// Model is one process group's link model. It is not safe for concurrent
// use.
type Model struct {
	ranks, h int
	recent   int  // epochs that form the change-point test's newest part
	stepped  bool // the executor's semantics (Net.Stepped)
	seq      int
	obs      []obs
	last     map[int]int // newest epoch per key
	dags     map[*ten.Pattern]*critpath.DAG

	fit    Fit
	fitted bool
	sig    Net // the significant part of fit.Net, used to predict
	pm     *pairModel
	scale  []float64 // scratch: pair factors of a replay
	rp     Replayer
	groups []*group
	evals  int
	// stop: the loss evaluations at which a budgeted reading gives up
	// (0: none under way)
	stop int
}

// NewModel makes the model of a group of ranks that keeps the last h
// epochs of every key, and forgets all but the last recent epochs when they
// differ significantly from the ones before (the network changed). stepped
// says how the executor runs and times flows (Net.Stepped).
func NewModel(ranks, h, recent int, stepped bool) (*Model, error) {
	if ranks < 1 {
		return nil, fmt.Errorf("links: %d ranks, want >= 1", ranks)
	}
	if h < 1 {
		return nil, fmt.Errorf("links: history of %d epochs, want >= 1", h)
	}
	if recent < 1 || recent > h {
		return nil, fmt.Errorf("links: change-point window of %d epochs, want in [1, %d]", recent, h)
	}
	return &Model{ranks: ranks, h: h, recent: recent, stepped: stepped, last: map[int]int{}, dags: map[*ten.Pattern]*critpath.DAG{}}, nil
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
	lf := make([]float64, len(fct))
	for i, v := range fct {
		lf[i] = math.Log(v)
	}
	m.obs = append(m.obs, obs{key: key, epoch: epoch, seq: m.seq, p: p, bytes: bytes, logFCT: lf})
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
	idx := map[groupKey]*group{}
	m.groups = m.groups[:0]
	for _, o := range m.obs {
		g := idx[groupKey{o.p, o.bytes}]
		if g == nil {
			g = &group{p: o.p, dag: m.dag(o.p), bytes: o.bytes, logObs: make([]float64, len(o.logFCT)), pred: make([]float64, len(o.logFCT))}
			idx[groupKey{o.p, o.bytes}] = g
			m.groups = append(m.groups, g)
		}
		g.n++
		for i, v := range o.logFCT {
			g.logObs[i] += v
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
		g := idx[groupKey{o.p, o.bytes}]
		if g.n < 2 {
			continue
		}
		for i, v := range o.logFCT {
			d := v - g.logObs[i]
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
	nf := len(newest.logFCT)
	stat := func(part []*obs, f int) (float64, float64) {
		s, ss := 0.0, 0.0
		for _, o := range part {
			v := o.logFCT[f]
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
