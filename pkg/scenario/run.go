package scenario

import (
	"fmt"
	"slices"

	"gonum.org/v1/gonum/stat"

	"github.com/react-torch/react-torch/pkg/netsim"
	"github.com/react-torch/react-torch/pkg/semantics"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/react-torch/react-torch/pkg/transform"
	"github.com/react-torch/react-torch/pkg/tuner"
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
}

// NamedSeries is a variant's series.
type NamedSeries struct {
	Name string `json:"name"`
	Series
}

// Decision is a batch of the tuner that changed something.
type Decision struct {
	Batch     int      `json:"batch"`
	Epoch     int      `json:"epoch"`
	Observed  float64  `json:"observed"` // mean collective time of the batch, s
	Kept      bool     `json:"kept,omitempty"`
	Reverted  bool     `json:"reverted,omitempty"`
	Effective int      `json:"effective,omitempty"` // epoch the new pattern runs from
	Swaps     []string `json:"swaps,omitempty"`     // transforms accepted into it
	// Predicted is the tuner's model's speed-up of the new pattern on the
	// batch's critical paths (first accepted trial's before over the last
	// one's after).
	Predicted float64 `json:"predicted,omitempty"`
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
	// Share is REACT's gain in algorithm bandwidth over the oracle's; nil
	// when the oracle gains under 0.1%.
	Share *float64 `json:"share,omitempty"`
	// Changes counts the patterns the tuner emitted (reverts included).
	Changes   int        `json:"changes"`
	Kept      int        `json:"kept"`
	Reverted  int        `json:"reverted"`
	Decisions []Decision `json:"decisions,omitempty"`
	// The oracle's pattern is these transforms of the initial one.
	OracleSwaps []string `json:"oracle_swaps,omitempty"`
	// OracleEvaluated counts its simulations; OracleDepth is the depth it
	// searched; OracleExhaustive says whether it tried every pattern within
	// that depth (false when the beam or the budget cut it).
	OracleEvaluated  int  `json:"oracle_evaluated,omitempty"`
	OracleDepth      int  `json:"oracle_depth,omitempty"`
	OracleExhaustive bool `json:"oracle_exhaustive,omitempty"`
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

// RunCase runs one case: baseline, REACT, oracle and variants.
func (s *Scenario) RunCase(c Case, opt Options) (*Run, error) {
	in, err := s.instance(c)
	if err != nil {
		return nil, err
	}
	sc := in.sc
	run := &Run{Cell: c.Cell, Params: slices.Clone(s.cells[c.Cell].params), Seed: c.Seed, Hosts: in.hosts, External: in.ext, Cuts: in.cuts}
	prog := progress{f: opt.Progress, total: float64(2 + len(sc.Variants))}
	var tuned []int
	for i := range sc.Jobs {
		if sc.Jobs[i].react() {
			tuned = append(tuned, i)
		}
	}
	if !sc.Oracle.Off {
		for _, j := range tuned {
			prog.total += in.oracleEstimate(j)
		}
	}
	sim := in.newSim(true, true)

	base, err := in.static(sim, in.patterns)
	if err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	prog.step(1)
	react, err := in.react(sim, tuned)
	if err != nil {
		return nil, fmt.Errorf("react: %w", err)
	}
	prog.step(1)
	var orc *oracleResult
	if !sc.Oracle.Off {
		if orc, err = in.oracle(sim, tuned, base, &prog); err != nil {
			return nil, fmt.Errorf("oracle: %w", err)
		}
	}
	variants := make([][]Series, len(sc.Variants))
	for k := range sc.Variants {
		v := &sc.Variants[k]
		vs := sim
		if v.NoExternal || v.NoFailures {
			vs = in.newSim(!v.NoExternal, !v.NoFailures)
		}
		if variants[k], err = in.static(vs, s.cells[c.Cell].variants[k]); err != nil {
			return nil, fmt.Errorf("variant %s: %w", v.Name, err)
		}
		prog.step(1)
	}
	for i := range sc.Jobs {
		j := &sc.Jobs[i]
		p := in.patterns[i]
		jr := JobRun{Name: j.Name, Op: p.Op.String(), Algo: p.Algo, Ranks: p.Ranks, Bytes: j.Bytes, Tuned: j.react(),
			Baseline: base[i], React: react.series[i]}
		jr.Improvement = gain(jr.Baseline.AlgBW, jr.React.AlgBW)
		jr.ImprovementP95 = gain(jr.Baseline.AlgBWP95, jr.React.AlgBWP95)
		jr.Changes, jr.Kept, jr.Reverted, jr.Decisions = react.changes[i], react.kept[i], react.reverted[i], react.decisions[i]
		if orc != nil {
			o := orc.series[i]
			jr.Oracle = &o
			g, g95 := gain(jr.Baseline.AlgBW, o.AlgBW), gain(jr.Baseline.AlgBWP95, o.AlgBWP95)
			jr.OracleImprovement, jr.OracleImprovementP95 = &g, &g95
			if d := o.AlgBW - jr.Baseline.AlgBW; d > 1e-3*jr.Baseline.AlgBW {
				sh := (jr.React.AlgBW - jr.Baseline.AlgBW) / d
				jr.Share = &sh
			}
			jr.OracleSwaps = orc.swaps[i]
			jr.OracleEvaluated, jr.OracleDepth, jr.OracleExhaustive = orc.evaluated[i], orc.depth[i], orc.exhaustive[i]
		}
		for k := range sc.Variants {
			jr.Variants = append(jr.Variants, NamedSeries{sc.Variants[k].Name, variants[k][i]})
		}
		run.Jobs = append(run.Jobs, jr)
	}
	prog.finish()
	return run, nil
}

// gain is b over a in percent.
func gain(a, b float64) float64 { return 100 * (b/a - 1) }

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

// recorder keeps every job's epoch times.
type recorder struct {
	times, reduce [][]float64
}

func newRecorder(jobs int) *recorder {
	return &recorder{times: make([][]float64, jobs), reduce: make([][]float64, jobs)}
}

func (r *recorder) record(res netsim.EpochResult) {
	r.times[res.Job] = append(r.times[res.Job], res.Elapsed)
	if p := res.Pattern; p.Op == ten.AllReduce {
		t := 0.0
		for f := range p.Flows {
			if p.Flows[f].Kind == ten.KindReduce {
				t = max(t, res.FlowFinish[f])
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
	d := &staticDriver{pats: pats, rec: newRecorder(len(pats))}
	if err := sim.Run(in.jobs, in.sc.Epochs, d); err != nil {
		return nil, err
	}
	return in.series(d.rec)
}

// reactDriver runs a tuner in the loop for every tuned job, as the runtime
// does: the tuner names each epoch's pattern and gets each epoch's FCTs.
type reactDriver struct {
	static []*ten.Pattern
	tuners []*tuner.Tuner
	rec    *recorder
	noise  *noise // nil: the tuner sees the simulator's times
	err    error

	changes, kept, reverted []int
	decisions               [][]Decision
}

func (d *reactDriver) Pattern(job, epoch int) *ten.Pattern {
	if d.err != nil {
		return nil
	}
	if tu := d.tuners[job]; tu != nil {
		p, _ := tu.Pattern(epoch)
		return p
	}
	return d.static[job]
}

// minFCT stands in for a zero FCT (a flow of no bytes on a link of no
// latency), which the tuner refuses.
const minFCT = 1e-12

func (d *reactDriver) Done(r netsim.EpochResult) {
	d.rec.record(r)
	tu := d.tuners[r.Job]
	if tu == nil || d.err != nil {
		return
	}
	fct := make([]float64, len(r.FlowStart))
	for i := range fct {
		fct[i] = max(r.FlowFinish[i]-r.FlowStart[i], minFCT)
	}
	elapsed := r.Elapsed
	if d.noise != nil {
		elapsed = d.noise.apply(r.Job, r.Epoch, r.Pattern, fct, elapsed)
	}
	dec, err := tu.Observe(r.Epoch, fct, elapsed)
	if err != nil {
		d.err = fmt.Errorf("job %d epoch %d: %w", r.Job, r.Epoch, err)
		return
	}
	if dec == nil || (dec.Pattern == nil && !dec.Kept && !dec.Reverted) {
		return
	}
	j := r.Job
	log := Decision{Batch: dec.Batch, Epoch: dec.Epoch, Observed: dec.Observed, Kept: dec.Kept, Reverted: dec.Reverted}
	if dec.Kept {
		d.kept[j]++
	}
	if dec.Reverted {
		d.reverted[j]++
	}
	if dec.Pattern != nil {
		d.changes[j]++
		log.Effective = dec.Effective
		before, after := 0.0, 0.0
		for _, t := range dec.Trials {
			if t.Accepted {
				log.Swaps = append(log.Swaps, t.Swap.String())
				if before == 0 {
					before = t.Before
				}
				after = t.After
			}
		}
		if after > 0 {
			log.Predicted = before / after
		}
	}
	d.decisions[j] = append(d.decisions[j], log)
}

type reactResult struct {
	series                  []Series
	changes, kept, reverted []int
	decisions               [][]Decision
}

func (in *instance) react(sim *netsim.Sim, tuned []int) (*reactResult, error) {
	n := len(in.sc.Jobs)
	d := &reactDriver{static: in.patterns, tuners: make([]*tuner.Tuner, n), rec: newRecorder(n), noise: newNoise(in.sc.Noise, in.seed, n),
		changes: make([]int, n), kept: make([]int, n), reverted: make([]int, n), decisions: make([][]Decision, n)}
	seeds := caseRand(in.seed, streamTuner)
	for _, j := range tuned {
		cfg := in.sc.Tuner.config(seeds.Uint64() + uint64(j))
		tu, err := tuner.New(cfg, in.patterns[j], in.sc.Jobs[j].Bytes)
		if err != nil {
			return nil, fmt.Errorf("job %s: %w", in.sc.Jobs[j].Name, err)
		}
		d.tuners[j] = tu
	}
	if err := sim.Run(in.jobs, in.sc.Epochs, d); err != nil {
		return nil, err
	}
	if d.err != nil {
		return nil, d.err
	}
	ser, err := in.series(d.rec)
	if err != nil {
		return nil, err
	}
	return &reactResult{ser, d.changes, d.kept, d.reverted, d.decisions}, nil
}

// variantPatterns applies a variant's transforms to the initial patterns.
func variantPatterns(v *VariantSpec, initial []*ten.Pattern) ([]*ten.Pattern, error) {
	pats := slices.Clone(initial)
	for i, sw := range v.Swaps {
		t, err := sw.swap(pats[sw.Job])
		if err != nil {
			return nil, fmt.Errorf("swaps[%d]: %w", i, err)
		}
		q := transform.Apply(pats[sw.Job], t)
		if err := semantics.Check(q); err != nil {
			return nil, fmt.Errorf("swaps[%d] (%v) breaks the collective: %w", i, t, err)
		}
		pats[sw.Job] = q
	}
	return pats, nil
}

// swap turns a hand-written transform of p into a transform.Swap.
func (sw *SwapSpec) swap(p *ten.Pattern) (transform.Swap, error) {
	rank := func(what string, r int) error {
		if r < 0 || r >= p.Ranks {
			return fmt.Errorf("%s swap: %s = %d, want a rank in [0, %d)", sw.Kind, what, r, p.Ranks)
		}
		return nil
	}
	if sw.Kind == "chunk" || sw.Kind == "position" {
		if sw.Chunk < 0 || sw.Chunk >= p.Chunks() {
			return transform.Swap{}, fmt.Errorf("%s swap: chunk %d out of range [0, %d)", sw.Kind, sw.Chunk, p.Chunks())
		}
	}
	if sw.Kind == "global" || sw.Kind == "chunk" {
		if err := cmpErr(rank("x", sw.X), rank("y", sw.Y)); err != nil {
			return transform.Swap{}, err
		}
	}
	switch sw.Kind {
	case "global":
		return transform.GlobalSwap(sw.X, sw.Y), nil
	case "chunk":
		return transform.ChunkSwap(sw.Chunk, sw.X, sw.Y), nil
	case "position":
		if len(sw.A) != 2 || len(sw.B) != 2 {
			return transform.Swap{}, fmt.Errorf("position swap: a and b must be [step, rank], got %v and %v", sw.A, sw.B)
		}
		if err := cmpErr(rank("a's rank", sw.A[1]), rank("b's rank", sw.B[1])); err != nil {
			return transform.Swap{}, err
		}
		c := int32(sw.Chunk)
		return transform.PositionSwap(transform.Vertex{Chunk: c, Step: int32(sw.A[0]), Rank: int32(sw.A[1])},
			transform.Vertex{Chunk: c, Step: int32(sw.B[0]), Rank: int32(sw.B[1])}), nil
	}
	return transform.Swap{}, fmt.Errorf("unknown kind %q (want global, chunk or position)", sw.Kind)
}

func cmpErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
