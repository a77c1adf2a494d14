package scenario

import (
	"fmt"
	"math"
)

// ResultFormat is the value of results.json's "format" field.
const ResultFormat = "react.sim-results/v1"

// Result is every figure of a scenario: per cell, a summary per job over
// the cell's seeds, and every run.
type Result struct {
	Format       string `json:"format"`
	Scenario     string `json:"scenario"`
	Figure       string `json:"figure,omitempty"`
	Description  string `json:"description,omitempty"`
	Seed         uint64 `json:"seed"`
	Seeds        int    `json:"seeds"`
	Epochs       int    `json:"epochs"`
	MeasureAfter int    `json:"measure_after"`
	// Engine is "fluid" (netsim) or "ns3" (packet level); Scaling says how
	// the scenario was scaled down for the packet engine, when it was.
	Engine  string `json:"engine,omitempty"`
	Scaling string `json:"scaling,omitempty"`
	// WallS is each case's wall time at packet level, seconds, in Cases'
	// order.
	WallS []float64 `json:"wall_s,omitempty"`
	// GPUsPerHost and NIC are the topology's (jobs' ranks are hosts when
	// GPUsPerHost > 1).
	GPUsPerHost int      `json:"gpus_per_host,omitempty"`
	NIC         string   `json:"nic,omitempty"`
	Axes        []string `json:"axes,omitempty"`
	// Noise is the scenario's measurement noise (swept values are in each
	// cell's params).
	Noise *NoiseSpec   `json:"noise,omitempty"`
	Cells []CellResult `json:"cells"`
}

// CellResult is one cell of the sweep.
type CellResult struct {
	Params []Param      `json:"params,omitempty"`
	Jobs   []JobSummary `json:"jobs"`
	Runs   []*Run       `json:"runs"`
}

// Stat summarises one figure over a cell's seeds.
type Stat struct {
	Mean float64 `json:"mean"`
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
	Std  float64 `json:"std"`
}

// SeriesSummary is the seed mean of a Series' statistics.
type SeriesSummary struct {
	Mean       float64 `json:"mean"`
	P95        float64 `json:"p95"`
	AlgBW      float64 `json:"algbw"`
	AlgBWP95   float64 `json:"algbw_p95"`
	ReduceMean float64 `json:"reduce_mean,omitempty"`
	NetBytes   float64 `json:"net_bytes"`
}

// NamedSummary is a variant's SeriesSummary.
type NamedSummary struct {
	Name string `json:"name"`
	SeriesSummary
}

// JobSummary is one job over a cell's seeds.
type JobSummary struct {
	Name     string         `json:"name"`
	Tuned    bool           `json:"tuned"`
	Baseline SeriesSummary  `json:"baseline"`
	React    SeriesSummary  `json:"react"`
	Oracle   *SeriesSummary `json:"oracle,omitempty"`
	Variants []NamedSummary `json:"variants,omitempty"`
	// Improvements in percent of algorithm bandwidth (mean, p95 time).
	Improvement          Stat  `json:"improvement"`
	ImprovementP95       Stat  `json:"improvement_p95"`
	OracleImprovement    *Stat `json:"oracle_improvement,omitempty"`
	OracleImprovementP95 *Stat `json:"oracle_improvement_p95,omitempty"`
	// OracleDepth is the deepest the depth search went in the cell.
	OracleDepth int `json:"oracle_depth,omitempty"`
	// The climbing oracle's figures, when it ran.
	Climb               *SeriesSummary `json:"climb,omitempty"`
	ClimbImprovement    *Stat          `json:"climb_improvement,omitempty"`
	ClimbImprovementP95 *Stat          `json:"climb_improvement_p95,omitempty"`
	// BestOracleImprovement is the better oracle's gain, run by run;
	// ClimbBetter counts the runs where that was the climb.
	BestOracleImprovement    *Stat `json:"best_oracle_improvement,omitempty"`
	BestOracleImprovementP95 *Stat `json:"best_oracle_improvement_p95,omitempty"`
	ClimbBetter              int   `json:"climb_better,omitempty"`
	// Share is the mean REACT improvement over the mean improvement of the
	// better oracle; nil when that gains under 0.1% on average.
	Share   *float64 `json:"share,omitempty"`
	Changes Stat     `json:"changes"`
	// Compare summarises each compared tuner setting's runs.
	Compare []CompareSummary `json:"compare,omitempty"`
}

