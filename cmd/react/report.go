package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/react-torch/react-torch/pkg/tuner"
	"github.com/react-torch/react-torch/pkg/wire"
)

// runReport replays an FCT log through the tuner, as replay does, and
// prints what the tuner then knows: the links' loads, slow pairs, the
// last batch's collective times and every change it made.
func runReport(e *env, args []string) int {
	fs := newFlagSet("react report")
	in := replayFlags(fs)
	asJSON := fs.Bool("json", false, "print the report as one JSON object")
	plotPath := fs.String("plot", "", "also draw the epoch times (switches marked) and the links' loads to this PNG")
	basePath := fs.String("baseline", "", "with --plot: a JSON array of the static pattern's epoch times (seconds), drawn beside")
	const synopsis = "[--pattern P.json] --fcts LOG [--bytes N] [--json] [--plot OUT.png [--baseline T.json]] [--Setting value ...]"
	if code, done := parseFlags(e, fs, args, synopsis); done {
		return code
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(e.stderr, "react report: "+format+"\n", a...)
		return exitUsage
	}
	run, err := in.read(e, fs)
	if err != nil {
		return fail("%v", err)
	}
	var baseline []float64
	if *basePath != "" {
		if *plotPath == "" {
			return fail("--baseline draws beside --plot; give both")
		}
		data, err := os.ReadFile(*basePath)
		if err != nil {
			return fail("%v", err)
		}
		if err := json.Unmarshal(data, &baseline); err != nil {
			return fail("%s: %v (want a JSON array of seconds)", *basePath, err)
		}
	}
	seen, err := run.drive(func(string, map[string]any) {}, func(*tuner.Decision) error { return nil })
	if err != nil {
		return fail("%v", err)
	}
	rep := run.tu.Report()
	out := bufio.NewWriter(e.stdout)
	if *asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		err = enc.Encode(rep)
	} else {
		err = writeReportText(out, &rep)
	}
	if err == nil {
		err = out.Flush()
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "react report: writing: %v\n", err)
		return exitFail
	}
	if *plotPath != "" {
		if err := writeReportPlot(*plotPath, &rep, seen, baseline); err != nil {
			fmt.Fprintf(e.stderr, "react report: %v\n", err)
			return exitFail
		}
		fmt.Fprintf(e.stderr, "react report: wrote %s\n", *plotPath)
	}
	return exitOK
}

// writeReportText writes the report as text, after a line that names the
// collective.
func writeReportText(w io.Writer, r *tuner.Report) error {
	fmt.Fprintf(w, "%s %s, %d ranks, %.0f bytes, tuner %s: epoch %d, pattern version %d\n", r.Op, r.Algo, r.Ranks, r.Bytes, r.Model, r.Epoch, r.Version)
	r.WriteText(w, nil)
	return nil
}

// writeReportPlot draws two panels: the collective time epoch by epoch
// (and the static pattern's, when given) with every version's first epoch
// marked, and each rank's uplink and downlink competing flows, the most
// loaded link named.
func writeReportPlot(path string, r *tuner.Report, epochs []wire.FCTEpoch, baseline []float64) error {
	times := plot.New()
	times.Title.Text = fmt.Sprintf("%s %s, %d ranks: collective time", r.Op, r.Algo, r.Ranks)
	if len(baseline) > 0 {
		// aligned at the log's first epoch: both runs measure from there
		x0 := 0
		if len(epochs) > 0 {
			x0 = epochs[0].Epoch
		}
		bl := make(plotter.XYs, len(baseline))
		for i, t := range baseline {
			bl[i] = plotter.XY{X: float64(x0 + i), Y: t * 1e3}
		}
		ln, err := plotter.NewLine(bl)
		if err != nil {
			return err
		}
		ln.Color = color.Gray{Y: 140}
		times.Add(ln)
		times.Legend.Add("static pattern", ln)
	}
	times.X.Label.Text = "epoch"
	times.Y.Label.Text = "collective time (ms)"
	times.Add(plotter.NewGrid())
	pts := make(plotter.XYs, 0, len(epochs))
	var switches []float64
	for i, ep := range epochs {
		if ep.Elapsed <= 0 {
			continue
		}
		pts = append(pts, plotter.XY{X: float64(ep.Epoch), Y: ep.Elapsed * 1e3})
		if i > 0 && ep.Version != epochs[i-1].Version {
			switches = append(switches, float64(ep.Epoch))
		}
	}
	if len(pts) == 0 {
		return fmt.Errorf("%s: the log has no epoch times to plot", path)
	}
	ln, err := plotter.NewLine(pts)
	if err != nil {
		return err
	}
	ln.Color = plotutil.Color(0)
	times.Add(ln)
	times.Legend.Add("REACT", ln)
	times.Legend.Top = true
	for k, x := range switches {
		mark, err := plotter.NewLine(plotter.XYs{{X: x, Y: times.Y.Min}, {X: x, Y: times.Y.Max}})
		if err != nil {
			return err
		}
		mark.Color = color.RGBA{R: 200, A: 255}
		mark.Dashes = []vg.Length{vg.Points(3), vg.Points(2)}
		times.Add(mark)
		if k == 0 {
			times.Legend.Add("pattern switch", mark)
		}
	}

	load := plot.New()
	load.Title.Text = "link model: competing flows per rank (a slow link's as its lone flow sees it)"
	if len(r.Links) > 0 && r.Links[0].Significant {
		load.Title.Text += fmt.Sprintf(" (most: %s, ~%.1f)", r.Links[0].LinkRef, r.Links[0].Competing+r.Links[0].Slow)
	}
	load.X.Label.Text = "rank"
	load.Y.Label.Text = "competing flows"
	up, down := make(plotter.Values, r.Ranks), make(plotter.Values, r.Ranks)
	for _, l := range r.Links {
		if l.Dir == "down" {
			down[l.Rank] = l.Competing + l.Slow
		} else {
			up[l.Rank] = l.Competing + l.Slow
		}
	}
	w := vg.Points(6)
	bu, err := plotter.NewBarChart(up, w)
	if err != nil {
		return err
	}
	bu.Color, bu.Offset = plotutil.Color(1), -w/2
	bd, err := plotter.NewBarChart(down, w)
	if err != nil {
		return err
	}
	bd.Color, bd.Offset = plotutil.Color(2), w/2
	load.Add(bu, bd)
	load.Legend.Add("uplink", bu)
	load.Legend.Add("downlink", bd)
	load.Legend.Top = true

	const width, height = 8 * vg.Inch, 7 * vg.Inch
	img := vgimg.New(width, height)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadY: vg.Points(8)}
	canvases := plot.Align([][]*plot.Plot{{times}, {load}}, tiles, dc)
	times.Draw(canvases[0][0])
	load.Draw(canvases[1][0])
	return savePNG(path, img)
}

func savePNG(path string, img *vgimg.Canvas) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}
