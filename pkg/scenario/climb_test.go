package scenario

import (
	"testing"

	"github.com/react-torch/react-torch/pkg/ten"
)

// climbCase is one congested 4-rank tree on the k=4 fat tree: small enough
// to check the climb's top by brute force.
const climbCase = `{
  "format": "react.scenario/v1", "name": "climb",
  "topology": {"kind": "fattree", "k": 4}, "epochs": 30, "measure_after": 10, "seed": 5,
  "jobs": [{"name": "tree4", "op": "allreduce", "algo": "tree", "ranks": 4, "bytes": 4e6, "placement": {"kind": "random"}}],
  "external": [{"p": 4, "random": 2}],
  "oracle": {"depth": 1, "climb": true}
}`

// TestClimbTop: the climb ends on a pattern that no valid transform
// improves (judged again here by brute force), at least as good as the
// depth-1 search's best, which is its first step.
func TestClimbTop(t *testing.T) {
	for seed := uint64(5); seed < 9; seed++ {
		s := decode(t, climbCase)
		in, err := s.instance(Case{0, seed})
		if err != nil {
			t.Fatal(err)
		}
		sim := in.newSim(true, true)
		base, err := in.static(sim, in.patterns)
		if err != nil {
			t.Fatal(err)
		}
		var prog progress
		orc, err := in.oracle(sim, []int{0}, base, &prog)
		if err != nil {
			t.Fatal(err)
		}
		clm, err := in.climb(sim, []int{0}, base, &prog)
		if err != nil {
			t.Fatal(err)
		}
		if !clm.exhaustive[0] {
			t.Fatalf("seed %d: the climb ran out of budget on a 4-rank job", seed)
		}
		got := clm.series[0].AlgBW
		if got < orc.series[0].AlgBW {
			t.Errorf("seed %d: climb %.4g B/s below the depth-1 search's %.4g", seed, got, orc.series[0].AlgBW)
		}
		if len(clm.swaps[0]) != clm.depth[0] {
			t.Errorf("seed %d: %d swaps, depth %d", seed, len(clm.swaps[0]), clm.depth[0])
		}
		top := clm.patterns[0]
		for _, m := range neighbours(top, map[string]bool{fingerprint(top): true}) {
			ser, err := in.static(sim, []*ten.Pattern{m.p})
			if err != nil {
				t.Fatal(err)
			}
			if ser[0].AlgBW > got {
				t.Errorf("seed %d: %v improves the climb's top (%d swaps: %v): %.4g > %.4g B/s", seed, m.swaps[0], clm.depth[0], clm.swaps[0], ser[0].AlgBW, got)
				break
			}
		}
		t.Logf("seed %d: baseline %.3f, depth-1 %.3f, climb %.3f GB/s after %d swaps, %d simulations beyond the depth search's",
			seed, base[0].AlgBW/1e9, orc.series[0].AlgBW/1e9, got/1e9, clm.depth[0], clm.evaluated[0])
	}
}

// TestClimbBudget: the climb reuses the depth search's judgements (its
// first level costs nothing) and stops at its budget of new simulations.
func TestClimbBudget(t *testing.T) {
	s := decode(t, edit(t, climbCase, func(m map[string]any) {
		m["oracle"] = map[string]any{"depth": 1, "climb": true, "climb_budget": 1, "restarts": 0}
	}))
	r, err := s.RunCase(s.Cases()[0], Options{})
	if err != nil {
		t.Fatal(err)
	}
	j := r.Jobs[0]
	if j.ClimbEvaluated != 1 || j.ClimbDone {
		t.Errorf("climb ran %d new simulations (done: %v), want 1 and cut by its budget", j.ClimbEvaluated, j.ClimbDone)
	}
	if j.OracleEvaluated < 10 {
		t.Fatalf("depth search judged only %d patterns", j.OracleEvaluated)
	}
	if j.Climb.AlgBW < j.Oracle.AlgBW {
		t.Errorf("climb %.4g B/s below the depth-1 search's %.4g with the same first level", j.Climb.AlgBW, j.Oracle.AlgBW)
	}
}

