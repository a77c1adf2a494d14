package main

import (
	"fmt"
	"image/color"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/react-torch/react-torch/pkg/scenario"
)

// maxEpochPlots bounds the per-cell epoch plots of a sweep.
const maxEpochPlots = 16

// writePlots draws, per job: for a sweep, the mean improvement per cell as
// grouped bars (REACT solid, oracle light, like the paper's Fig 5); for
// every cell (up to maxEpochPlots), the collective time epoch by epoch of
// its first seed; and the CDF of the measured epoch times over all seeds.
func writePlots(r *scenario.Result, dir string) ([]string, error) {
	var files []string
	save := func(p *plot.Plot, name string, w, h vg.Length) error {
		path := filepath.Join(dir, name)
		if err := p.Save(w, h, path); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		files = append(files, path)
		return nil
	}
	for j := range r.Cells[0].Jobs {
		name := fileSafe(r.Cells[0].Jobs[j].Name)
		if len(r.Axes) > 0 {
			p, err := improvementPlot(r, j)
			if err != nil {
				return nil, err
			}
			if err := save(p, "improvement-"+name+".png", 8*vg.Inch, 4.5*vg.Inch); err != nil {
				return nil, err
			}
		}
		for ci := range r.Cells {
			if ci >= maxEpochPlots {
				break
			}
			c := &r.Cells[ci]
			suffix := ""
			if len(c.Params) > 0 {
				suffix = "-" + fileSafe(cellLabel(c.Params))
			}
			p, err := epochPlot(r, c, j)
			if err != nil {
				return nil, err
			}
			if err := save(p, "epochs-"+name+suffix+".png", 8*vg.Inch, 4*vg.Inch); err != nil {
				return nil, err
			}
			p, err = cdfPlot(r, c, j)
			if err != nil {
				return nil, err
			}
			if err := save(p, "cdf-"+name+suffix+".png", 6*vg.Inch, 4*vg.Inch); err != nil {
				return nil, err
			}
		}
	}
	return files, nil
}

func fileSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.':
			return r
		case r == '=':
			return '-'
		}
		return '_'
	}, s)
}

func lighter(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	mix := func(v uint32) uint8 { return uint8((v>>8)/2 + 128) }
	return color.RGBA{mix(r), mix(g), mix(b), 255}
}

func darker(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	mix := func(v uint32) uint8 { return uint8((v >> 8) / 2) }
	return color.RGBA{mix(r), mix(g), mix(b), 255}
}

