package scenario

import (
	"fmt"
	"slices"

	"gonum.org/v1/gonum/stat"

	"github.com/react-torch/react-torch/pkg/netsim"
	"github.com/react-torch/react-torch/pkg/ten"
)

// Series is one job's collective time epoch by epoch in one run, and its
// statistics over the measured epochs (after MeasureAfter).
type Series struct {
	Times []float64 `json:"epoch_times"` // seconds, every epoch
	// Reduce is, for AllReduce, when the last reduce flow of each epoch
	// completed: the reduce phase of §4.3.
	Reduce []float64 `json:"reduce_times,omitempty"`
	Mean   float64   `json:"mean"` // s
	P95    float64   `json:"p95"`  // s
	// AlgBW is the mean over the measured epochs of message size / time,
	// bytes/s (the paper's and nccl-tests' algorithm bandwidth).
	AlgBW float64 `json:"algbw"`
	// AlgBWP95 is message size / P95.
	AlgBWP95   float64 `json:"algbw_p95"`
	ReduceMean float64 `json:"reduce_mean,omitempty"`
	// NetBytes is the mean over the measured epochs of the bytes the
	// job's flows sent over the network (flows within a host left out).
	NetBytes float64 `json:"net_bytes"`
}

// NamedSeries is a variant's series.
type NamedSeries struct {
	Name string `json:"name"`
	Series
}

// JobRun is every figure of one job in one case.
type JobRun struct {
	Name  string  `json:"name"`
	Op    string  `json:"op"`
	Algo  string  `json:"algo"`
	Ranks int     `json:"ranks"`
	Bytes float64 `json:"bytes"`
	// Tuned: REACT ran on this job (a static job still feels the others'
	// changes in the REACT run).
	Tuned    bool          `json:"tuned"`
	Baseline Series        `json:"baseline"`
	React    Series        `json:"react"`
	Oracle   *Series       `json:"oracle,omitempty"`
	Variants []NamedSeries `json:"variants,omitempty"`
	// Improvement is REACT's algorithm bandwidth over the baseline's, in
	// percent; P95 the same for the p95 collective time.
	Improvement    float64 `json:"improvement"`
	ImprovementP95 float64 `json:"improvement_p95"`
	// OracleImprovement and OracleImprovementP95 are the oracle's.
	OracleImprovement    *float64 `json:"oracle_improvement,omitempty"`
	OracleImprovementP95 *float64 `json:"oracle_improvement_p95,omitempty"`
	// Share is REACT's gain in algorithm bandwidth over the better
	// oracle's (BestOracle); nil when that oracle gains under 0.1%.
	Share *float64 `json:"share,omitempty"`
	// Changes counts the patterns the tuner emitted (reverts included).
	Changes   int        `json:"changes"`
	Kept      int        `json:"kept"`
	Reverted  int        `json:"reverted"`
	Decisions []Decision `json:"decisions,omitempty"`
	// Compare is the run of each of the scenario's compared tuner
	// settings, in its order.
	Compare []CompareRun `json:"compare,omitempty"`
	// The oracle's pattern is these transforms of the initial one.
	OracleSwaps []string `json:"oracle_swaps,omitempty"`
	// OracleEvaluated counts its simulations; OracleDepth is the depth it
	// searched; OracleExhaustive says whether it tried every pattern within
	// that depth (false when the beam or the budget cut it).
	OracleEvaluated  int  `json:"oracle_evaluated,omitempty"`
	OracleDepth      int  `json:"oracle_depth,omitempty"`
	OracleExhaustive bool `json:"oracle_exhaustive,omitempty"`
	// Climb is the climbing oracle's run (oracle.climb) and its gains;
	// its pattern is ClimbSwaps applied to the initial one; it ran
	// ClimbEvaluated simulations beyond the depth search's, and ClimbDone
	// says that every climb reached its top within the budget.
	Climb               *Series  `json:"climb,omitempty"`
	ClimbImprovement    *float64 `json:"climb_improvement,omitempty"`
	ClimbImprovementP95 *float64 `json:"climb_improvement_p95,omitempty"`
	ClimbSwaps          []string `json:"climb_swaps,omitempty"`
	ClimbEvaluated      int      `json:"climb_evaluated,omitempty"`
	ClimbDone           bool     `json:"climb_done,omitempty"`
	// BestOracle names the better of the two oracles by the oracle's
	// objective (OracleDepth or OracleClimb; the depth search on a tie),
	// the one Share is measured against, and its gains.
	BestOracle               string   `json:"best_oracle,omitempty"`
	BestOracleImprovement    *float64 `json:"best_oracle_improvement,omitempty"`
	BestOracleImprovementP95 *float64 `json:"best_oracle_improvement_p95,omitempty"`
}

