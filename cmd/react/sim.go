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
	fs := newFlagSet("react sim")
	path := fs.String("scenario", "", "scenario file (see examples/scenarios)")
	seed := fs.Uint64("seed", 0, "first seed (default: the scenario's)")
	seeds := fs.Int("seeds", 0, "seeds a cell (default: the scenario's)")
	outDir := fs.String("out", "", "output folder for results.json and the plots (default out/NAME)")
	format := fs.String("format", "text", "stdout: text (a table) or json (results.json)")
	workers := fs.Int("workers", runtime.GOMAXPROCS(0), "cases run at once")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	noPlots := fs.Bool("no-plots", false, "skip the PNG plots")
	engine := fs.String("engine", "fluid", "fluid (the max-min model) or ns3 (packet level, the harness of make ns3)")
	harness := fs.String("ns3", "", "the ns-3 harness (default $REACT_NS3, else react-ns3 beside this binary)")
	packetScale := fs.Bool("packet-scale", false, "fluid engine: scale the scenario by its packet block, as --engine ns3 does, to compare the engines")
	noOracle := fs.Bool("no-oracle", false, "skip the oracle's search (most of a run's time): REACT and the compared tuners over the static baseline only")
	const synopsis = "--scenario FILE [--seed S] [--seeds N] [--out DIR] [--format text|json] [--workers N] [--quiet] [--no-plots] [--no-oracle] [--engine fluid|ns3] [--ns3 PATH] [--packet-scale]"
	if code, done := parseFlags(e, fs, args, synopsis); done {
		return code
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(e.stderr, "react sim: "+format+"\n", a...)
		return exitUsage
	}
	if fs.NArg() > 0 {
		return fail("unexpected argument %q", fs.Arg(0))
	}
	if *path == "" {
		return fail("missing --scenario")
	}
	if *format != "text" && *format != "json" {
		return fail("unknown --format %q (want text or json)", *format)
	}
	if *engine != "fluid" && *engine != "ns3" {
		return fail("unknown --engine %q (want fluid or ns3)", *engine)
	}
	if *workers < 1 {
		return fail("--workers %d, want >= 1", *workers)
	}
	if *seeds < 0 {
		return fail("--seeds %d, want >= 1 (or 0: the scenario's)", *seeds)
	}
	seedSet := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "seed" {
			seedSet = true
		}
	})
	var seedAt *uint64
	if seedSet {
		seedAt = seed
	}
	sc, read, err := loadScenario(*path, seedAt, *seeds)
	if err != nil {
		return fail("%v", err)
	}
	if *noOracle {
		sc = sc.WithoutOracle()
	}
	if *outDir == "" {
		*outDir = filepath.Join("out", sc.Name)
	}
	note := ""
	if *engine == "ns3" || *packetScale {
		if sc, note, err = sc.ForPacket(read); err != nil {
			return fail("%s: %v", *path, err)
		}
	}
	start := time.Now()
	var res *scenario.Result
	if *engine == "ns3" {
		var bin string
		if bin, err = harnessPath(*harness); err == nil {
			res, err = simulatePacket(sc, note, bin, *outDir, newProgress(e.stderr, *quiet, start))
		}
	} else if res, err = simulate(sc, *workers, newProgress(e.stderr, *quiet, start)); err == nil {
		res.Engine, res.Scaling = "fluid", note
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "react sim: %v\n", err)
		return exitFail
	}
	elapsed := time.Since(start)
	js, resultsPath, plots, err := writeResults(res, *outDir, !*noPlots)
	if err != nil {
		fmt.Fprintf(e.stderr, "react sim: %v\n", err)
		return exitFail
	}
	out := bufio.NewWriter(e.stdout)
	if *format == "json" {
		out.Write(js)
	} else {
		writeSimTable(out, res)
		how := fmt.Sprintf("on %d workers", *workers)
		if *engine == "ns3" {
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