// improvementPlot puts the first axis on x and one group of bars (REACT,
// each compared tuner setting, the better oracle) per value of the other
// axes.
func improvementPlot(r *scenario.Result, j int) (*plot.Plot, error) {
	var xs, groups []string
	for _, c := range r.Cells {
		x := c.Params[0].Value.String()
		if !slices.Contains(xs, x) {
			xs = append(xs, x)
		}
		g := cellLabel(c.Params[1:])
		if !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
	}
	// kinds are the bars of a group: REACT, the compared settings, the
	// oracle (the better one, when there are two).
	js0 := &r.Cells[0].Jobs[j]
	kinds := []string{"REACT"}
	for _, cs := range js0.Compare {
		kinds = append(kinds, cs.Name)
	}
	hasOracle := js0.BestOracleImprovement != nil
	if hasOracle {
		name := "oracle"
		if js0.Climb != nil {
			name = "better oracle"
		}
		kinds = append(kinds, name)
	}
	vals := make([][]plotter.Values, len(kinds)) // kind, group, x
	for k := range kinds {
		vals[k] = make([]plotter.Values, len(groups))
		for g := range groups {
			vals[k][g] = make(plotter.Values, len(xs))
		}
	}
	for _, c := range r.Cells {
		x := slices.Index(xs, c.Params[0].Value.String())
		g := slices.Index(groups, cellLabel(c.Params[1:]))
		js := &c.Jobs[j]
		vals[0][g][x] = js.Improvement.Mean
		for k, cs := range js.Compare {
			vals[1+k][g][x] = cs.Improvement.Mean
		}
		if hasOracle && js.BestOracleImprovement != nil {
			vals[len(kinds)-1][g][x] = js.BestOracleImprovement.Mean
		}
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: mean algbw improvement, job %s", r.Scenario, r.Cells[0].Jobs[j].Name)
	p.X.Label.Text = r.Axes[0]
	p.Y.Label.Text = "improvement over baseline (%)"
	p.NominalX(xs...)
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	bars := len(groups) * len(kinds)
	w := vg.Points(min(18, 300/float64(bars*len(xs))))
	k := 0
	for g := range groups {
		label := groups[g]
		if label != "" {
			label = " " + label
		}
		col := plotutil.Color(g)
		for ki, kind := range kinds {
			b, err := plotter.NewBarChart(vals[ki][g], w)
			if err != nil {
				return nil, err
			}
			b.LineStyle.Width = vg.Length(0.5)
			// REACT solid, the compared settings darker, the oracle light.
			switch {
			case ki == 0:
				b.Color = col
			case hasOracle && ki == len(kinds)-1:
				b.Color = lighter(col)
			default:
				b.Color = darker(col)
			}
			b.Offset = w * vg.Length(float64(k)-float64(bars-1)/2)
			k++
			p.Add(b)
			p.Legend.Add(kind+label, b)
		}
	}
	// Room above the bars for the legend, and 0 always in view.
	p.Y.Min = min(p.Y.Min, 0)
	top := max(p.Y.Max, 1)
	p.Y.Max = top + 0.08*float64(bars)*(top-p.Y.Min)
	return p, nil
}

func epochPlot(r *scenario.Result, c *scenario.CellResult, j int) (*plot.Plot, error) {
	run := c.Runs[0]
	jr := &run.Jobs[j]
	p := plot.New()
	title := fmt.Sprintf("%s, job %s, seed %d", r.Scenario, jr.Name, run.Seed)
	if len(c.Params) > 0 {
		title += ", " + cellLabel(c.Params)
	}
	p.Title.Text = title
	p.X.Label.Text = "epoch"
	p.Y.Label.Text = "collective time (µs)"
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	type line struct {
		name string
		s    *scenario.Series
	}
	lines := []line{{"baseline", &jr.Baseline}, {"REACT", &jr.React}}
	for k := range jr.Compare {
		lines = append(lines, line{jr.Compare[k].Name, &jr.Compare[k].React})
	}
	if jr.Oracle != nil {
		lines = append(lines, line{fmt.Sprintf("oracle d%d", max(jr.OracleDepth, 1)), jr.Oracle})
	}
	if jr.Climb != nil {
		lines = append(lines, line{"oracle climb", jr.Climb})
	}
	for k := range jr.Variants {
		lines = append(lines, line{jr.Variants[k].Name, &jr.Variants[k].Series})
	}
	for i, l := range lines {
		pts := make(plotter.XYs, len(l.s.Times))
		for e, t := range l.s.Times {
			pts[e] = plotter.XY{X: float64(e), Y: t * 1e6}
		}
		ln, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		ln.Color = plotutil.Color(i)
		ln.Dashes = plotutil.Dashes(i)
		ln.Width = vg.Points(1.2)
		p.Add(ln)
		p.Legend.Add(l.name, ln)
	}
	// Room below the lowest line and above the highest for the legend.
	span := p.Y.Max - p.Y.Min
	if span <= 0 {
		span = 0.05 * p.Y.Max
	}
	p.Y.Min, p.Y.Max = p.Y.Min-0.05*span, p.Y.Max+0.45*span
	warm, err := plotter.NewLine(plotter.XYs{{X: float64(r.MeasureAfter), Y: p.Y.Min}, {X: float64(r.MeasureAfter), Y: p.Y.Max}})
	if err != nil {
		return nil, err
	}
	warm.Color = color.Gray{160}
	warm.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
	p.Add(warm)
	p.Legend.Add("measured from", warm)
	return p, nil
}

// cdfPlot is the distribution of the measured epoch times over every seed
// of the cell (Appendix C's Fig 11).
func cdfPlot(r *scenario.Result, c *scenario.CellResult, j int) (*plot.Plot, error) {
	p := plot.New()
	title := fmt.Sprintf("%s, job %s: CDF of epoch times", r.Scenario, c.Jobs[j].Name)
	if len(c.Params) > 0 {
		title += ", " + cellLabel(c.Params)
	}
	p.Title.Text = title
	p.X.Label.Text = "collective time (µs)"
	p.Y.Label.Text = "share of epochs"
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	pick := []func(*scenario.JobRun) *scenario.Series{
		func(jr *scenario.JobRun) *scenario.Series { return &jr.Baseline },
		func(jr *scenario.JobRun) *scenario.Series { return &jr.React },
	}
	names := []string{"baseline", "REACT"}
	for k, cs := range c.Jobs[j].Compare {
		pick = append(pick, func(jr *scenario.JobRun) *scenario.Series { return &jr.Compare[k].React })
		names = append(names, cs.Name)
	}
	pick = append(pick,
		func(jr *scenario.JobRun) *scenario.Series { return jr.Oracle },
		func(jr *scenario.JobRun) *scenario.Series { return jr.Climb })
	names = append(names, fmt.Sprintf("oracle d%d", max(c.Jobs[j].OracleDepth, 1)), "oracle climb")
	for i, f := range pick {
		var ts []float64
		for _, run := range c.Runs {
			s := f(&run.Jobs[j])
			if s == nil {
				continue
			}
			ts = append(ts, s.Times[r.MeasureAfter:]...)
		}
		if len(ts) == 0 {
			continue
		}
		slices.Sort(ts)
		pts := make(plotter.XYs, 0, 2*len(ts))
		for k, t := range ts {
			pts = append(pts, plotter.XY{X: t * 1e6, Y: float64(k) / float64(len(ts))}, plotter.XY{X: t * 1e6, Y: float64(k+1) / float64(len(ts))})
		}
		ln, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		ln.Color = plotutil.Color(i)
		ln.Dashes = plotutil.Dashes(i)
		ln.Width = vg.Points(1.2)
		p.Add(ln)
		p.Legend.Add(names[i], ln)
	}
	return p, nil
}
