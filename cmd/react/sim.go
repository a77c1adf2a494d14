package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/react-torch/react-torch/pkg/scenario"
)

// runSim runs a scenario file: every case of its sweep (concurrently, on
// every core), then the table, results.json and the plots.
func runSim(e *env, args []string) int {
	f, code, done := parseSimFlags(e, args)
	if done {
		return code
	}
	sc, read, err := loadScenario(f.path, f.seed, f.seeds)
	if err != nil {
		return simUsage(e, "%v", err)
	}
	if f.noOracle {
		sc = sc.WithoutOracle()
	}
	if f.outDir == "" {
		f.outDir = filepath.Join("out", sc.Name)
	}
	note := ""
	if f.engine == "ns3" || f.packetScale {
		if sc, note, err = sc.ForPacket(read); err != nil {
			return simUsage(e, "%s: %v", f.path, err)
		}
	}
	start := time.Now()
	res, err := simulateOn(e, sc, note, f, start)
	if err != nil {
		fmt.Fprintf(e.stderr, "react sim: %v\n", err)
		return exitFail
	}
	return writeSim(e, sc, res, f, time.Since(start))
}

// simFlags is react sim's command line, checked.
type simFlags struct {
	path, outDir, format, engine, harness string
	seed                                  *uint64 // nil: the scenario's
	seeds, workers                        int
	quiet, noPlots, packetScale, noOracle bool
}

func simUsage(e *env, format string, a ...any) int {
	fmt.Fprintf(e.stderr, "react sim: "+format+"\n", a...)
	return exitUsage
}

// parseSimFlags reads react sim's flags; done: exit with code.
func parseSimFlags(e *env, args []string) (f simFlags, code int, done bool) {
	fs := newFlagSet("react sim")
	fs.StringVar(&f.path, "scenario", "", "scenario file (see examples/scenarios)")
	seed := fs.Uint64("seed", 0, "first seed (default: the scenario's)")
	fs.IntVar(&f.seeds, "seeds", 0, "seeds a cell (default: the scenario's)")
	fs.StringVar(&f.outDir, "out", "", "output folder for results.json and the plots (default out/NAME)")
	fs.StringVar(&f.format, "format", "text", "stdout: text (a table) or json (results.json)")
	fs.IntVar(&f.workers, "workers", runtime.GOMAXPROCS(0), "cases run at once")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress on stderr")
	fs.BoolVar(&f.noPlots, "no-plots", false, "skip the PNG plots")
	fs.StringVar(&f.engine, "engine", "fluid", "fluid (the max-min model) or ns3 (packet level, the harness of make ns3)")
	fs.StringVar(&f.harness, "ns3", "", "the ns-3 harness (default $REACT_NS3, else react-ns3 beside this binary)")
	fs.BoolVar(&f.packetScale, "packet-scale", false, "fluid engine: scale the scenario by its packet block, as --engine ns3 does, to compare the engines")
	fs.BoolVar(&f.noOracle, "no-oracle", false, "skip the oracle's search (most of a run's time): REACT and the compared tuners over the static baseline only")
	const synopsis = "--scenario FILE [--seed S] [--seeds N] [--out DIR] [--format text|json] [--workers N] [--quiet] [--no-plots] [--no-oracle] [--engine fluid|ns3] [--ns3 PATH] [--packet-scale]"
	if code, done := parseFlags(e, fs, args, synopsis); done {
		return f, code, true
	}
	bad := func(format string, a ...any) (simFlags, int, bool) { return f, simUsage(e, format, a...), true }
	switch {
	case fs.NArg() > 0:
		return bad("unexpected argument %q", fs.Arg(0))
	case f.path == "":
		return bad("missing --scenario")
	case f.format != "text" && f.format != "json":
		return bad("unknown --format %q (want text or json)", f.format)
	case f.engine != "fluid" && f.engine != "ns3":
		return bad("unknown --engine %q (want fluid or ns3)", f.engine)
	case f.workers < 1:
		return bad("--workers %d, want >= 1", f.workers)
	case f.seeds < 0:
		return bad("--seeds %d, want >= 1 (or 0: the scenario's)", f.seeds)
	}
	fs.Visit(func(fl *flag.Flag) {
		if fl.Name == "seed" {
			f.seed = seed
		}
	})
	return f, exitOK, false
}

