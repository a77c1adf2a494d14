package scenario

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fig1 is §4.3's example (examples/scenarios/fig1-example.json with a
// depth-1 oracle, to keep the test quick).
const fig1 = `{
  "format": "react.scenario/v1",
  "name": "fig1",
  "topology": {"kind": "star", "hosts": 17, "capacity": 100e9, "latency": 2e-6},
  "epochs": 120, "measure_after": 60, "seed": 1,
  "jobs": [{"name": "tree16", "op": "allreduce", "algo": "tree", "ranks": 16, "bytes": 2e6}],
  "external": [{"p": 2, "pairs": [{"src": 16, "dst": 3}]}],
  "oracle": {"depth": 1},
  "variants": [
    {"name": "no congestion", "no_external": true},
    {"name": "paper's swap", "swaps": [{"kind": "chunk", "chunk": 1, "x": 3, "y": 2}]}
  ]
}`

// small is a quick sweep on the k=4 fat tree.
const small = `{
  "format": "react.scenario/v1",
  "name": "small",
  "topology": {"kind": "fattree", "k": 4},
  "epochs": 30, "measure_after": 12, "seed": 3,
  "jobs": [{"name": "tree4", "op": "allreduce", "algo": "tree", "ranks": 4, "bytes": 4e6, "placement": {"kind": "random"}}],
  "external": [{"p": 1, "random": 1}],
  "oracle": {"beam": 2, "budget": 300},
  "sweep": {"seeds": 3, "axes": [{"param": "pairs", "values": [1, 2]}, {"param": "p", "values": [2, 4]}]}
}`