// The names of the two oracles in results (JobRun.BestOracle).
const (
	OracleDepth = "depth"
	OracleClimb = "climb"
)

// CompareRun is one compared tuner setting's REACT run of a job: the
// same figures as JobRun's for the main one.
type CompareRun struct {
	Name           string     `json:"name"`
	React          Series     `json:"react"`
	Improvement    float64    `json:"improvement"`
	ImprovementP95 float64    `json:"improvement_p95"`
	Share          *float64   `json:"share,omitempty"`
	Changes        int        `json:"changes"`
	Kept           int        `json:"kept"`
	Reverted       int        `json:"reverted"`
	Decisions      []Decision `json:"decisions,omitempty"`
}

// Run is one case: what its seed drew and every figure of every job.
type Run struct {
	Cell     int        `json:"cell"`
	Params   []Param    `json:"params,omitempty"`
	Seed     uint64     `json:"seed"`
	Hosts    [][]int    `json:"hosts"`
	External []External `json:"external,omitempty"`
	Cuts     []Cut      `json:"failures,omitempty"`
	Jobs     []JobRun   `json:"jobs"`
}

// Options are how a case runs; they never change its figures.
type Options struct {
	// Progress, when set, is called now and then with the share of the
	// case done, from the goroutine that runs it.
	Progress func(done float64)
}

// RunCase runs one case: baseline, REACT, the compared tuner settings,
// oracle and variants.
func (s *Scenario) RunCase(c Case, opt Options) (*Run, error) {
	in, err := s.instance(c)
	if err != nil {
		return nil, err
	}
	sc := in.sc
	run := &Run{Cell: c.Cell, Params: slices.Clone(s.cells[c.Cell].params), Seed: c.Seed, Hosts: in.hosts, External: in.ext, Cuts: in.cuts}
	prog := progress{f: opt.Progress, total: float64(2 + len(sc.Variants) + len(sc.Compare))}
	var tuned []int
	for i := range sc.Jobs {
		if sc.Jobs[i].react() {
			tuned = append(tuned, i)
		}
	}
	if !sc.Oracle.Off {
		for _, j := range tuned {
			prog.total += in.oracleEstimate(j)
			if sc.Oracle.Climb {
				prog.total += in.climbEstimate(j)
			}
		}
	}
	sim := in.newSim(true, true)

	base, err := in.static(sim, in.patterns)
	if err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	prog.step(1)
	react, err := in.react(sim, tuned, sc.Tuner)
	if err != nil {
		return nil, fmt.Errorf("react: %w", err)
	}
	prog.step(1)
	compare := make([]*reactResult, len(sc.Compare))
	for k := range sc.Compare {
		cs := &sc.Compare[k]
		if compare[k], err = in.react(sim, tuned, cs.Tuner.over(sc.Tuner)); err != nil {
			return nil, fmt.Errorf("react (%s): %w", cs.Name, err)
		}
		prog.step(1)
	}
	var orc, clm *oracleResult
	if !sc.Oracle.Off {
		if orc, err = in.oracle(sim, tuned, base, &prog); err != nil {
			return nil, fmt.Errorf("oracle: %w", err)
		}
		if sc.Oracle.Climb {
			if clm, err = in.climb(sim, tuned, base, &prog); err != nil {
				return nil, fmt.Errorf("climbing oracle: %w", err)
			}
		}
	}
	variants := make([][]Series, len(sc.Variants))
	for k := range sc.Variants {
		v := &sc.Variants[k]
		vs := sim
		if v.NoExternal || v.NoFailures {
			vs = in.newSim(!v.NoExternal, !v.NoFailures)
		}
		jobs := in.jobs
		if v.Flat {
			jobs = nil
			for i := range sc.Jobs {
				jobs = append(jobs, in.flatJob(i))
			}
		}
		if variants[k], err = in.staticJobs(vs, jobs, s.cells[c.Cell].variants[k]); err != nil {
			return nil, fmt.Errorf("variant %s: %w", v.Name, err)
		}
		prog.step(1)
	}
	for i := range sc.Jobs {
		run.Jobs = append(run.Jobs, in.jobRun(i, base[i], react, compare, orc, clm, variants))
	}
	prog.finish()
	return run, nil
}

