package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/react-torch/react-torch/pkg/scenario"
)

// writeSimTable prints the results as people read them: baseline, REACT
// and oracle side by side, per job; one column block per figure for a
// single cell, one row per cell for a sweep.
func writeSimTable(w io.Writer, r *scenario.Result) {
	fmt.Fprintf(w, "%s", r.Scenario)
	if r.Figure != "" {
		fmt.Fprintf(w, ": %s", r.Figure)
	}
	fmt.Fprintln(w)
	if r.Description != "" {
		fmt.Fprintf(w, "%s\n", r.Description)
	}
	fmt.Fprintf(w, "%d cell(s) x %d seed(s) from %d; %d epochs, measured from epoch %d\n", len(r.Cells), r.Seeds, r.Seed, r.Epochs, r.MeasureAfter)
	if r.Engine == "ns3" {
		total := 0.0
		for _, s := range r.WallS {
			total += s
		}
		fmt.Fprintf(w, "engine: ns3 (packet level), %.0f s of wall time, %.0f s a case\n", total, total/float64(max(len(r.WallS), 1)))
	}
	if r.Scaling != "" {
		fmt.Fprintf(w, "%s (engine %s)\n", r.Scaling, r.Engine)
	}
	if len(r.Axes) == 0 {
		writeCellTable(w, r, &r.Cells[0])
		return
	}
	for j := range r.Cells[0].Jobs {
		writeSweepTable(w, r, j)
	}
}

func us(s float64) string  { return fmt.Sprintf("%.1f", s*1e6) }
func mb(b float64) string  { return fmt.Sprintf("%.1f", b/1e6) }
func gbs(b float64) string { return fmt.Sprintf("%.3f", b/1e9) }
func pct(p float64) string { return fmt.Sprintf("%+.1f", p) }