// simulateOn runs the scenario on the engine the flags name.
func simulateOn(e *env, sc *scenario.Scenario, note string, f simFlags, start time.Time) (*scenario.Result, error) {
	prog := newProgress(e.stderr, f.quiet, start)
	if f.engine == "ns3" {
		bin, err := harnessPath(f.harness)
		if err != nil {
			return nil, err
		}
		return simulatePacket(sc, note, bin, f.outDir, prog)
	}
	res, err := simulate(sc, f.workers, prog)
	if err == nil {
		res.Engine, res.Scaling = "fluid", note
	}
	return res, err
}

// writeSim writes results.json and the plots, and the table (or the
// JSON) on stdout.
func writeSim(e *env, sc *scenario.Scenario, res *scenario.Result, f simFlags, elapsed time.Duration) int {
	js, resultsPath, plots, err := writeResults(res, f.outDir, !f.noPlots)
	if err != nil {
		fmt.Fprintf(e.stderr, "react sim: %v\n", err)
		return exitFail
	}
	out := bufio.NewWriter(e.stdout)
	if f.format == "json" {
		out.Write(js)
	} else {
		writeSimTable(out, res)
		how := fmt.Sprintf("on %d workers", f.workers)
		if f.engine == "ns3" {
			how = "one packet run at a time"
		}
		fmt.Fprintf(out, "\n%d cases in %.1f s, %s; wrote %s", len(sc.Cases()), elapsed.Seconds(), how, resultsPath)
		if len(plots) > 0 {
			fmt.Fprintf(out, " and %d plots", len(plots))
		}
		fmt.Fprintln(out)
	}
	if err := out.Flush(); err != nil {
		fmt.Fprintf(e.stderr, "react sim: writing: %v\n", err)
		return exitFail
	}
	return exitOK
}

// loadScenario reads and decodes a scenario file, with another first
// seed (nil: the file's) and another number of seeds a cell (0: the
// file's); read resolves the files it names beside it.
func loadScenario(path string, seed *uint64, seeds int) (*scenario.Scenario, func(string) ([]byte, error), error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	dir := filepath.Dir(path)
	read := func(name string) ([]byte, error) {
		if !filepath.IsAbs(name) {
			name = filepath.Join(dir, name)
		}
		return os.ReadFile(name)
	}
	sc, err := scenario.Decode(data, read)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %v", path, err)
	}
	if seed != nil {
		sc = sc.WithSeed(*seed)
	}
	if seeds > 0 {
		sc = sc.WithSeeds(seeds)
	}
	return sc, read, nil
}

// writeResults writes results.json (and the plots, when asked) into dir
// and returns the JSON, its path and the plots' paths.
func writeResults(res *scenario.Result, dir string, plot bool) ([]byte, string, []string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", nil, err
	}
	js, err := json.MarshalIndent(res, "", " ")
	if err != nil {
		return nil, "", nil, err
	}
	js = append(js, '\n')
	path := filepath.Join(dir, "results.json")
	if err := os.WriteFile(path, js, 0o644); err != nil {
		return nil, "", nil, err
	}
	var plots []string
	if plot {
		if plots, err = writePlots(res, dir); err != nil {
			return nil, "", nil, fmt.Errorf("plots: %v", err)
		}
	}
	return js, path, plots, nil
}