// jobRun gathers job i's figures of one case: its baseline, REACT's run,
// the compared tuners', the oracles' and the variants', and the gains and
// shares between them.
func (in *instance) jobRun(i int, baseline Series, react *reactResult, compare []*reactResult, orc, clm *oracleResult, variants [][]Series) JobRun {
	sc := in.sc
	j := &sc.Jobs[i]
	p := in.patterns[i]
	jr := JobRun{Name: j.Name, Op: p.Op.String(), Algo: p.Algo, Ranks: p.Ranks, Bytes: j.Bytes, Tuned: j.react(),
		Baseline: baseline, React: react.series[i]}
	jr.Improvement = gain(jr.Baseline.AlgBW, jr.React.AlgBW)
	jr.ImprovementP95 = gain(jr.Baseline.AlgBWP95, jr.React.AlgBWP95)
	jr.Changes, jr.Kept, jr.Reverted, jr.Decisions = react.changes[i], react.kept[i], react.reverted[i], react.decisions[i]
	var best *Series // the better oracle's run
	if orc != nil {
		o := orc.series[i]
		jr.Oracle, best = &o, &o
		g, g95 := gain(jr.Baseline.AlgBW, o.AlgBW), gain(jr.Baseline.AlgBWP95, o.AlgBWP95)
		jr.OracleImprovement, jr.OracleImprovementP95 = &g, &g95
		jr.OracleSwaps = orc.swaps[i]
		jr.OracleEvaluated, jr.OracleDepth, jr.OracleExhaustive = orc.evaluated[i], orc.depth[i], orc.exhaustive[i]
		jr.BestOracle = OracleDepth
	}
	if clm != nil {
		o := clm.series[i]
		jr.Climb = &o
		g, g95 := gain(jr.Baseline.AlgBW, o.AlgBW), gain(jr.Baseline.AlgBWP95, o.AlgBWP95)
		jr.ClimbImprovement, jr.ClimbImprovementP95 = &g, &g95
		jr.ClimbSwaps, jr.ClimbEvaluated, jr.ClimbDone = clm.swaps[i], clm.evaluated[i], clm.exhaustive[i]
		if in.objective(o) > in.objective(*best) {
			best, jr.BestOracle = &o, OracleClimb
		}
	}
	if best != nil {
		g, g95 := gain(jr.Baseline.AlgBW, best.AlgBW), gain(jr.Baseline.AlgBWP95, best.AlgBWP95)
		jr.BestOracleImprovement, jr.BestOracleImprovementP95 = &g, &g95
		jr.Share = share(jr.Baseline.AlgBW, jr.React.AlgBW, best.AlgBW)
	}
	for k, cr := range compare {
		c := CompareRun{Name: sc.Compare[k].Name, React: cr.series[i],
			Changes: cr.changes[i], Kept: cr.kept[i], Reverted: cr.reverted[i], Decisions: cr.decisions[i]}
		c.Improvement = gain(jr.Baseline.AlgBW, c.React.AlgBW)
		c.ImprovementP95 = gain(jr.Baseline.AlgBWP95, c.React.AlgBWP95)
		if best != nil {
			c.Share = share(jr.Baseline.AlgBW, c.React.AlgBW, best.AlgBW)
		}
		jr.Compare = append(jr.Compare, c)
	}
	for k := range sc.Variants {
		jr.Variants = append(jr.Variants, NamedSeries{sc.Variants[k].Name, variants[k][i]})
	}
	return jr
}