// jobTitle names a job; tuned is "" when REACT runs on it in every cell.
func jobTitle(r *scenario.Result, j int) string {
	jr := r.Cells[0].Runs[0].Jobs[j]
	ranks := fmt.Sprintf("%d ranks", jr.Ranks)
	if r.GPUsPerHost > 1 {
		nic := map[string]string{scenario.NICHost: "one NIC a host", scenario.NICGPU: "one NIC a GPU"}[r.NIC]
		ranks = fmt.Sprintf("%d hosts x %d GPUs (hierarchical, %s)", jr.Ranks, r.GPUsPerHost, nic)
	}
	t := fmt.Sprintf("job %s: %s %s, %s, %s MB", jr.Name, jr.Op, jr.Algo, ranks, strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", jr.Bytes/1e6), "0"), "."))
	on, off := 0, 0
	for _, c := range r.Cells {
		if c.Jobs[j].Tuned {
			on++
		} else {
			off++
		}
	}
	switch {
	case on == 0:
		t += " (static: REACT off for this job)"
	case off > 0:
		t += " (REACT on it only where the tuned column says yes)"
	}
	return t
}

func tunedVaries(r *scenario.Result, j int) bool {
	for _, c := range r.Cells {
		if c.Jobs[j].Tuned != r.Cells[0].Jobs[j].Tuned {
			return true
		}
	}
	return false
}

// oracleName is how tables name the depth search: "oracle d2" for a
// search two transforms deep.
func oracleName(js *scenario.JobSummary) string {
	return fmt.Sprintf("oracle d%d", max(js.OracleDepth, 1))
}

// oracleLegend says which oracles a job's figures show, and what share is
// measured against.
func oracleLegend(js *scenario.JobSummary) string {
	if js.Oracle == nil {
		return ""
	}
	d := max(js.OracleDepth, 1)
	s := fmt.Sprintf("%s: the best pattern within %d transform(s) of the initial one", oracleName(js), d)
	if js.Climb == nil {
		return s + "; share = gain / its gain"
	}
	return s + "; oracle climb: the top of a hill climb over transforms; share = gain / the better oracle's gain, run by run"
}

// changes is the mean and, where the runs differ, the most pattern changes
// of a run.
func changes(s scenario.Stat) string {
	if s.Max == s.Min {
		return fmt.Sprintf("%.1f", s.Mean)
	}
	return fmt.Sprintf("%.1f (%.0f)", s.Mean, s.Max)
}

func shareStr(sh *float64) string {
	if sh == nil {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100**sh)
}

func writeCellTable(w io.Writer, r *scenario.Result, c *scenario.CellResult) {
	for j := range c.Jobs {
		js := &c.Jobs[j]
		fmt.Fprintf(w, "\n%s\n", jobTitle(r, j))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		cols := []string{"baseline", "REACT"}
		sums := []scenario.SeriesSummary{js.Baseline, js.React}
		for _, cs := range js.Compare {
			cols, sums = append(cols, cs.Name), append(sums, cs.React)
		}
		if js.Oracle != nil {
			cols, sums = append(cols, oracleName(js)), append(sums, *js.Oracle)
		}
		if js.Climb != nil {
			cols, sums = append(cols, "oracle climb"), append(sums, *js.Climb)
		}
		for _, v := range js.Variants {
			cols, sums = append(cols, v.Name), append(sums, v.SeriesSummary)
		}
		row := func(name string, f func(scenario.SeriesSummary) string) {
			fmt.Fprintf(tw, "%s\t", name)
			for _, s := range sums {
				fmt.Fprintf(tw, "%s\t", f(s))
			}
			fmt.Fprintln(tw)
		}
		fmt.Fprintf(tw, "\t%s\t\n", strings.Join(cols, "\t"))
		row("mean time (µs)", func(s scenario.SeriesSummary) string { return us(s.Mean) })
		row("p95 time (µs)", func(s scenario.SeriesSummary) string { return us(s.P95) })
		if js.Baseline.ReduceMean > 0 {
			row("reduce phase (µs)", func(s scenario.SeriesSummary) string { return us(s.ReduceMean) })
		}
		row("algbw (GB/s)", func(s scenario.SeriesSummary) string { return gbs(s.AlgBW) })
		row("network MB/epoch", func(s scenario.SeriesSummary) string { return mb(s.NetBytes) })
		base := js.Baseline.AlgBW
		row("vs baseline (%)", func(s scenario.SeriesSummary) string { return pct(100 * (s.AlgBW/base - 1)) })
		tw.Flush()
		of := "the oracle's gain"
		if js.Climb != nil {
			of = "the better oracle's gain"
		}
		tuner := func(name string, g, g95 scenario.Stat, ch scenario.Stat, sh *float64) {
			fmt.Fprintf(w, "%s: %+.1f%% algbw (p95 %+.1f%%), %s pattern changes", name, g.Mean, g95.Mean, changes(ch))
			if sh != nil {
				fmt.Fprintf(w, ", %.0f%% of %s", 100**sh, of)
			}
			fmt.Fprintln(w)
		}
		tuner("REACT", js.Improvement, js.ImprovementP95, js.Changes, js.Share)
		for _, cs := range js.Compare {
			tuner(cs.Name, cs.Improvement, cs.ImprovementP95, cs.Changes, cs.Share)
		}
		if js.OracleImprovement == nil {
			continue
		}
		fmt.Fprintf(w, "%s: %+.1f%% (p95 %+.1f%%)", oracleName(js), js.OracleImprovement.Mean, js.OracleImprovementP95.Mean)
		if js.ClimbImprovement != nil {
			fmt.Fprintf(w, "; oracle climb: %+.1f%% (p95 %+.1f%%), better in %d of %d runs", js.ClimbImprovement.Mean, js.ClimbImprovementP95.Mean, js.ClimbBetter, len(c.Runs))
		}
		fmt.Fprintln(w)
		jr := c.Runs[0].Jobs[j]
		if len(c.Runs) == 1 && jr.Tuned {
			swaps := func(sw []string) string {
				if len(sw) == 0 {
					return "none (the initial pattern is best)"
				}
				return strings.Join(sw, ", then ")
			}
			fmt.Fprintf(w, "%s: %s; %d patterns simulated, depth %d", oracleName(js), swaps(jr.OracleSwaps), jr.OracleEvaluated, jr.OracleDepth)
			if !jr.OracleExhaustive {
				fmt.Fprint(w, " (beam or budget limited)")
			}
			fmt.Fprintln(w)
			if jr.Climb != nil {
				fmt.Fprintf(w, "oracle climb: %s; %d more patterns simulated", swaps(jr.ClimbSwaps), jr.ClimbEvaluated)
				if !jr.ClimbDone {
					fmt.Fprint(w, " (budget limited)")
				}
				fmt.Fprintln(w)
			}
		}
	}
}

func writeSweepTable(w io.Writer, r *scenario.Result, j int) {
	fmt.Fprintf(w, "\n%s\n", jobTitle(r, j))
	js0 := &r.Cells[0].Jobs[j]
	if l := oracleLegend(js0); l != "" {
		fmt.Fprintf(w, "%s\n", l)
	}
	cols := sweepColumns(r, j)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := make([]string, len(cols))
	for i, c := range cols {
		head[i] = c.head
	}
	fmt.Fprintf(tw, "%s\t\n", strings.Join(head, "\t"))
	for ci := range r.Cells {
		c := &r.Cells[ci]
		row := make([]string, len(cols))
		for i, col := range cols {
			row[i] = col.cell(c, &c.Jobs[j])
		}
		fmt.Fprintf(tw, "%s\t\n", strings.Join(row, "\t"))
	}
	tw.Flush()
}

// sweepColumn is a column of a sweep's table: its heading and a cell's
// entry for the job.
type sweepColumn struct {
	head string
	cell func(c *scenario.CellResult, js *scenario.JobSummary) string
}

// sweepColumns are job j's columns: the axes, whether the job is tuned
// (where that varies), the gains of REACT, every comparison and the
// oracles, the shares, the p95 gains, the changes, and each variant's
// time and bytes against the baseline.
func sweepColumns(r *scenario.Result, j int) []sweepColumn {
	js0 := &r.Cells[0].Jobs[j]
	var cols []sweepColumn
	add := func(head string, cell func(c *scenario.CellResult, js *scenario.JobSummary) string) {
		cols = append(cols, sweepColumn{head, cell})
	}
	// per comparison: a column of what the comparison's stats give
	perCompare := func(suffix string, f func(cs *scenario.CompareSummary) string) {
		for k, cs := range js0.Compare {
			add(cs.Name+suffix, func(_ *scenario.CellResult, js *scenario.JobSummary) string { return f(&js.Compare[k]) })
		}
	}
	orDash := func(s *scenario.Stat) string {
		if s == nil {
			return "-"
		}
		return pct(s.Mean)
	}
	for i, axis := range r.Axes {
		add(axis, func(c *scenario.CellResult, _ *scenario.JobSummary) string { return c.Params[i].Value.String() })
	}
	if tunedVaries(r, j) {
		add("tuned", func(_ *scenario.CellResult, js *scenario.JobSummary) string {
			return map[bool]string{true: "yes", false: "no"}[js.Tuned]
		})
	}
	add("base GB/s", func(_ *scenario.CellResult, js *scenario.JobSummary) string { return gbs(js.Baseline.AlgBW) })
	add("REACT %", func(_ *scenario.CellResult, js *scenario.JobSummary) string { return pct(js.Improvement.Mean) })
	add("min..max", func(_ *scenario.CellResult, js *scenario.JobSummary) string {
		return pct(js.Improvement.Min) + ".." + pct(js.Improvement.Max)
	})
	perCompare(" %", func(cs *scenario.CompareSummary) string { return pct(cs.Improvement.Mean) })
	oracle := js0.Oracle != nil
	if oracle {
		add(oracleName(js0)+" %", func(_ *scenario.CellResult, js *scenario.JobSummary) string { return orDash(js.OracleImprovement) })
	}
	if js0.Climb != nil {
		add("oracle climb %", func(_ *scenario.CellResult, js *scenario.JobSummary) string { return orDash(js.ClimbImprovement) })
	}
	if oracle {
		add("share", func(_ *scenario.CellResult, js *scenario.JobSummary) string { return shareStr(js.Share) })
		perCompare(" share", func(cs *scenario.CompareSummary) string { return shareStr(cs.Share) })
	}
	add("REACT p95 %", func(_ *scenario.CellResult, js *scenario.JobSummary) string { return pct(js.ImprovementP95.Mean) })
	perCompare(" p95 %", func(cs *scenario.CompareSummary) string { return pct(cs.ImprovementP95.Mean) })
	if oracle {
		o95 := "better oracle p95 %"
		if js0.Climb == nil {
			o95 = oracleName(js0) + " p95 %"
		}
		add(o95, func(_ *scenario.CellResult, js *scenario.JobSummary) string {
			return orDash(js.BestOracleImprovementP95)
		})
	}
	add("changes (max)", func(_ *scenario.CellResult, js *scenario.JobSummary) string { return changes(js.Changes) })
	perCompare(" changes", func(cs *scenario.CompareSummary) string { return changes(cs.Changes) })
	// A variant's mean time against the baseline's, and the bytes both
	// send over the network an epoch.
	if len(js0.Variants) > 0 {
		add("base net MB", func(_ *scenario.CellResult, js *scenario.JobSummary) string { return mb(js.Baseline.NetBytes) })
	}
	for k, v := range js0.Variants {
		add("base/"+v.Name+" time", func(_ *scenario.CellResult, js *scenario.JobSummary) string {
			return fmt.Sprintf("%.3f", js.Baseline.Mean/js.Variants[k].Mean)
		})
		add(v.Name+" net MB", func(_ *scenario.CellResult, js *scenario.JobSummary) string { return mb(js.Variants[k].NetBytes) })
	}
	return cols
}