// CompareSummary is a compared tuner setting's JobSummary figures.
type CompareSummary struct {
	Name           string        `json:"name"`
	React          SeriesSummary `json:"react"`
	Improvement    Stat          `json:"improvement"`
	ImprovementP95 Stat          `json:"improvement_p95"`
	Share          *float64      `json:"share,omitempty"`
	Changes        Stat          `json:"changes"`
}

// Run runs every case in order, one after the other, and summarises them.
func (s *Scenario) Run(opt Options) (*Result, error) {
	cases := s.Cases()
	runs := make([]*Run, len(cases))
	for i, c := range cases {
		o := opt
		if opt.Progress != nil {
			o.Progress = func(f float64) { opt.Progress((float64(i) + f) / float64(len(cases))) }
		}
		r, err := s.RunCase(c, o)
		if err != nil {
			return nil, fmt.Errorf("cell %d seed %d: %w", c.Cell, c.Seed, err)
		}
		runs[i] = r
	}
	return s.Summarize(runs)
}

// Summarize gathers the runs of every case, in the order of Cases.
func (s *Scenario) Summarize(runs []*Run) (*Result, error) {
	cases := s.Cases()
	if len(runs) != len(cases) {
		return nil, fmt.Errorf("scenario %q: %d runs for %d cases", s.Name, len(runs), len(cases))
	}
	res := &Result{Format: ResultFormat, Scenario: s.Name, Figure: s.Figure, Description: s.Description,
		Seed: s.Seed, Seeds: len(s.Seeds()), Epochs: s.Epochs, MeasureAfter: s.MeasureAfter}
	if l := s.Topology.gpus(); l > 1 {
		res.GPUsPerHost, res.NIC = l, s.Topology.nic()
	}
	if s.Noise.on() {
		n := s.Noise
		res.Noise = &n
	}
	if s.Sweep != nil {
		for _, ax := range s.Sweep.Axes {
			res.Axes = append(res.Axes, ax.Param)
		}
	}
	seeds := len(s.Seeds())
	for ci, c := range s.cells {
		cr := CellResult{Params: c.params, Runs: runs[ci*seeds : (ci+1)*seeds]}
		for k, r := range cr.Runs {
			if r == nil || r.Cell != ci || r.Seed != cases[ci*seeds+k].Seed {
				return nil, fmt.Errorf("scenario %q: run %d is not case (cell %d, seed %d)", s.Name, ci*seeds+k, ci, cases[ci*seeds+k].Seed)
			}
		}
		for j := range c.sc.Jobs {
			cr.Jobs = append(cr.Jobs, summarizeJob(cr.Runs, j))
		}
		res.Cells = append(res.Cells, cr)
	}
	return res, nil
}