// simulate runs every case on workers goroutines. Each case is
// independent and deterministic, and its run lands at its own index, so
// the result does not depend on the scheduling.
func simulate(sc *scenario.Scenario, workers int, prog *progressBar) (*scenario.Result, error) {
	cases := sc.Cases()
	runs := make([]*scenario.Run, len(cases))
	errs := make([]error, len(cases))
	prog.begin(len(cases))
	next := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := false
	for range min(workers, len(cases)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				mu.Lock()
				stop := failed
				mu.Unlock()
				if stop {
					continue
				}
				r, err := sc.RunCase(cases[i], scenario.Options{Progress: func(f float64) { prog.set(i, f) }})
				runs[i], errs[i] = r, err
				if err != nil {
					mu.Lock()
					failed = true
					mu.Unlock()
				}
				prog.set(i, 1)
			}
		}()
	}
	for i := range cases {
		next <- i
	}
	close(next)
	wg.Wait()
	prog.end()
	for i, err := range errs {
		if err != nil {
			p := sc.Cells()[cases[i].Cell]
			where := fmt.Sprintf("seed %d", cases[i].Seed)
			if len(p) > 0 {
				where = cellLabel(p) + ", " + where
			}
			return nil, fmt.Errorf("%s: %w", where, err)
		}
	}
	return sc.Summarize(runs)
}

func cellLabel(ps []scenario.Param) string {
	var parts []string
	for _, p := range ps {
		parts = append(parts, fmt.Sprintf("%s=%v", p.Param, p.Value))
	}
	return strings.Join(parts, " ")
}

// progressBar draws the share of cases done on stderr, once a run has
// taken more than a couple of seconds: redrawn in place on a terminal, a
// line every few seconds otherwise.
type progressBar struct {
	w     io.Writer
	quiet bool
	tty   bool
	start time.Time

	mu    sync.Mutex
	done  []float64
	shown bool
	last  time.Time
	stop  chan struct{}
	idle  chan struct{}
}

func newProgress(w io.Writer, quiet bool, start time.Time) *progressBar {
	p := &progressBar{w: w, quiet: quiet, start: start}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

const (
	progressAfter    = 2 * time.Second
	progressTTYEvery = 200 * time.Millisecond
	progressLogEvery = 5 * time.Second
)

func (p *progressBar) begin(n int) {
	p.done = make([]float64, n)
	if p.quiet {
		return
	}
	p.stop, p.idle = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(p.idle)
		tick := time.NewTicker(progressTTYEvery)
		defer tick.Stop()
		for {
			select {
			case <-p.stop:
				return
			case now := <-tick.C:
				p.draw(now, false)
			}
		}
	}()
}

func (p *progressBar) set(i int, f float64) {
	p.mu.Lock()
	p.done[i] = f
	p.mu.Unlock()
}

func (p *progressBar) draw(now time.Time, final bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if now.Sub(p.start) < progressAfter {
		return
	}
	if !p.tty && !final && now.Sub(p.last) < progressLogEvery {
		return
	}
	if !p.tty && final && !p.shown {
		return
	}
	p.last = now
	sum, whole := 0.0, 0
	for _, f := range p.done {
		sum += f
		if f >= 1 {
			whole++
		}
	}
	frac := sum / float64(len(p.done))
	const width = 30
	bar := strings.Repeat("#", int(frac*width)) + strings.Repeat(".", width-int(frac*width))
	el := now.Sub(p.start).Seconds()
	eta := ""
	if frac > 0.02 && frac < 1 {
		eta = fmt.Sprintf(", about %.0f s left", el/frac-el)
	}
	line := fmt.Sprintf("react sim [%s] %3.0f%%  %d/%d cases  %.0f s%s", bar, 100*frac, whole, len(p.done), el, eta)
	if p.tty {
		fmt.Fprintf(p.w, "\r%-90s", line)
		if final {
			fmt.Fprintln(p.w)
		}
	} else {
		fmt.Fprintln(p.w, line)
	}
	p.shown = true
}

func (p *progressBar) end() {
	if p.quiet {
		return
	}
	close(p.stop)
	<-p.idle
	p.draw(time.Now(), true)
}