func decode(t testing.TB, src string) *Scenario {
	t.Helper()
	s, err := Decode([]byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// edit changes one field of a JSON document given as a map.
func edit(t *testing.T, src string, f func(m map[string]any)) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(src), &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func job0(m map[string]any) map[string]any { return m["jobs"].([]any)[0].(map[string]any) }

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string
	}{
		{"empty", "", "empty input"},
		{"syntax", "{\n  \"format\": ,\n}", "line 2, column"},
		{"trailing data", fig1 + " {}", "data after the scenario object"},
		{"unknown field", strings.Replace(fig1, `"epochs"`, `"epoch": 3, "epochs"`, 1), `unknown field "epoch"`},
		{"wrong type", strings.Replace(fig1, `"epochs": 120`, `"epochs": "many"`, 1), "epochs: got a JSON string, want int"},
		{"format", strings.Replace(fig1, "react.scenario/v1", "v0", 1), `format "v0", want "react.scenario/v1"`},
		{"no name", edit(t, fig1, func(m map[string]any) { delete(m, "name") }), "no name"},
		{"epochs", edit(t, fig1, func(m map[string]any) { m["epochs"] = 0 }), "epochs = 0"},
		{"measure_after", edit(t, fig1, func(m map[string]any) { m["measure_after"] = 120 }), "measure_after = 120, want in [0, epochs = 120)"},
		{"no jobs", edit(t, fig1, func(m map[string]any) { m["jobs"] = []any{} }), "no jobs"},
		{"topology kind", edit(t, fig1, func(m map[string]any) { m["topology"] = map[string]any{"kind": "ring"} }), `unknown kind "ring"`},
		{"star size", edit(t, fig1, func(m map[string]any) { m["topology"] = map[string]any{"kind": "star"} }), "star: need at least 1 host"},
		{"fat tree k", edit(t, fig1, func(m map[string]any) { m["topology"] = map[string]any{"kind": "fattree", "k": 5} }), "k must be even"},
		{"file without reader", edit(t, fig1, func(m map[string]any) { m["topology"] = map[string]any{"kind": "json", "file": "t.json"} }), `file "t.json": no way to read files`},
		{"op", edit(t, fig1, func(m map[string]any) { job0(m)["op"] = "alltoall" }), `jobs[0] (tree16): unknown op "alltoall"`},
		{"algo", edit(t, fig1, func(m map[string]any) { job0(m)["algo"] = "star" }), `no algorithm "star"`},
		{"ranks", edit(t, fig1, func(m map[string]any) { job0(m)["ranks"] = 1 }), "ranks = 1, want >= 2"},
		{"too many ranks", edit(t, fig1, func(m map[string]any) { job0(m)["ranks"] = 18 }), "18 ranks on a topology of 17 hosts"},
		{"bytes", edit(t, fig1, func(m map[string]any) { job0(m)["bytes"] = 0 }), "bytes = 0"},
		{"placement kind", edit(t, fig1, func(m map[string]any) { job0(m)["placement"] = map[string]any{"kind": "near"} }), `placement: unknown kind "near"`},
		{"placement hosts dup", edit(t, small, func(m map[string]any) {
			job0(m)["placement"] = map[string]any{"kind": "hosts", "hosts": []int{1, 2, 2, 3}}
		}), "ranks 1 and 2 both on host 2"},
		{"placement pool", edit(t, small, func(m map[string]any) {
			job0(m)["placement"] = map[string]any{"kind": "random", "pool": []int{0, 2}}
		}), "4 ranks in a pool of 3 hosts"},
		{"overlap with itself", edit(t, small, func(m map[string]any) {
			job0(m)["placement"] = map[string]any{"kind": "overlap", "with": 0, "shared": 1}
		}), "with = 0, want an earlier job in [0, 0)"},
		{"external host", edit(t, fig1, func(m map[string]any) {
			m["external"] = []any{map[string]any{"p": 1, "pairs": []any{map[string]any{"src": 17, "dst": 3}}}}
		}), "external[0]: pairs[0]: source host 17 out of range [0, 17)"},
		{"external self", edit(t, fig1, func(m map[string]any) {
			m["external"] = []any{map[string]any{"p": 1, "pairs": []any{map[string]any{"src": 3, "dst": 3}}}}
		}), "both host 3"},
		{"external direction", edit(t, fig1, func(m map[string]any) {
			m["external"] = []any{map[string]any{"p": 1, "random": 1, "direction": "up"}}
		}), `direction "up"`},
		{"external rank", edit(t, fig1, func(m map[string]any) {
			m["external"] = []any{map[string]any{"p": 1, "random": 1, "ranks": []int{16}}}
		}), "rank 16 out of range [0, 16)"},
		{"external from_epoch", edit(t, fig1, func(m map[string]any) {
			m["external"] = []any{map[string]any{"p": 1, "random": 1, "from_epoch": -1}}
		}), "external[0]: from_epoch = -1, want in [0, epochs = 120)"},
		{"external from_epoch past the end", edit(t, fig1, func(m map[string]any) {
			m["external"] = []any{map[string]any{"p": 1, "random": 1, "from_epoch": 120}}
		}), "from_epoch = 120"},
		{"external empty window", edit(t, fig1, func(m map[string]any) {
			m["external"] = []any{map[string]any{"p": 1, "random": 1, "from_epoch": 30, "to_epoch": 30}}
		}), "external[0]: to_epoch = 30, want in (from_epoch = 30, epochs = 120]"},
		{"external to_epoch past the end", edit(t, fig1, func(m map[string]any) {
			m["external"] = []any{map[string]any{"p": 1, "random": 1, "to_epoch": 121}}
		}), "to_epoch = 121"},
		{"failure capacity", edit(t, fig1, func(m map[string]any) { m["failures"] = []any{map[string]any{"random": 1}} }), "failures[0]: capacity = 0"},
		{"failure link", edit(t, fig1, func(m map[string]any) {
			m["failures"] = []any{map[string]any{"capacity": 30e9, "links": []any{map[string]any{"from": "h1", "to": "h2"}}}}
		}), "links[0]: no link h1 -> h2"},
		{"failure node", edit(t, fig1, func(m map[string]any) {
			m["failures"] = []any{map[string]any{"capacity": 30e9, "links": []any{map[string]any{"from": "h99", "to": "sw"}}}}
		}), `unknown node "h99"`},
		{"failure scope", edit(t, fig1, func(m map[string]any) { m["failures"] = []any{map[string]any{"capacity": 1e9, "scope": "core"}} }), `scope "core"`},
		{"tuner", edit(t, fig1, func(m map[string]any) { m["tuner"] = map[string]any{"B": 0} }), "tuner: tuner config: B = 0"},
		{"tuner model", edit(t, fig1, func(m map[string]any) { m["tuner"] = map[string]any{"Model": "best"} }), `tuner: tuner config: Model = "best", want "react" or "paper"`},
		{"tuner old name", edit(t, fig1, func(m map[string]any) { m["tuner"] = map[string]any{"kt_growth": 3} }), `tuner: tuner config: unknown setting "kt_growth" (did you mean "KtGrowth"?)`},
		{"tuner type", edit(t, fig1, func(m map[string]any) { m["tuner"] = map[string]any{"Lag": "soon"} }), `tuner: tuner config: Lag = "soon", want an integer`},
		{"noise sigma", edit(t, fig1, func(m map[string]any) { m["noise"] = map[string]any{"sigma": -0.1} }), "noise: sigma = -0.1, want in [0, 4]"},
		{"noise rank_sigma", edit(t, fig1, func(m map[string]any) { m["noise"] = map[string]any{"rank_sigma": 5, "period": 2} }), "noise: rank_sigma = 5"},
		{"noise period", edit(t, fig1, func(m map[string]any) { m["noise"] = map[string]any{"rank_sigma": 0.3} }), "noise: period = 0 epochs with rank_sigma = 0.3, want >= 1"},
		{"noise negative period", edit(t, fig1, func(m map[string]any) { m["noise"] = map[string]any{"sigma": 0.1, "period": -3} }), "noise: period = -3 epochs"},
		{"noise field", edit(t, fig1, func(m map[string]any) { m["noise"] = map[string]any{"sigma": 0.1, "std": 1} }), `unknown field "std"`},
		{"sweep noise_sigma", edit(t, small, func(m map[string]any) {
			m["sweep"] = map[string]any{"axes": []any{map[string]any{"param": "noise_sigma", "values": []any{0.1, -1}}}}
		}), "cell noise_sigma=-1: noise: sigma = -1"},
		{"sweep rank_sigma without period", edit(t, small, func(m map[string]any) {
			m["sweep"] = map[string]any{"axes": []any{map[string]any{"param": "rank_sigma", "values": []any{0, 0.3}}}}
		}), "cell rank_sigma=0.3: noise: period = 0 epochs with rank_sigma = 0.3"},
		{"compare no name", edit(t, fig1, func(m map[string]any) { m["compare"] = []any{map[string]any{"tuner": map[string]any{}}} }), "compare[0]: no name"},
		{"compare reserved", edit(t, fig1, func(m map[string]any) { m["compare"] = []any{map[string]any{"name": "Oracle"}} }), `compare[0]: name "Oracle" is a column of every table`},
		{"compare twice", edit(t, fig1, func(m map[string]any) {
			m["compare"] = []any{map[string]any{"name": "paper"}, map[string]any{"name": "paper"}}
		}), `compare[1]: name "paper" used twice`},
		{"compare variant name", edit(t, fig1, func(m map[string]any) { m["compare"] = []any{map[string]any{"name": "no congestion"}} }), `compare[0]: name "no congestion" is also variants[0]'s`},
		{"compare tuner", edit(t, fig1, func(m map[string]any) {
			m["compare"] = []any{map[string]any{"name": "p", "tuner": map[string]any{"Model": "x"}}}
		}), `compare[0] (p): tuner: tuner config: Model = "x"`},
		{"compare tuner with the scenario's", edit(t, fig1, func(m map[string]any) {
			m["tuner"] = map[string]any{"H": 10}
			m["compare"] = []any{map[string]any{"name": "p", "tuner": map[string]any{"B": 12}}}
		}), `compare[0] (p): tuner: tuner config: H = 10, want >= B (12)`},
		{"oracle depth", edit(t, fig1, func(m map[string]any) { m["oracle"] = map[string]any{"depth": 3} }), "oracle: depth = 3"},
		{"oracle restarts", edit(t, fig1, func(m map[string]any) { m["oracle"] = map[string]any{"climb": true, "restarts": -1} }), "oracle: restarts = -1, want >= 0"},
		{"oracle climb_budget", edit(t, fig1, func(m map[string]any) { m["oracle"] = map[string]any{"climb": true, "climb_budget": -5} }), "oracle: climb_budget = -5 simulations"},
		{"oracle climb settings without the climb", edit(t, fig1, func(m map[string]any) { m["oracle"] = map[string]any{"restarts": 3} }), "set climb: true"},
		{"oracle climb_screen", edit(t, fig1, func(m map[string]any) { m["oracle"] = map[string]any{"climb": true, "climb_screen": -1} }), "oracle: climb_screen = -1 epochs"},
		{"oracle objective", edit(t, fig1, func(m map[string]any) { m["oracle"] = map[string]any{"objective": "max"} }), `objective "max"`},
		{"variant no change", edit(t, fig1, func(m map[string]any) { m["variants"] = []any{map[string]any{"name": "v"}} }), "changes nothing"},
		{"variant rank", edit(t, fig1, func(m map[string]any) {
			m["variants"] = []any{map[string]any{"name": "v", "swaps": []any{map[string]any{"kind": "global", "x": 0, "y": 16}}}}
		}), "global swap: y = 16, want a rank in [0, 16)"},
		{"variant kind", edit(t, fig1, func(m map[string]any) {
			m["variants"] = []any{map[string]any{"name": "v", "swaps": []any{map[string]any{"kind": "rotate"}}}}
		}), `unknown kind "rotate"`},
		{"variant breaks semantics", edit(t, fig1, func(m map[string]any) {
			job0(m)["op"], job0(m)["algo"] = "broadcast", "tree"
			m["variants"] = []any{map[string]any{"name": "v", "swaps": []any{map[string]any{"kind": "global", "x": 0, "y": 1}}}}
		}), "swaps[0] (global 0<->1) breaks the collective"},
		{"sweep param", edit(t, small, func(m map[string]any) {
			m["sweep"] = map[string]any{"axes": []any{map[string]any{"param": "q", "values": []int{1}}}}
		}), `unknown param "q"`},
		{"sweep twice", edit(t, small, func(m map[string]any) {
			m["sweep"] = map[string]any{"axes": []any{map[string]any{"param": "p", "values": []int{1}}, map[string]any{"param": "p", "values": []int{2}}}}
		}), `"p" swept twice`},
		{"sweep no values", edit(t, small, func(m map[string]any) {
			m["sweep"] = map[string]any{"axes": []any{map[string]any{"param": "p", "values": []int{}}}}
		}), "no values"},
		{"sweep bad value", edit(t, small, func(m map[string]any) {
			m["sweep"] = map[string]any{"axes": []any{map[string]any{"param": "ports", "values": []any{1.5}}}}
		}), "sweep: ports = 1.5: ports must be a whole number"},
		{"sweep makes a bad cell", edit(t, small, func(m map[string]any) {
			m["sweep"] = map[string]any{"axes": []any{map[string]any{"param": "ranks", "values": []int{4, 17}}}}
		}), "cell ranks=17: jobs[0] (tree4): 17 ranks on a topology of 16 hosts"},
		{"sweep collective", edit(t, small, func(m map[string]any) {
			m["sweep"] = map[string]any{"axes": []any{map[string]any{"param": "collective", "values": []any{"allreduce/ring", "allgather/tree"}}}}
		}), `no algorithm "tree" for allgather`},
		{"sweep failures without spec", edit(t, small, func(m map[string]any) {
			m["sweep"] = map[string]any{"axes": []any{map[string]any{"param": "capacity", "values": []any{30e9}}}}
		}), "no failure spec to set"},
		{"react_jobs", edit(t, small, func(m map[string]any) {
			m["sweep"] = map[string]any{"axes": []any{map[string]any{"param": "react_jobs", "values": []int{2}}}}
		}), "react_jobs = 2, but there are 1 jobs"},
		{"sweep pairs without external", sweepOne(t, edit(t, small, func(m map[string]any) { delete(m, "external") }), "pairs", 1), "sweep: pairs = 1: no external spec without explicit pairs to set"},
		{"sweep p without external", sweepOne(t, edit(t, small, func(m map[string]any) { delete(m, "external") }), "p", 2), "sweep: p = 2: no external spec to set"},
		{"sweep bytes", sweepOne(t, small, "bytes", -1), "sweep: bytes = -1: bytes must be a number > 0, got -1"},
		{"sweep collective not a string", sweepOne(t, small, "collective", 3), `sweep: collective = 3: collective must be a string "op/algo", got 3`},
		{"sweep collective without algo", sweepOne(t, small, "collective", "allreduce"), `collective must be a string "op/algo", got allreduce`},
		{"sweep overlap", sweepOne(t, small, "overlap", 2), `sweep: overlap = 2: no job with an "overlap" placement to set`},
		{"sweep failures", sweepOne(t, small, "failures", 1), "sweep: failures = 1: no failure spec to set"},
		{"sweep capacity", sweepOne(t, small, "capacity", 0), "sweep: capacity = 0: capacity must be a number > 0, got 0"},
		{"sweep ranks", sweepOne(t, small, "ranks", -2), "sweep: ranks = -2: ranks must be a whole number >= 0, got -2"},
		{"sweep noise_sigma", sweepOne(t, small, "noise_sigma", "x"), `sweep: noise_sigma = x: noise_sigma must be a number, got "x"`},
		{"sweep rank_sigma", sweepOne(t, small, "rank_sigma", "y"), `sweep: rank_sigma = y: rank_sigma must be a number, got "y"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode([]byte(tt.src), nil)
			if err == nil {
				t.Fatalf("no error, want one containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestDecodeFiles(t *testing.T) {
	files := map[string]string{
		"star.json": `{"hosts": ["a", "b", "c"], "switches": ["sw"], "capacity": 1e9, "latency": 1e-6,
			"links": [{"from": "a", "to": "sw"}, {"from": "b", "to": "sw"}, {"from": "c", "to": "sw"}]}`,
		"topo.csv": "ip,DSW,PSW,ASW\nh1,G,P1,S2\nh2,G,P2,S10\nh3,G,P1,S2\nh4,G,P2,S10\nh5,G,P1,S2\n",
	}
	read := func(name string) ([]byte, error) {
		if d, ok := files[name]; ok {
			return []byte(d), nil
		}
		return nil, errors.New("no such file")
	}
	tests := []struct {
		topology string
		hosts    int
		switches int
		err      string
	}{
		{`{"kind": "json", "file": "star.json"}`, 3, 1, ""},
		{`{"kind": "alibaba_csv", "file": "topo.csv"}`, 5, 4, ""},
		{`{"kind": "alibaba_csv", "file": "topo.csv", "hosts_per_tor": 2}`, 4, 4, ""},
		{`{"kind": "json", "file": "nope.json"}`, 0, 0, `file "nope.json": no such file`},
		{`{"kind": "json"}`, 0, 0, `kind "json" needs a file`},
		{`{"kind": "alibaba_csv", "file": "star.json"}`, 0, 0, "csv header"},
	}
	for _, tt := range tests {
		src := `{"format": "react.scenario/v1", "name": "f", "topology": ` + tt.topology + `, "epochs": 2,
			"jobs": [{"op": "allreduce", "ranks": 2, "bytes": 1e6}]}`
		s, err := Decode([]byte(src), read)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: error %v, want %q", tt.topology, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.topology, err)
			continue
		}
		if n := s.Network(); n.Hosts() != tt.hosts || n.Switches() != tt.switches {
			t.Errorf("%s: %d hosts, %d switches, want %d, %d", tt.topology, n.Hosts(), n.Switches(), tt.hosts, tt.switches)
		}
		if _, err := s.RunCase(s.Cases()[0], Options{}); err != nil {
			t.Errorf("%s: %v", tt.topology, err)
		}
	}
	// ToRs sort by their number: S2 before S10, so h1, h3, h5 come first.
	s, _ := Decode([]byte(`{"format": "react.scenario/v1", "name": "f", "topology": {"kind": "alibaba_csv", "file": "topo.csv"}, "epochs": 1,
		"jobs": [{"op": "allreduce", "ranks": 2, "bytes": 1e6}]}`), read)
	if got := s.Network().Name(5); got != "S2" {
		t.Errorf("first switch %q, want S2", got)
	}
}

func near(got, want, rel float64) bool { return math.Abs(got-want) <= rel*math.Abs(want) }

// TestFig1 is the paper's §4.3 arithmetic: the reduce phase takes 576 us
// idle, 656 us with p = 2 external flows into rank 3 and 576 us again with
// the paper's swap. The whole AllReduce adds the broadcast, which the swap
// does not help: rank 3 still receives in both trees at the last step.
func TestFig1(t *testing.T) {
	s := decode(t, fig1)
	res, err := s.Run(Options{})
	if err != nil {
		t.Fatal(err)
	}
	j := res.Cells[0].Runs[0].Jobs[0]
	v := map[string]Series{}
	for _, x := range j.Variants {
		v[x.Name] = x.Series
	}
	const us = 1e-6
	tests := []struct {
		name        string
		s           Series
		reduce, all float64
	}{
		{"no congestion", v["no congestion"], 576 * us, 1152 * us},
		{"congestion, static", j.Baseline, 656 * us, 1312 * us},
		{"paper's swap", v["paper's swap"], 576 * us, 1312 * us},
		{"REACT after convergence", j.React, 576 * us, 1232 * us},
		{"oracle", *j.Oracle, 576 * us, 1232 * us},
	}
	for _, tt := range tests {
		t.Logf("%-24s reduce %.1f us, AllReduce %.1f us", tt.name, tt.s.ReduceMean/us, tt.s.Mean/us)
		if !near(tt.s.ReduceMean, tt.reduce, 0.01) {
			t.Errorf("%s: reduce phase %.1f us, want %.0f us", tt.name, tt.s.ReduceMean/us, tt.reduce/us)
		}
		if !near(tt.s.Mean, tt.all, 0.01) {
			t.Errorf("%s: AllReduce %.1f us, want %.0f us", tt.name, tt.s.Mean/us, tt.all/us)
		}
	}
	if j.Changes == 0 {
		t.Error("REACT never changed the pattern")
	}
	if j.Share == nil || *j.Share < 0.99 {
		t.Errorf("REACT's share of the oracle's gain %v, want 1", j.Share)
	}
}

// TestExternalWindow: fig1's external flows only in epochs 2..4 of the
// job: the static AllReduce takes 1152 us before and after, 1312 us during.
func TestExternalWindow(t *testing.T) {
	src := edit(t, fig1, func(m map[string]any) {
		m["epochs"], m["measure_after"] = 8, 0
		m["external"].([]any)[0].(map[string]any)["from_epoch"] = 2
		m["external"].([]any)[0].(map[string]any)["to_epoch"] = 5
		m["oracle"] = map[string]any{"off": true}
		delete(m, "variants")
	})
	s := decode(t, src)
	r, err := s.RunCase(s.Cases()[0], Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{1152, 1152, 1312, 1312, 1312, 1152, 1152, 1152}
	for e, got := range r.Jobs[0].Baseline.Times {
		if !near(got, want[e]*1e-6, 1e-3) {
			t.Errorf("epoch %d: %.1f us, want %.0f us", e, got*1e6, want[e])
		}
	}
	if x := r.External[0]; !x.Windowed || x.FromEpoch != 2 || x.ToEpoch != 5 || x.Job != 0 {
		t.Errorf("results name the window %+v, want epochs [2, 5) of job 0", x)
	}
}

func TestSmallSweep(t *testing.T) {
	s := decode(t, small)
	if got := len(s.Cells()); got != 4 {
		t.Fatalf("%d cells, want 4", got)
	}
	res, err := s.Run(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cells) != 4 || !slices.Equal(res.Axes, []string{"pairs", "p"}) {
		t.Fatalf("%d cells, axes %v", len(res.Cells), res.Axes)
	}
	for _, c := range res.Cells {
		if len(c.Runs) != 3 {
			t.Fatalf("cell %v: %d runs, want 3", c.Params, len(c.Runs))
		}
		pairs, p := int(c.Params[0].Value.Num), int(c.Params[1].Value.Num)
		for _, r := range c.Runs {
			if len(r.External) != pairs {
				t.Errorf("cell %v seed %d: %d external pairs", c.Params, r.Seed, len(r.External))
			}
			for _, e := range r.External {
				if e.P != p || !slices.Contains(r.Hosts[0], e.Src) || slices.Contains(r.Hosts[0], e.Dst) {
					t.Errorf("cell %v seed %d: pair %+v, want p = %d from a rank of %v to a host outside", c.Params, r.Seed, e, p, r.Hosts[0])
				}
			}
			j := r.Jobs[0]
			// The oracle may keep the initial pattern, so it is never worse.
			if j.Oracle.AlgBW < j.Baseline.AlgBW*(1-1e-12) {
				t.Errorf("cell %v seed %d: oracle %.4g B/s below the baseline's %.4g", c.Params, r.Seed, j.Oracle.AlgBW, j.Baseline.AlgBW)
			}
			if j.OracleEvaluated == 0 || j.OracleEvaluated > 300 {
				t.Errorf("cell %v seed %d: oracle simulated %d patterns, budget 300", c.Params, r.Seed, j.OracleEvaluated)
			}
			if len(j.Baseline.Times) != 30 || j.Baseline.Mean <= 0 {
				t.Errorf("cell %v seed %d: baseline %d epochs, mean %v", c.Params, r.Seed, len(j.Baseline.Times), j.Baseline.Mean)
			}
		}
		js := c.Jobs[0]
		if js.Improvement.Min > js.Improvement.Mean || js.Improvement.Mean > js.Improvement.Max {
			t.Errorf("cell %v: improvement stat %+v out of order", c.Params, js.Improvement)
		}
	}
	// The same seed draws the same placement in every cell, and the pairs
	// of a cell with one pair are the first of the cell with two.
	for k := range 3 {
		a, b := res.Cells[0].Runs[k], res.Cells[3].Runs[k]
		if !slices.Equal(a.Hosts[0], b.Hosts[0]) {
			t.Errorf("seed %d: placement %v in one cell, %v in another", a.Seed, a.Hosts[0], b.Hosts[0])
		}
		if a.External[0].Src != b.External[0].Src || a.External[0].Dst != b.External[0].Dst {
			t.Errorf("seed %d: first pair %+v with one pair, %+v with two", a.Seed, a.External[0], b.External[0])
		}
	}
}

func TestDeterminism(t *testing.T) {
	s := decode(t, small)
	c := s.Cases()[5]
	a, err := s.RunCase(c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.RunCase(c, Options{Progress: func(float64) {}})
	if err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Error("the same case gave two different runs")
	}
	d, err := s.WithSeed(99).RunCase(Case{c.Cell, 99}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(d.Hosts[0], a.Hosts[0]) && d.Jobs[0].Baseline.Mean == a.Jobs[0].Baseline.Mean {
		t.Error("another seed gave the same placement and times")
	}
}

func TestPlacements(t *testing.T) {
	src := `{"format": "react.scenario/v1", "name": "p", "topology": {"kind": "star", "hosts": 20}, "epochs": 2,
	  "jobs": [
	    {"name": "a", "op": "allreduce", "ranks": 6, "bytes": 1e6, "placement": {"kind": "random", "pool": [0, 9]}},
	    {"name": "b", "op": "allreduce", "algo": "ring", "ranks": 6, "bytes": 1e6, "placement": {"kind": "overlap", "with": 0, "shared": 2}},
	    {"name": "c", "op": "allgather", "ranks": 4, "bytes": 1e6, "placement": {"kind": "spread", "pool": [12, 19], "offset": 1}},
	    {"name": "d", "op": "broadcast", "ranks": 2, "bytes": 1e6, "placement": {"kind": "hosts", "hosts": [19, 0]}}
	  ],
	  "external": [{"p": 3, "random": 2, "job": 1, "direction": "in", "ranks": [0, 5]}],
	  "failures": [{"capacity": 5e9, "random": 2, "scope": "job", "job": 2}],
	  "oracle": {"off": true},
	  "sweep": {"seeds": 4}
	}`
	s := decode(t, src)
	for _, c := range s.Cases() {
		r, err := s.RunCase(c, Options{})
		if err != nil {
			t.Fatal(err)
		}
		a, b := r.Hosts[0], r.Hosts[1]
		for _, h := range a {
			if h < 0 || h > 9 {
				t.Errorf("seed %d: job a on host %d, outside its pool [0, 9]", c.Seed, h)
			}
		}
		shared := 0
		for _, h := range b {
			if slices.Contains(a, h) {
				shared++
			}
		}
		if shared != 2 {
			t.Errorf("seed %d: jobs a %v and b %v share %d hosts, want 2", c.Seed, a, b, shared)
		}
		if got := r.Hosts[2]; !slices.Equal(got, []int{13, 15, 17, 19}) {
			t.Errorf("seed %d: spread placement %v", c.Seed, got)
		}
		if len(r.External) != 2 || r.External[0].Dst == r.External[1].Dst {
			t.Errorf("seed %d: external %+v, want two pairs into distinct ranks", c.Seed, r.External)
		}
		for _, e := range r.External {
			if e.Dst != b[0] && e.Dst != b[5] || e.P != 3 {
				t.Errorf("seed %d: external %+v, want p = 3 into rank 0 (%d) or 5 (%d) of job b", c.Seed, e, b[0], b[5])
			}
		}
		// On a star the only cables on job c's paths are its hosts'.
		if len(r.Cuts) != 4 {
			t.Errorf("seed %d: %d links cut, want 2 cables", c.Seed, len(r.Cuts))
		}
		for _, cut := range r.Cuts {
			h := cut.From
			if h == "sw" {
				h = cut.To
			}
			if !slices.Contains([]string{"h13", "h15", "h17", "h19"}, h) || cut.Capacity != 5e9 {
				t.Errorf("seed %d: cut %+v, not one of job c's cables", c.Seed, cut)
			}
		}
		if !r.Jobs[3].Tuned || r.Jobs[0].Oracle != nil {
			t.Errorf("seed %d: job d not tuned, or an oracle ran while off", c.Seed)
		}
	}
}

// TestExamples decodes every shipped scenario.
func TestExamples(t *testing.T) {
	dir := filepath.Join("..", "..", "examples", "scenarios")
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) == 0 {
		t.Skip("no examples")
	}
	read := func(name string) ([]byte, error) { return os.ReadFile(filepath.Join(dir, name)) }
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Decode(data, read); err != nil {
			t.Errorf("%s: %v", filepath.Base(f), err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(fig1))
	f.Add([]byte(small))
	f.Add([]byte(`{"format": "react.scenario/v1", "name": "x", "topology": {"kind": "star", "hosts": 3}, "epochs": 1, "oracle": {"off": true},
		"jobs": [{"op": "allreduce", "ranks": 2, "bytes": 1}], "external": [{"p": 1, "random": 1}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Decode(data, nil)
		if err != nil {
			return
		}
		// Whatever decodes must describe a runnable set of cases, or fail
		// to draw one with an error; never panic. Keep the fuzzer off huge
		// runs.
		cs := s.Cases()
		if len(cs) == 0 {
			t.Fatal("a decoded scenario with no cases")
		}
		if s.Epochs > 5 || len(cs) > 4 || s.Network().Hosts() > 64 {
			return
		}
		for _, j := range s.Jobs {
			if j.Ranks > 8 {
				return
			}
		}
		if s.Oracle.Off {
			s.RunCase(cs[0], Options{})
		}
	})
}

// sweepOne is src with a sweep of one axis over one value.
func sweepOne(t *testing.T, src, param string, v any) string {
	t.Helper()
	return edit(t, src, func(m map[string]any) {
		m["sweep"] = map[string]any{"axes": []any{map[string]any{"param": param, "values": []any{v}}}}
	})
}
