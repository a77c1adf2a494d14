package scenario

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// hier is a job of 8 hosts of 4 GPUs on a 12-host star (hosts 8-11 are
// outside it); %s is the topology's extra fields, %d the external flows
// into the host of rank 3.
const hier = `{
  "format": "react.scenario/v1",
  "name": "hier",
  "topology": {"kind": "star", "hosts": 12, "capacity": 100e9, "latency": 1e-6%s},
  "epochs": 60, "measure_after": 20, "seed": 1,
  "jobs": [{"name": "tree", "op": "allreduce", "algo": "tree", "ranks": 8, "bytes": 8e6}],
  "external": [{"p": %d, "pairs": [{"src": 10, "dst": 3}]}],
  "oracle": {"off": true},
  "variants": [{"name": "flat", "flat": true}]
}`

func runHier(t *testing.T, topo string, p int) *JobRun {
	t.Helper()
	res, err := decode(t, fmt.Sprintf(hier, topo, p)).Run(Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &res.Cells[0].Runs[0].Jobs[0]
}

// TestOneGPUAHost: gpus_per_host 1, with either NIC setting, is the
// simulator as it was: the same run, figure for figure.
func TestOneGPUAHost(t *testing.T) {
	want, err := json.Marshal(runHier(t, "", 2))
	if err != nil {
		t.Fatal(err)
	}
	for _, extra := range []string{`, "gpus_per_host": 1`, `, "gpus_per_host": 1, "nic": "gpu"`} {
		got, _ := json.Marshal(runHier(t, extra, 2))
		if string(got) != string(want) {
			t.Errorf("%s: the run differs from one GPU a host by default", extra)
		}
	}
}

// TestHierarchical: with 4 GPUs a host the hierarchical pattern sends
// each inter-host byte once (the tree's flows, every one between two
// hosts), the flat pattern over 32 GPUs more, and is slower; one NIC a
// GPU gives each rail its own cable; the intra-host phases add their time.
func TestHierarchical(t *testing.T) {
	const mb = 8e6
	// 8-host double binary tree AllReduce: two trees of 7 edges, each edge
	// up and down with half the message.
	const hierBytes = 2 * 7 * 2 * 0.5 * mb
	host := runHier(t, `, "gpus_per_host": 4`, 0)
	gpu := runHier(t, `, "gpus_per_host": 4, "nic": "gpu"`, 0)
	for _, tt := range []struct {
		name string
		jr   *JobRun
	}{{"nic host", host}, {"nic gpu", gpu}} {
		flat := tt.jr.Variants[0].Series
		if !near(tt.jr.Baseline.NetBytes, hierBytes, 1e-12) || !(flat.NetBytes > tt.jr.Baseline.NetBytes) {
			t.Errorf("%s: network bytes an epoch: hierarchical %g, flat %g; want %g and more", tt.name, tt.jr.Baseline.NetBytes, flat.NetBytes, float64(hierBytes))
		}
		if !(flat.Mean > tt.jr.Baseline.Mean) {
			t.Errorf("%s: flat %.1f us, hierarchical %.1f us; want flat slower", tt.name, flat.Mean*1e6, tt.jr.Baseline.Mean*1e6)
		}
	}
	// The network part: on one NIC a host 4 rails share 100 Gbps, on one
	// a GPU each has it alone; the intra-host phases, 2 x 3/4 x 8 MB at
	// 450 GB/s, are the same.
	phases := 2 * 0.75 * mb * 8 / DefaultIntraCapacity
	ratio := (host.Baseline.Mean - phases) / (gpu.Baseline.Mean - phases)
	if ratio < 3.5 || ratio > 4.05 {
		t.Errorf("network time, one NIC a host over one a GPU: %.2f, want about 4", ratio)
	}
	one := runHier(t, "", 0)
	if d := host.Baseline.Mean - phases; !near(d, one.Baseline.Mean, 0.05) {
		t.Errorf("4 rails of 1/4 on one NIC took %.1f us plus the phases, one rank a host %.1f us", d*1e6, one.Baseline.Mean*1e6)
	}
}

// TestHierarchicalCongestion: external flows into a host's one NIC slow
// every rail; with one NIC a GPU they hit rail 0 only. REACT moves the
// host (a swap of the host-level pattern) and gains; without congestion it
// changes nothing.
func TestHierarchicalCongestion(t *testing.T) {
	tests := []struct {
		name     string
		topo     string
		p        int
		gain     bool // REACT must gain
		slowdown float64
	}{
		{"nic host p 0", `, "gpus_per_host": 4`, 0, false, 1},
		{"nic host p 8", `, "gpus_per_host": 4`, 8, true, 1.2},
		{"nic gpu p 0", `, "gpus_per_host": 4, "nic": "gpu"`, 0, false, 1},
		{"nic gpu p 2", `, "gpus_per_host": 4, "nic": "gpu"`, 2, true, 1.2},
	}
	idle := map[string]float64{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			jr := runHier(t, tt.topo, tt.p)
			if tt.p == 0 {
				idle[tt.topo] = jr.Baseline.Mean
				if jr.Changes != 0 || jr.Improvement != 0 {
					t.Errorf("no congestion: %d changes, %+.1f%%; want none", jr.Changes, jr.Improvement)
				}
				return
			}
			if s := jr.Baseline.Mean / idle[tt.topo]; s < tt.slowdown {
				t.Errorf("congestion slowed the static pattern %.2fx, want at least %.2fx", s, tt.slowdown)
			}
			if tt.gain && !(jr.Improvement > 3 && jr.Changes > 0) {
				t.Errorf("REACT %+.1f%% with %d changes, want a gain", jr.Improvement, jr.Changes)
			}
		})
	}
}