// TestBestOracle: Share and the best oracle's gain come from the better
// oracle, run by run, and the summary says how often that was the climb.
func TestBestOracle(t *testing.T) {
	s := decode(t, edit(t, climbCase, func(m map[string]any) {
		m["sweep"] = map[string]any{"seeds": 4}
	}))
	res, err := s.Run(Options{})
	if err != nil {
		t.Fatal(err)
	}
	climbs := 0
	for _, r := range res.Cells[0].Runs {
		j := r.Jobs[0]
		best, name := j.Oracle, OracleDepth
		if j.Climb.AlgBW > j.Oracle.AlgBW {
			best, name = j.Climb, OracleClimb
			climbs++
		}
		if j.BestOracle != name || *j.BestOracleImprovement != gain(j.Baseline.AlgBW, best.AlgBW) {
			t.Errorf("seed %d: best oracle %s %+.2f%%, want %s %+.2f%%", r.Seed, j.BestOracle, *j.BestOracleImprovement, name, gain(j.Baseline.AlgBW, best.AlgBW))
		}
		if sh := share(j.Baseline.AlgBW, j.React.AlgBW, best.AlgBW); (sh == nil) != (j.Share == nil) || (sh != nil && *sh != *j.Share) {
			t.Errorf("seed %d: share %v, want %v", r.Seed, j.Share, sh)
		}
	}
	js := res.Cells[0].Jobs[0]
	if js.ClimbBetter != climbs || js.BestOracleImprovement == nil || js.BestOracleImprovement.Mean < js.OracleImprovement.Mean {
		t.Errorf("summary: climb better in %d runs (want %d), best %+v, depth %+v", js.ClimbBetter, climbs, js.BestOracleImprovement, js.OracleImprovement)
	}
}

// TestClimbScreen: a screened climb judges its candidates on their first
// epochs and lets whole runs decide, so its pick is never worse than the
// baseline, and its whole-run gain is what its series says.
func TestClimbScreen(t *testing.T) {
	s := decode(t, edit(t, climbCase, func(m map[string]any) {
		m["oracle"] = map[string]any{"depth": 1, "climb": true, "climb_screen": 8, "refine": 3}
		m["sweep"] = map[string]any{"seeds": 3}
	}))
	res, err := s.Run(Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Cells[0].Runs {
		j := r.Jobs[0]
		if j.Climb.AlgBW < j.Baseline.AlgBW || *j.ClimbImprovement != gain(j.Baseline.AlgBW, j.Climb.AlgBW) {
			t.Errorf("seed %d: screened climb %.4g B/s (%+.2f%%), baseline %.4g", r.Seed, j.Climb.AlgBW, *j.ClimbImprovement, j.Baseline.AlgBW)
		}
		if j.ClimbEvaluated == 0 {
			t.Errorf("seed %d: the screened climb simulated nothing; the depth search's whole runs are no screen", r.Seed)
		}
	}
}

// TestClimbTwoJobs: with two tuned jobs the climb tunes one after the
// other, each with the other's choice in place, and both get its figures.
func TestClimbTwoJobs(t *testing.T) {
	s := decode(t, `{
	  "format": "react.scenario/v1", "name": "two",
	  "topology": {"kind": "fattree", "k": 4}, "epochs": 20, "measure_after": 5, "seed": 2,
	  "jobs": [
	    {"name": "a", "op": "allreduce", "algo": "tree", "ranks": 4, "bytes": 4e6, "placement": {"kind": "random", "disjoint": true}},
	    {"name": "b", "op": "allreduce", "algo": "ring", "ranks": 4, "bytes": 4e6, "placement": {"kind": "random", "disjoint": true}}
	  ],
	  "external": [{"p": 2, "random": 1}],
	  "oracle": {"depth": 1, "climb": true, "climb_budget": 300}
	}`)
	r, err := s.RunCase(s.Cases()[0], Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range r.Jobs {
		if j.Climb == nil || j.ClimbImprovement == nil || j.BestOracle == "" || len(j.Climb.Times) != 20 {
			t.Errorf("job %s: climb %v, best oracle %q", j.Name, j.Climb != nil, j.BestOracle)
		}
	}
}
