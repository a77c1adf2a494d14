package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/react-torch/react-torch/pkg/scenario"
)

func TestSimUsage(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"missing scenario", []string{"sim"}, 2, "missing --scenario"},
		{"bad format", []string{"sim", "--scenario", "testdata/sim-small.json", "--format", "xml"}, 2, `unknown --format "xml"`},
		{"bad workers", []string{"sim", "--scenario", "testdata/sim-small.json", "--workers", "0"}, 2, "--workers 0"},
		{"bad seeds", []string{"sim", "--scenario", "testdata/sim-small.json", "--seeds", "-1"}, 2, "--seeds -1"},
		{"no such file", []string{"sim", "--scenario", "testdata/nope.json"}, 2, "no such file"},
		{"bad scenario", []string{"sim", "--scenario", "testdata/sim-bad.json"}, 2, `testdata/sim-bad.json: scenario "sim-bad": jobs[0] (tree4): 40 ranks on a topology of 16 hosts`},
		{"stray argument", []string{"sim", "--scenario", "testdata/sim-small.json", "x"}, 2, `unexpected argument "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runArgs(tt.args, "")
			if code != tt.code || !strings.Contains(stderr, tt.stderr) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, tt.code, tt.stderr)
			}
		})
	}
	if code, stdout, _ := runArgs([]string{"sim", "-h"}, ""); code != 0 || !strings.Contains(stdout, "-scenario") {
		t.Errorf("sim -h: exit %d, %q", code, stdout)
	}
}

func readResult(t *testing.T, path string) (*scenario.Result, []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r scenario.Result
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	return &r, data
}

// TestSimFig1 runs the shipped §4.3 example end to end.
func TestSimFig1(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := runArgs([]string{"sim", "--scenario", "../../examples/scenarios/fig1-example.json", "--out", out, "--quiet"}, "")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	t.Log("\n" + stdout)
	for _, want := range []string{"baseline", "REACT", "oracle", "no congestion", "paper's swap", "reduce phase (µs)", "network MB/epoch", "656.0", "576.0", "1312.0", "1232.0", "1152.0"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q", want)
		}
	}
	r, _ := readResult(t, filepath.Join(out, "results.json"))
	if r.Format != scenario.ResultFormat || len(r.Cells) != 1 {
		t.Fatalf("results.json: format %q, %d cells", r.Format, len(r.Cells))
	}
	j := r.Cells[0].Runs[0].Jobs[0]
	if got := j.Baseline.ReduceMean * 1e6; got < 649 || got > 663 {
		t.Errorf("congested reduce phase %.1f us, want 656", got)
	}
	for _, p := range []string{"epochs-tree16.png", "cdf-tree16.png"} {
		if st, err := os.Stat(filepath.Join(out, p)); err != nil || st.Size() == 0 {
			t.Errorf("plot %s: %v", p, err)
		}
	}
}

// TestSimDeterministic runs a sweep on one worker and on two: the results
// must not depend on the scheduling.
func TestSimDeterministic(t *testing.T) {
	var files [][]byte
	for _, w := range []string{"1", "2"} {
		out := t.TempDir()
		code, stdout, stderr := runArgs([]string{"sim", "--scenario", "testdata/sim-small.json", "--out", out, "--workers", w, "--quiet"}, "")
		if code != 0 {
			t.Fatalf("workers %s: exit %d: %s", w, code, stderr)
		}
		for _, want := range []string{"pairs", "REACT %", "paper6 %", "oracle d2 %", "oracle climb %", "share", "paper6 share", "better oracle p95 %", "changes (max)", "paper6 changes", "oracle climb: the top of a hill climb"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("sweep table lacks %q:\n%s", want, stdout)
			}
		}
		r, data := readResult(t, filepath.Join(out, "results.json"))
		if len(r.Cells) != 2 || len(r.Cells[0].Runs) != 2 {
			t.Fatalf("%d cells", len(r.Cells))
		}
		if _, err := os.Stat(filepath.Join(out, "improvement-tree4.png")); err != nil {
			t.Error(err)
		}
		files = append(files, data)
	}
	if string(files[0]) != string(files[1]) {
		t.Error("results.json differs between 1 and 2 workers")
	}
	// --format json prints results.json; --seed moves every case.
	code, stdout, _ := runArgs([]string{"sim", "--scenario", "testdata/sim-small.json", "--out", t.TempDir(), "--format", "json", "--seed", "7", "--no-plots"}, "")
	var r scenario.Result
	if code != 0 || json.Unmarshal([]byte(stdout), &r) != nil || r.Seed != 7 || r.Cells[0].Runs[1].Seed != 8 {
		t.Errorf("--format json --seed 7: exit %d, seed %d", code, r.Seed)
	}
}

// TestSimTableNoOracle: without an oracle (the file's "off", or
// --no-oracle on a file that has one) the sweep table has no oracle or
// share columns, and still the compared run's.
func TestSimTableNoOracle(t *testing.T) {
	data, err := os.ReadFile("testdata/sim-small.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	m["oracle"] = map[string]any{"off": true}
	data, _ = json.Marshal(m)
	path := filepath.Join(t.TempDir(), "s.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--scenario", path}, {"--scenario", "testdata/sim-small.json", "--no-oracle"}} {
		out := t.TempDir()
		code, stdout, stderr := runArgs(append([]string{"sim", "--out", out, "--quiet", "--no-plots"}, args...), "")
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		for _, bad := range []string{"oracle", "share"} {
			if strings.Contains(stdout, bad) {
				t.Errorf("%v: table without an oracle shows %q:\n%s", args, bad, stdout)
			}
		}
		for _, want := range []string{"paper6 %", "paper6 p95 %", "changes (max)"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("%v: table lacks %q:\n%s", args, want, stdout)
			}
		}
		r, _ := readResult(t, filepath.Join(out, "results.json"))
		if j := r.Cells[0].Runs[0].Jobs[0]; j.Oracle != nil || j.BestOracleImprovement != nil {
			t.Errorf("%v: results.json has an oracle run", args)
		}
	}
}

// --seeds runs the file's cells with another number of seeds.
func TestSimSeeds(t *testing.T) {
	out := t.TempDir()
	code, _, stderr := runArgs([]string{"sim", "--scenario", "testdata/sim-small.json", "--out", out, "--seeds", "1", "--quiet", "--no-plots"}, "")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r, _ := readResult(t, filepath.Join(out, "results.json"))
	if len(r.Cells) != 2 {
		t.Fatalf("%d cells, want the file's 2", len(r.Cells))
	}
	for _, c := range r.Cells {
		if len(c.Runs) != 1 {
			t.Errorf("cell %v: %d runs, want 1 (the file has 2 seeds)", c.Params, len(c.Runs))
		}
	}
}

// TestSimHosts: the sweep table of hosts of several GPUs names hosts and
// GPUs and shows the flat variant's time ratio and network bytes beside
// the hierarchical baseline's.
func TestSimHosts(t *testing.T) {
	code, stdout, stderr := runArgs([]string{"sim", "--scenario", "testdata/sim-hosts.json", "--out", t.TempDir(), "--quiet", "--no-plots"}, "")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// The last line says how long the run took.
	table := stdout[:strings.LastIndex(strings.TrimSuffix(stdout, "\n"), "\n")+1]
	golden(t, "sim-hosts.golden", table)
}
