package scenario

import (
	"math"
	"strings"
	"testing"
)

const packetBase = `{"format": "react.scenario/v1", "name": "pk",
 "topology": {"kind": "fattree", "k": 4},
 "epochs": 30, "measure_after": 10, "seed": 3,
 "jobs": [{"name": "t", "op": "allreduce", "algo": "tree", "ranks": 4, "bytes": 1e6, "placement": {"kind": "random"}}],
 "external": [{"p": 2, "random": 1, "job": 0}]`

func TestForPacket(t *testing.T) {
	tests := []struct {
		name, extra string
		err         string
		check       func(t *testing.T, s *Scenario, note string)
	}{
		{name: "no block", check: func(t *testing.T, s *Scenario, note string) {
			if s.Jobs[0].Bytes != 1e6 || s.Epochs != 30 || !strings.Contains(note, "none") {
				t.Errorf("bytes %g, epochs %d, note %q: want the scenario unchanged", s.Jobs[0].Bytes, s.Epochs, note)
			}
		}},
		{name: "scaled", extra: `, "packet": {"bytes_scale": 0.1, "epochs": 12, "measure_after": 4, "seeds": 2,
			"axes": [{"param": "p", "values": [4]}]}, "sweep": {"seeds": 5, "axes": [{"param": "p", "values": [1, 2]}, {"param": "bytes", "values": [1e6, 2e6]}]}`,
			check: func(t *testing.T, s *Scenario, note string) {
				if s.Jobs[0].Bytes != 1e5 || s.Epochs != 12 || s.MeasureAfter != 4 || len(s.Seeds()) != 2 || len(s.Cells()) != 2 {
					t.Errorf("bytes %g, epochs %d after %d, %d seeds, %d cells", s.Jobs[0].Bytes, s.Epochs, s.MeasureAfter, len(s.Seeds()), len(s.Cells()))
				}
				if v := s.Cells()[1][1].Value.Num; v != 2e5 {
					t.Errorf("swept bytes %g, want 2e5 (scaled)", v)
				}
				for _, w := range []string{"x0.1", "epochs 12", "p in [4]", "2 seeds"} {
					if !strings.Contains(note, w) {
						t.Errorf("note %q lacks %q", note, w)
					}
				}
			}},
		{name: "bad scale", extra: `, "packet": {"bytes_scale": -1}`, err: "bytes_scale"},
		{name: "noise", extra: `, "noise": {"sigma": 0.1}`, err: "noise"},
		{name: "window", extra: `, "external": [{"p": 1, "pairs": [{"src": 0, "dst": 1}], "from_epoch": 3}]`, err: "windowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := packetBase + tt.extra + "}"
			s, err := Decode([]byte(src), nil)
			if err != nil {
				t.Fatal(err)
			}
			ps, note, err := s.ForPacket(nil)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !ps.Oracle.Off || ps.Compare != nil {
				t.Error("packet scenario keeps an oracle or compared tuners")
			}
			tt.check(t, ps, note)
		})
	}
}