// gain is b over a in percent.
func gain(a, b float64) float64 { return 100 * (b/a - 1) }

// share is a tuner's gain in algorithm bandwidth over the baseline's (base)
// as a fraction of the oracle's; nil when the oracle gains under 0.1%.
func share(base, tuned, oracle float64) *float64 {
	d := oracle - base
	if d <= 1e-3*base {
		return nil
	}
	sh := (tuned - base) / d
	return &sh
}

type progress struct {
	f           func(float64)
	total, done float64
}

func (p *progress) step(units float64) {
	p.done += units
	if p.f != nil {
		p.f(min(p.done/p.total, 1))
	}
}

func (p *progress) finish() {
	if p.f != nil {
		p.f(1)
	}
}

// recorder keeps every job's epoch times and network bytes.
type recorder struct {
	times, reduce, net [][]float64
}

func newRecorder(jobs int) *recorder {
	return &recorder{times: make([][]float64, jobs), reduce: make([][]float64, jobs), net: make([][]float64, jobs)}
}

func (r *recorder) record(res netsim.EpochResult) {
	r.times[res.Job] = append(r.times[res.Job], res.Elapsed)
	r.net[res.Job] = append(r.net[res.Job], res.NetBytes)
	if p := res.Pattern; p.Op == ten.AllReduce {
		t := 0.0
		for g, end := range res.FlowFinish {
			if p.Flows[g%len(p.Flows)].Kind == ten.KindReduce {
				t = max(t, end)
			}
		}
		r.reduce[res.Job] = append(r.reduce[res.Job], t)
	}
}

// series turns the recorded times into each job's Series.
func (in *instance) series(r *recorder) ([]Series, error) {
	out := make([]Series, len(in.sc.Jobs))
	for i := range out {
		if len(r.times[i]) != in.sc.Epochs {
			return nil, fmt.Errorf("job %s ran %d of %d epochs", in.sc.Jobs[i].Name, len(r.times[i]), in.sc.Epochs)
		}
		out[i] = newSeries(r.times[i], r.reduce[i], in.sc.Jobs[i].Bytes, in.sc.MeasureAfter)
		for _, b := range r.net[i][in.sc.MeasureAfter:] {
			out[i].NetBytes += b / float64(in.sc.Epochs-in.sc.MeasureAfter)
		}
	}
	return out, nil
}

func newSeries(times, reduce []float64, bytes float64, after int) Series {
	s := Series{Times: times}
	m := times[after:]
	bw := 0.0
	for _, t := range m {
		s.Mean += t / float64(len(m))
		bw += bytes / t / float64(len(m))
	}
	s.AlgBW = bw
	s.P95 = p95(m)
	s.AlgBWP95 = bytes / s.P95
	if len(reduce) == len(times) {
		s.Reduce = reduce
		for _, t := range reduce[after:] {
			s.ReduceMean += t / float64(len(m))
		}
	}
	return s
}

func p95(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return stat.Quantile(0.95, stat.Empirical, s, nil)
}

// staticDriver runs fixed patterns.
type staticDriver struct {
	pats []*ten.Pattern
	rec  *recorder
}

func (d *staticDriver) Pattern(job, epoch int) *ten.Pattern { return d.pats[job] }
func (d *staticDriver) Done(r netsim.EpochResult)           { d.rec.record(r) }

func (in *instance) static(sim *netsim.Sim, pats []*ten.Pattern) ([]Series, error) {
	return in.staticJobs(sim, in.jobs, pats)
}

// staticJobs runs fixed patterns on jobs other than the case's own (the
// flat variant's).
func (in *instance) staticJobs(sim *netsim.Sim, jobs []netsim.Job, pats []*ten.Pattern) ([]Series, error) {
	d := &staticDriver{pats: pats, rec: newRecorder(len(pats))}
	if err := sim.Run(jobs, in.sc.Epochs, d); err != nil {
		return nil, err
	}
	return in.series(d.rec)
}
