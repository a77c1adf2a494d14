package tuner

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"

	"github.com/react-torch/react-torch/pkg/links"
)

// Report is what a tuner knows of the network and what it did with it:
// the link model's loads (Model react), the last batch's collective times,
// and the changes it made. Its JSON form is the report's format.
type Report struct {
	Model   string  `json:"model"`
	Op      string  `json:"op"`
	Algo    string  `json:"algo"`
	Ranks   int     `json:"ranks"`
	Bytes   float64 `json:"bytes"`
	Epoch   int     `json:"epoch"`   // the last epoch observed; -1 before any
	Version int     `json:"version"` // the pattern version in force
	Time    *Times  `json:"time"`    // nil before the first batch
	// Noise and RMS are the fit's (links.Fit): how much one flow varies
	// from epoch to epoch, and how far the links miss the flows' means.
	Noise float64 `json:"noise"`
	RMS   float64 `json:"rms"`
	// Misfit: the links miss the flows' means by more than the tuner's
	// calibration tolerance, as a busy CPU makes them: loads may then be
	// the hosts', not the network's.
	Misfit bool `json:"misfit"`
	// SlowHosts are the ranks slow themselves rather than congested
	// (links.Model.SlowHosts); their links' loads stay in Links, marked
	// Host.
	SlowHosts []HostLoad `json:"slow_hosts"`
	Links     []LinkLoad `json:"links"`
	Pairs     []PairLoad `json:"pairs"`
	Changes   []Change   `json:"changes"`
}

// Times summarises one batch's collective times, in seconds.
type Times struct {
	Batch  int     `json:"batch"`
	Epochs int     `json:"epochs"`
	Mean   float64 `json:"mean"`
	P95    float64 `json:"p95"`
}

// LinkRef names a rank's uplink ("up") or downlink ("down").
type LinkRef struct {
	Rank int    `json:"rank"`
	Dir  string `json:"dir"`
}

// String names the link as the reports write it: "rank 3's downlink".
func (l LinkRef) String() string { return l.named(rankName) }

// named names the link with its rank named by node.
func (l LinkRef) named(node func(int) string) string {
	if l.Dir == "down" {
		return node(l.Rank) + "'s downlink"
	}
	return node(l.Rank) + "'s uplink"
}

func rankName(rank int) string { return fmt.Sprintf("rank %d", rank) }

// LinkLoad is a link the fit gives competing flows, with the count's
// standard error, whether it is significant (links.Significant: what the
// tuner acts on), and the links the observations cannot tell it apart
// from (links.Model.Ambiguous; nil: not checked, past the
// maxAmbiguityChecks most loaded): an operator should look at all of them.
//
// SE is -1 where the fit cannot bound the count (its loss is flat along
// it): JSON has no infinity.
type LinkLoad struct {
	LinkRef
	Competing float64 `json:"competing"`
	SE        float64 `json:"se"`
	// Slow: the link reads slower than the line rate (a degraded cable),
	// carrying 1/(1+Slow) of it, its flows and the competing ones
	// together; SlowSE its standard error.
	Slow          float64   `json:"slow"`
	SlowSE        float64   `json:"slow_se"`
	Significant   bool      `json:"significant"`
	AmbiguousWith []LinkRef `json:"ambiguous_with"`
	// Host: its rank is a slow host (SlowHosts), and the load is read as
	// the rank's own slowness, not competing flows; the tuner still acts
	// on the count (a congested downlink that delays the acknowledgements
	// of the rank's sends reads alike: docs/tuner.md).
	Host bool `json:"host"`
}

// HostLoad is a slow host (links.SlowHost), of Kind "slow" (a slow NIC or
// bus: its flows carry as if Factor times their bytes) or "busy" (a CPU
// its sends and receives share with Busy competing flows); Send and
// Receive are what its sends and its receives take against the links
// without it. Its links' loads are in Links, marked Host.
type HostLoad struct {
	Rank    int     `json:"rank"`
	Kind    string  `json:"kind"`
	Factor  float64 `json:"factor"`
	SE      float64 `json:"se"`
	Send    float64 `json:"send"`
	Receive float64 `json:"receive"`
	Busy    float64 `json:"busy"`
}

// PairLoad is a (src, dst) pair that stands out of its noise (links.Pair):
// its flows take Factor times what the links explain.
type PairLoad struct {
	Src    int32   `json:"src"`
	Dst    int32   `json:"dst"`
	Factor float64 `json:"factor"`
	SE     float64 `json:"se"`
}

// Change is one pattern change: decided at Epoch, run from Effective,
// version From to To, by Swaps; the speed-up predicted and the one the
// judge measured, and the verdict: "pending", "kept" or "reverted".
type Change struct {
	Batch     int      `json:"batch"`
	Epoch     int      `json:"epoch"`
	Effective int      `json:"effective"`
	From      int      `json:"from"`
	To        int      `json:"to"`
	Swaps     []string `json:"swaps"`
	Predicted float64  `json:"predicted"`
	Measured  float64  `json:"measured"`
	Verdict   string   `json:"verdict"`
}

