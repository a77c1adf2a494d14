package scenario

import (
	"strings"
	"testing"
)

// fatTree8 is one case of fig5-tree: 8 ranks, 20 MB, 100 epochs on the
// k=8 fat tree with two congested pairs at p = 2.
const fatTree8 = `{
  "format": "react.scenario/v1", "name": "bench-fattree",
  "topology": {"kind": "fattree", "k": 8}, "epochs": 100, "measure_after": 25, "seed": 1,
  "jobs": [{"name": "tree8", "op": "allreduce", "algo": "tree", "ranks": 8, "bytes": 20e6, "placement": {"kind": "random"}}],
  "external": [{"p": 2, "random": 2}],
  "oracle": {"off": true}
}`

// closTwoJobs is one case of fig7a: two 8-rank ring AllReduce jobs on the
// 720-server Clos, REACT on both.
const closTwoJobs = `{
  "format": "react.scenario/v1", "name": "bench-clos",
  "topology": {"kind": "clos", "tors": 48, "aggs": 3, "hosts_per_tor": 15}, "epochs": 100, "measure_after": 25, "seed": 1,
  "jobs": [
    {"name": "a", "op": "allreduce", "algo": "ring", "ranks": 8, "bytes": 20e6, "placement": {"kind": "random", "pool": [0, 59], "disjoint": true}},
    {"name": "b", "op": "allreduce", "algo": "ring", "ranks": 8, "bytes": 20e6, "placement": {"kind": "random", "pool": [0, 59], "disjoint": true}}
  ],
  "oracle": {"off": true}
}`

func benchCase(b *testing.B, src string) {
	s := decode(b, src)
	c := s.Cases()[0]
	for b.Loop() {
		if _, err := s.RunCase(c, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFatTree8 is the baseline and the REACT run of one fig5 case
// (two 100-epoch simulations, the tuner in the loop in one).
func BenchmarkFatTree8(b *testing.B) { benchCase(b, fatTree8) }

// BenchmarkFatTree8Oracle adds fig5's oracle (depth 2, beam 4).
func BenchmarkFatTree8Oracle(b *testing.B) {
	benchCase(b, strings.Replace(fatTree8, `"oracle": {"off": true}`, `"oracle": {}`, 1))
}

// BenchmarkFatTree8Climb adds fig5's climbing oracle (screened on 30
// epochs, 2500 simulations) to fig5's depth-2 search.
func BenchmarkFatTree8Climb(b *testing.B) {
	benchCase(b, strings.Replace(fatTree8, `"oracle": {"off": true}`, `"oracle": {"climb": true, "climb_screen": 30, "climb_budget": 2500}`, 1))
}

// BenchmarkClosTwoJobs is the baseline and the REACT run of two jobs on
// the 720-server Clos.
func BenchmarkClosTwoJobs(b *testing.B) { benchCase(b, closTwoJobs) }

// BenchmarkClosTwoJobsOracle adds fig7's oracle (beam 1, budget 1000 a job, screened on 20 epochs).
func BenchmarkClosTwoJobsOracle(b *testing.B) {
	benchCase(b, strings.Replace(closTwoJobs, `"oracle": {"off": true}`, `"oracle": {"beam": 1, "budget": 1000, "screen": 20, "refine": 8}`, 1))
}

func BenchmarkDecode(b *testing.B) {
	for b.Loop() {
		if _, err := Decode([]byte(fig1), nil); err != nil {
			b.Fatal(err)
		}
	}
}
