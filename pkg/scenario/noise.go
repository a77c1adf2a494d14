package scenario

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/react-torch/react-torch/internal/splitmix"
	"github.com/react-torch/react-torch/pkg/ten"
)

// NoiseSpec is measurement noise on what the tuner sees, never on the
// collective's true time (the series every table reports): a real runtime
// times flows with clocks that jitter and on hosts that other processes
// slow down, and a tuner that reads such noise as congestion costs the
// user. The simulator alone has none, so without this a tuner that chases
// noise would look perfect.
//
// Every FCT the tuner sees is multiplied by exp(Sigma*z), and the
// collective time it sees (tuner.Observe's elapsed) by its own exp(Sigma*z),
// z standard normal, drawn afresh per flow and per epoch. With RankSigma > 0
// every rank r of a job also has a slowdown exp(RankSigma*z_r), redrawn every
// Period epochs of the job, and a flow's FCT is multiplied by the larger of
// its source's and its destination's: a host slowed by CPU contention
// delays what it sends and what it receives, for epochs at a time.
//
// The draws depend only on the case's seed, Seed, the job and the epoch (and
// the flow's index in the pattern), so every REACT run of a case (the
// compared tuner settings) sees the same noise.
type NoiseSpec struct {
	Sigma     float64 `json:"sigma,omitempty"`
	Seed      uint64  `json:"seed,omitempty"`
	RankSigma float64 `json:"rank_sigma,omitempty"`
	Period    int     `json:"period,omitempty"` // epochs; required with rank_sigma
}

// maxSigma bounds both sigmas: exp(4z) already spans a factor of 10^7
// within z = ±4, far past any clock's noise.
const maxSigma = 4

func (n *NoiseSpec) check() error {
	switch {
	case !(n.Sigma >= 0 && n.Sigma <= maxSigma):
		return fmt.Errorf("sigma = %v, want in [0, %d] (the log-standard deviation of each FCT's factor)", n.Sigma, maxSigma)
	case !(n.RankSigma >= 0 && n.RankSigma <= maxSigma):
		return fmt.Errorf("rank_sigma = %v, want in [0, %d] (the log-standard deviation of each rank's slowdown)", n.RankSigma, maxSigma)
	case n.Period < 0:
		return fmt.Errorf("period = %d epochs, want >= 1", n.Period)
	case n.RankSigma > 0 && n.Period < 1:
		return fmt.Errorf("period = %d epochs with rank_sigma = %v, want >= 1 (how often each rank's slowdown is redrawn)", n.Period, n.RankSigma)
	}
	return nil
}

func (n *NoiseSpec) on() bool { return n.Sigma > 0 || n.RankSigma > 0 }

// noise draws a case's noise. Its draws are a pure function of (key, job,
// epoch, flow), so the order in which jobs and epochs end does not matter.
type noise struct {
	spec NoiseSpec
	key  uint64
	// Per job: the period its rank slowdowns were drawn for (-1: none yet)
	// and the slowdowns.
	period []int
	rank   [][]float64
}

// Tags of the noise's streams.
const (
	noiseEpoch = iota + 1
	noiseRank
)

// newNoise returns the noise of the case with seed seed, nil when the spec
// adds none.
func newNoise(spec NoiseSpec, seed uint64, jobs int) *noise {
	if !spec.on() {
		return nil
	}
	n := &noise{spec: spec, key: caseRand(seed, streamNoise).Uint64() ^ splitmix.Next(spec.Seed), period: make([]int, jobs), rank: make([][]float64, jobs)}
	for j := range n.period {
		n.period[j] = -1
	}
	return n
}

// stream is the random source of one (tag, job, index).
func (n *noise) stream(tag, job, index int) *rand.Rand {
	h := splitmix.Next(n.key ^ splitmix.Next(uint64(tag)))
	h = splitmix.Next(h ^ splitmix.Next(uint64(job)+0x632be59bd9b4e019))
	return rand.New(rand.NewPCG(h, splitmix.Next(h^uint64(index))))
}

// apply multiplies job's FCTs of epoch (flows of p) by their noise, in
// place, and returns the noisy collective time.
func (n *noise) apply(job, epoch int, p *ten.Pattern, fct []float64, elapsed float64) float64 {
	if s := n.spec.Sigma; s > 0 {
		r := n.stream(noiseEpoch, job, epoch)
		elapsed *= math.Exp(s * r.NormFloat64())
		for i := range fct {
			fct[i] *= math.Exp(s * r.NormFloat64())
		}
	}
	if n.spec.RankSigma > 0 {
		f := n.slowdowns(job, epoch, p.Ranks)
		for i := range fct {
			fct[i] *= max(f[p.Flows[i].Src], f[p.Flows[i].Dst])
		}
	}
	return elapsed
}

// slowdowns returns the ranks' slowdowns in force at epoch.
func (n *noise) slowdowns(job, epoch, ranks int) []float64 {
	k := epoch / n.spec.Period
	if n.period[job] == k && len(n.rank[job]) == ranks {
		return n.rank[job]
	}
	r := n.stream(noiseRank, job, k)
	f := make([]float64, ranks)
	for i := range f {
		f[i] = math.Exp(n.spec.RankSigma * r.NormFloat64())
	}
	n.period[job], n.rank[job] = k, f
	return f
}