// maxAmbiguityChecks bounds the links, most loaded first, whose ambiguity
// a report looks for (each costs a few replays of the held epochs per
// link sharing its flows); the others' AmbiguousWith stays nil: not checked.
const maxAmbiguityChecks = 8

// maxChanges bounds the changes a tuner keeps for its report.
const maxChanges = 64

// record folds a decision into the report's changes and times.
func (t *Tuner) record(d *Decision) {
	t.times = &Times{Batch: d.Batch, Epochs: len(t.elapsed), Mean: mean(t.elapsed), P95: p95(t.elapsed)}
	if (d.Kept || d.Reverted) && len(t.changes) > 0 {
		c := &t.changes[len(t.changes)-1]
		if c.Verdict == "pending" {
			c.Verdict = "kept"
			if d.Reverted {
				c.Verdict = "reverted"
			}
			c.Measured = d.ObservedGain
			if c.Measured == 0 && d.Observed > 0 { // the paper's loop: before over after
				c.Measured = d.Previous / d.Observed
			}
		}
	}
	if d.Pattern == nil || d.Reverted { // a revert runs the old pattern again
		return
	}
	var swaps []string
	for _, tr := range d.Trials {
		if tr.Accepted {
			swaps = append(swaps, tr.Swap.String())
		}
	}
	if len(t.changes) == maxChanges {
		t.changes = slices.Delete(t.changes, 0, 1)
	}
	t.changes = append(t.changes, Change{Batch: d.Batch, Epoch: d.Epoch, Effective: d.Effective, From: d.Version, To: d.NewVersion,
		Swaps: swaps, Predicted: d.Expected, Verdict: "pending"})
}

// Report says what the tuner knows now. For Model react it replays the
// held epochs a few times per loaded link to find the links each cannot
// be told apart from; call it when asked, not every epoch.
func (t *Tuner) Report() Report {
	r := Report{Model: t.cfg.Model, Op: t.cur.Op.String(), Algo: t.cur.Algo, Ranks: t.cur.Ranks, Bytes: t.bytes,
		Epoch: t.last, Version: t.version, SlowHosts: []HostLoad{}, Links: []LinkLoad{}, Pairs: []PairLoad{}, Changes: slices.Clone(t.changes)}
	if t.times != nil {
		tm := *t.times
		r.Time = &tm
	}
	if r.Changes == nil {
		r.Changes = []Change{}
	}
	t.loop.report(&r)
	return r
}

func (t *paperLoop) report(*Report) {}

func (t *reactLoop) report(r *Report) {
	f := t.fit
	if f == nil {
		return
	}
	r.Noise, r.RMS, r.Misfit = f.Noise, f.RMS, f.RMS > calibrationTolerance
	slow := map[int]bool{}
	for _, h := range t.links.SlowHosts() {
		r.SlowHosts = append(r.SlowHosts, HostLoad{Rank: h.Rank, Kind: h.Kind, Factor: h.Factor, SE: h.SE, Send: h.Send, Receive: h.Receive, Busy: h.Busy})
		slow[h.Rank] = true
	}
	bounded := func(se float64) float64 {
		if math.IsInf(se, 0) || math.IsNaN(se) { // the loss is flat along this parameter
			return -1
		}
		return se
	}
	n := len(f.Net.Up)
	add := func(rank int, down bool, k, se float64) {
		l := LinkLoad{LinkRef: linkRef(links.Link{Rank: rank, Down: down}), Competing: k, SE: bounded(se), Host: slow[rank]}
		if f.Net.Slow != nil {
			i := rank
			if down {
				i += n
			}
			l.Slow, l.SlowSE = f.Net.Slow[i], bounded(f.SlowSE[i])
		}
		if k < 0.01 && l.Slow < 0.01 {
			return
		}
		l.Significant = links.Significant(k, l.SE) || links.Significant(l.Slow, l.SlowSE)
		r.Links = append(r.Links, l)
	}
	for rank := range f.Net.Up {
		add(rank, false, f.Net.Up[rank], f.UpSE[rank])
		add(rank, true, f.Net.Down[rank], f.DownSE[rank])
	}
	slices.SortStableFunc(r.Links, func(a, b LinkLoad) int { return cmp.Compare(b.Competing+b.Slow, a.Competing+a.Slow) })
	for i := range r.Links[:min(len(r.Links), maxAmbiguityChecks)] {
		l := &r.Links[i]
		l.AmbiguousWith = []LinkRef{}
		for _, o := range t.links.Ambiguous(links.Link{Rank: l.Rank, Down: l.Dir == "down"}) {
			l.AmbiguousWith = append(l.AmbiguousWith, linkRef(o))
		}
	}
	for _, p := range f.Pairs {
		r.Pairs = append(r.Pairs, PairLoad{Src: p.Src, Dst: p.Dst, Factor: p.Factor, SE: p.SE})
	}
}

func linkRef(l links.Link) LinkRef {
	if l.Down {
		return LinkRef{Rank: l.Rank, Dir: "down"}
	}
	return LinkRef{Rank: l.Rank, Dir: "up"}
}

// p95 is the empirical 95th percentile, as the scenario results' (0 for none).
func p95(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return stat.Quantile(0.95, stat.Empirical, slices.Sorted(slices.Values(xs)), nil)
}