// TestPacketInputs checks the resolved case: the runs, the paths (host to
// host over real links) and every connection's route.
func TestPacketInputs(t *testing.T) {
	s, err := Decode([]byte(packetBase+`, "variants": [{"name": "idle", "no_external": true}]}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	ps, note, err := s.ForPacket(nil)
	if err != nil {
		t.Fatal(err)
	}
	ins, err := ps.PacketInputs(ps.Cases()[0], note)
	if err != nil {
		t.Fatal(err)
	}
	if len(ins) != 3 || ins[0].Run != PacketBaseline || ins[1].Run != PacketReact || ins[2].Run != "idle" {
		t.Fatalf("runs %d, want baseline, react, idle", len(ins))
	}
	if ins[0].Jobs[0].Tune || ins[0].Jobs[0].Tuner != "" || !ins[1].Jobs[0].Tune || !strings.Contains(ins[1].Jobs[0].Tuner, `"Seed"`) {
		t.Error("only the react run tunes, with a seeded config")
	}
	if len(ins[0].External) != 2 || len(ins[2].External) != 0 {
		t.Errorf("external flows %d and %d, want 2 (p = 2) and 0 (idle)", len(ins[0].External), len(ins[2].External))
	}
	in := ins[0]
	link := map[[2]int]bool{}
	for _, l := range in.Links {
		link[[2]int{int(l[0]), int(l[1])}] = true
	}
	for i, p := range in.Paths {
		if p[0] >= in.Hosts || p[len(p)-1] >= in.Hosts {
			t.Errorf("path %d %v does not run host to host", i, p)
		}
		for k := 1; k < len(p); k++ {
			if !link[[2]int{p[k-1], p[k]}] {
				t.Errorf("path %d %v: no link %d -> %d", i, p, p[k-1], p[k])
			}
		}
	}
	j := in.Jobs[0]
	if len(j.Routes) != j.Chunks*j.Ranks*j.Ranks*j.Ports {
		t.Fatalf("%d routes for %d chunks, %d ranks, %d ports", len(j.Routes), j.Chunks, j.Ranks, j.Ports)
	}
	for k, r := range j.Routes {
		a, b := k/j.Ports/j.Ranks%j.Ranks, k/j.Ports%j.Ranks
		if (a == b) != (r < 0) {
			t.Fatalf("route %d (rank %d to %d) is path %d", k, a, b, r)
		}
		if r >= 0 && (in.Paths[r][0] != j.Hosts[a] || in.Paths[r][len(in.Paths[r])-1] != j.Hosts[b]) {
			t.Errorf("route %d: path %v does not join hosts %d and %d", k, in.Paths[r], j.Hosts[a], j.Hosts[b])
		}
	}
}

// TestPacketRun reads made-up harness outputs back into a Run: times,
// gains, variants and decisions land where the fluid engine puts them,
// and outputs that do not fit the case are refused.
func TestPacketRun(t *testing.T) {
	s, err := Decode([]byte(packetBase+`, "variants": [{"name": "idle", "no_external": true}]}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	ps, _, err := s.ForPacket(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := ps.Cases()[0]
	output := func(elapsed float64, decided bool) PacketOutput {
		j := PacketJobOutput{Name: "t", Epochs: make([]PacketEpoch, ps.Epochs)}
		for e := range j.Epochs {
			j.Epochs[e] = PacketEpoch{Elapsed: elapsed, Reduce: elapsed / 2, NetBytes: 3e6}
		}
		if decided {
			j.Decisions = []PacketDecision{{Epoch: 5, Version: 1, Effective: 10}}
		}
		return PacketOutput{Format: "react.ns3-output/v1", Jobs: []PacketJobOutput{j}}
	}
	run, err := ps.PacketRun(c, []PacketOutput{output(2e-3, false), output(1e-3, true), output(5e-4, false)})
	if err != nil {
		t.Fatal(err)
	}
	jr := run.Jobs[0]
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Abs(b) }
	if !near(jr.Baseline.Mean, 2e-3) || !near(jr.React.Mean, 1e-3) || !near(jr.Baseline.ReduceMean, 1e-3) || !near(jr.Baseline.NetBytes, 3e6) {
		t.Errorf("baseline mean %g reduce %g net %g, react mean %g", jr.Baseline.Mean, jr.Baseline.ReduceMean, jr.Baseline.NetBytes, jr.React.Mean)
	}
	if !near(jr.Improvement, 100) || jr.Changes != 1 || jr.Decisions[0].Effective != 10 {
		t.Errorf("improvement %g, %d changes, decisions %+v; want +100%%, 1, effective 10", jr.Improvement, jr.Changes, jr.Decisions)
	}
	if len(jr.Variants) != 1 || jr.Variants[0].Name != "idle" || !near(jr.Variants[0].Mean, 5e-4) {
		t.Errorf("%d variants, first %q", len(jr.Variants), jr.Variants[0].Name)
	}
	if _, err := ps.PacketRun(c, []PacketOutput{output(1, false)}); err == nil || !strings.Contains(err.Error(), "want 3") {
		t.Errorf("one output for three runs: error %v", err)
	}
	short := output(1, false)
	short.Jobs[0].Epochs = short.Jobs[0].Epochs[:3]
	if _, err := ps.PacketRun(c, []PacketOutput{short, output(1, false), output(1, false)}); err == nil || !strings.Contains(err.Error(), "ran 3 of 30 epochs") {
		t.Errorf("a short run: error %v", err)
	}
}