func summarizeJob(runs []*Run, j int) JobSummary {
	first := &runs[0].Jobs[j]
	js := JobSummary{Name: first.Name, Tuned: first.Tuned}
	pick := func(f func(*JobRun) float64) []float64 {
		xs := make([]float64, len(runs))
		for i, r := range runs {
			xs[i] = f(&r.Jobs[j])
		}
		return xs
	}
	sum := func(f func(*JobRun) *Series) SeriesSummary {
		var out SeriesSummary
		n := float64(len(runs))
		for _, r := range runs {
			s := f(&r.Jobs[j])
			out.Mean += s.Mean / n
			out.P95 += s.P95 / n
			out.AlgBW += s.AlgBW / n
			out.AlgBWP95 += s.AlgBWP95 / n
			out.ReduceMean += s.ReduceMean / n
			out.NetBytes += s.NetBytes / n
		}
		return out
	}
	js.Baseline = sum(func(r *JobRun) *Series { return &r.Baseline })
	js.React = sum(func(r *JobRun) *Series { return &r.React })
	js.Improvement = newStat(pick(func(r *JobRun) float64 { return r.Improvement }))
	js.ImprovementP95 = newStat(pick(func(r *JobRun) float64 { return r.ImprovementP95 }))
	js.Changes = newStat(pick(func(r *JobRun) float64 { return float64(r.Changes) }))
	if first.Oracle != nil {
		o := sum(func(r *JobRun) *Series { return r.Oracle })
		js.Oracle = &o
		oi := newStat(pick(func(r *JobRun) float64 { return *r.OracleImprovement }))
		oi95 := newStat(pick(func(r *JobRun) float64 { return *r.OracleImprovementP95 }))
		js.OracleImprovement, js.OracleImprovementP95 = &oi, &oi95
		for _, r := range runs {
			js.OracleDepth = max(js.OracleDepth, r.Jobs[j].OracleDepth)
		}
	}
	if first.Climb != nil {
		c := sum(func(r *JobRun) *Series { return r.Climb })
		js.Climb = &c
		ci := newStat(pick(func(r *JobRun) float64 { return *r.ClimbImprovement }))
		ci95 := newStat(pick(func(r *JobRun) float64 { return *r.ClimbImprovementP95 }))
		js.ClimbImprovement, js.ClimbImprovementP95 = &ci, &ci95
		for _, r := range runs {
			if r.Jobs[j].BestOracle == OracleClimb {
				js.ClimbBetter++
			}
		}
	}
	if first.BestOracleImprovement != nil {
		bi := newStat(pick(func(r *JobRun) float64 { return *r.BestOracleImprovement }))
		bi95 := newStat(pick(func(r *JobRun) float64 { return *r.BestOracleImprovementP95 }))
		js.BestOracleImprovement, js.BestOracleImprovementP95 = &bi, &bi95
	}
	// shareOf is a mean gain over the better oracle's mean gain.
	shareOf := func(g float64) *float64 {
		if js.BestOracleImprovement == nil || js.BestOracleImprovement.Mean <= 0.1 {
			return nil
		}
		sh := g / js.BestOracleImprovement.Mean
		return &sh
	}
	js.Share = shareOf(js.Improvement.Mean)
	for k := range first.Compare {
		cs := CompareSummary{Name: first.Compare[k].Name,
			React:          sum(func(r *JobRun) *Series { return &r.Compare[k].React }),
			Improvement:    newStat(pick(func(r *JobRun) float64 { return r.Compare[k].Improvement })),
			ImprovementP95: newStat(pick(func(r *JobRun) float64 { return r.Compare[k].ImprovementP95 })),
			Changes:        newStat(pick(func(r *JobRun) float64 { return float64(r.Compare[k].Changes) })),
		}
		cs.Share = shareOf(cs.Improvement.Mean)
		js.Compare = append(js.Compare, cs)
	}
	for k := range first.Variants {
		js.Variants = append(js.Variants, NamedSummary{first.Variants[k].Name, sum(func(r *JobRun) *Series { return &r.Variants[k].Series })})
	}
	return js
}

func newStat(xs []float64) Stat {
	s := Stat{Min: math.Inf(1), Max: math.Inf(-1)}
	for _, x := range xs {
		s.Mean += x / float64(len(xs))
		s.Min, s.Max = min(s.Min, x), max(s.Max, x)
	}
	for _, x := range xs {
		s.Std += (x - s.Mean) * (x - s.Mean)
	}
	if len(xs) > 1 {
		s.Std = math.Sqrt(s.Std / float64(len(xs)-1))
	} else {
		s.Std = 0
	}
	return s
}