func TestHostsErrors(t *testing.T) {
	for _, tt := range []struct{ topo, want string }{
		{`, "gpus_per_host": -1`, "gpus_per_host = -1"},
		{`, "gpus_per_host": 65`, "gpus_per_host = 65"},
		{`, "nic": "rail"`, `nic "rail"`},
		{`, "intra_capacity": -1`, "intra_capacity = -1"},
	} {
		_, err := Decode([]byte(fmt.Sprintf(hier, tt.topo, 1)), nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.topo, err, tt.want)
		}
	}
	src := strings.Replace(fmt.Sprintf(hier, "", 1), `"flat": true`, `"flat": true, "swaps": [{"kind": "global", "x": 0, "y": 1}]`, 1)
	if _, err := Decode([]byte(src), nil); err == nil || !strings.Contains(err.Error(), "not to the flat one") {
		t.Errorf("flat with swaps: error %v", err)
	}
}

// TestIntraPhases: idle, on one NIC a host, L rails of 1/L each take the
// network time of one rank a host, so a hierarchical collective is that
// plus its intra-host phases: two for AllReduce, Broadcast and Reduce,
// one for AllGather and ReduceScatter.
func TestIntraPhases(t *testing.T) {
	const bytes = 8e6
	phase := 0.75 * bytes * 8 / DefaultIntraCapacity
	for _, tt := range []struct {
		op, algo string
		phases   float64
	}{
		{"allreduce", "ring", 2},
		{"allgather", "ring", 1},
		{"reducescatter", "ring", 1},
		{"broadcast", "tree", 2},
		{"reduce", "tree", 2},
	} {
		t.Run(tt.op, func(t *testing.T) {
			with := func(topo string) *JobRun {
				src := edit(t, fmt.Sprintf(hier, topo, 0), func(m map[string]any) {
					j := job0(m)
					j["op"], j["algo"] = tt.op, tt.algo
					delete(m, "variants")
				})
				res, err := decode(t, src).Run(Options{})
				if err != nil {
					t.Fatal(err)
				}
				return &res.Cells[0].Runs[0].Jobs[0]
			}
			one, four := with(""), with(`, "gpus_per_host": 4`)
			if got := (four.Baseline.Mean - one.Baseline.Mean) / phase; !near(got, tt.phases, 1e-6) {
				t.Errorf("4 GPUs a host add %.3f intra-host phases, want %v", got, tt.phases)
			}
		})
	}
}
