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
	if len(r.Axes) == 0 {
		writeCellTable(w, r, &r.Cells[0])
		return
	}
	for j := range r.Cells[0].Jobs {
		writeSweepTable(w, r, j)
	}
}

func us(s float64) string  { return fmt.Sprintf("%.1f", s*1e6) }
func gbs(b float64) string { return fmt.Sprintf("%.3f", b/1e9) }
func pct(p float64) string { return fmt.Sprintf("%+.1f", p) }

// jobTitle names a job; tuned is "" when REACT runs on it in every cell.
func jobTitle(r *scenario.Result, j int) string {
	jr := r.Cells[0].Runs[0].Jobs[j]
	t := fmt.Sprintf("job %s: %s %s, %d ranks, %s MB", jr.Name, jr.Op, jr.Algo, jr.Ranks, strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", jr.Bytes/1e6), "0"), "."))
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

func writeCellTable(w io.Writer, r *scenario.Result, c *scenario.CellResult) {
	for j := range c.Jobs {
		js := &c.Jobs[j]
		fmt.Fprintf(w, "\n%s\n", jobTitle(r, j))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		cols := []string{"baseline", "REACT"}
		sums := []scenario.SeriesSummary{js.Baseline, js.React}
		if js.Oracle != nil {
			cols, sums = append(cols, "oracle"), append(sums, *js.Oracle)
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
		base := js.Baseline.AlgBW
		row("vs baseline (%)", func(s scenario.SeriesSummary) string { return pct(100 * (s.AlgBW/base - 1)) })
		tw.Flush()
		fmt.Fprintf(w, "REACT: %+.1f%% algbw (p95 %+.1f%%), %.1f pattern changes", js.Improvement.Mean, js.ImprovementP95.Mean, js.Changes.Mean)
		if js.OracleImprovement != nil {
			fmt.Fprintf(w, "; oracle %+.1f%% (p95 %+.1f%%)", js.OracleImprovement.Mean, js.OracleImprovementP95.Mean)
			if js.Share != nil {
				fmt.Fprintf(w, ", REACT has %.0f%% of the oracle's gain", 100**js.Share)
			}
			jr := c.Runs[0].Jobs[j]
			if len(c.Runs) == 1 && jr.Tuned {
				sw := "none (the initial pattern is best)"
				if len(jr.OracleSwaps) > 0 {
					sw = strings.Join(jr.OracleSwaps, ", then ")
				}
				fmt.Fprintf(w, "\noracle: %s; %d patterns simulated, depth %d", sw, jr.OracleEvaluated, jr.OracleDepth)
				if !jr.OracleExhaustive {
					fmt.Fprint(w, " (beam or budget limited)")
				}
			}
		}
		fmt.Fprintln(w)
	}
}

func writeSweepTable(w io.Writer, r *scenario.Result, j int) {
	fmt.Fprintf(w, "\n%s\n", jobTitle(r, j))
	varies := tunedVaries(r, j)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, a := range r.Axes {
		fmt.Fprintf(tw, "%s\t", a)
	}
	if varies {
		fmt.Fprintf(tw, "tuned\t")
	}
	fmt.Fprintf(tw, "base GB/s\tREACT GB/s\toracle GB/s\tREACT %%\tmin..max\toracle %%\tshare\tREACT p95 %%\toracle p95 %%\tchanges\t\n")
	for _, c := range r.Cells {
		js := &c.Jobs[j]
		for _, p := range c.Params {
			fmt.Fprintf(tw, "%v\t", p.Value)
		}
		if varies {
			fmt.Fprintf(tw, "%s\t", map[bool]string{true: "yes", false: "no"}[js.Tuned])
		}
		oBW, oI, oI95 := "-", "-", "-"
		if js.Oracle != nil {
			oBW, oI, oI95 = gbs(js.Oracle.AlgBW), pct(js.OracleImprovement.Mean), pct(js.OracleImprovementP95.Mean)
		}
		share := "-"
		if js.Share != nil {
			share = fmt.Sprintf("%.0f%%", 100**js.Share)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s..%s\t%s\t%s\t%s\t%s\t%.1f\t\n", gbs(js.Baseline.AlgBW), gbs(js.React.AlgBW), oBW,
			pct(js.Improvement.Mean), pct(js.Improvement.Min), pct(js.Improvement.Max), oI, share, pct(js.ImprovementP95.Mean), oI95, js.Changes.Mean)
	}
	tw.Flush()
}
