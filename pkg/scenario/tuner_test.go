package scenario

import (
	"os"
	"path/filepath"
	"testing"
)

// The tuner in the loop on one case of a scenario file.

// runOne runs the first job of one cell (axes, one value each) of a file
// of examples/scenarios at seed, without the oracle, comparisons or a
// packet-level run.
func runOne(t *testing.T, file string, seed uint64, axes ...any) JobRun {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "examples", "scenarios", file))
	if err != nil {
		t.Fatal(err)
	}
	src := edit(t, string(data), func(m map[string]any) {
		m["oracle"] = map[string]any{"off": true}
		delete(m, "compare")
		delete(m, "packet")
		m["sweep"] = map[string]any{"seeds": 1, "axes": axes}
	})
	r, err := decode(t, src).WithSeed(seed).RunCase(Case{0, seed}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r.Jobs[0]
}

// A reverted change's margin must not hold back a different change once
// the refitted model explains the miss. fig5-rd, 4 congested pairs of 4
// flows, seed 7: the first change (predicted 1.12) ran 20% slower and was
// reverted; the refit predicts another at 1.08, and a margin as large as
// the first miss (0.12) held it back for the rest of the run: no gain at
// all, where the climbing oracle finds 8%.
func TestRevertedChangeDoesNotHoldBackTheNext(t *testing.T) {
	j := runOne(t, "fig5-rd.json", 7, map[string]any{"param": "pairs", "values": []any{4}}, map[string]any{"param": "p", "values": []any{4}})
	t.Logf("gain %+.1f%%, %d changes, %d kept, %d reverted", j.Improvement, j.Changes, j.Kept, j.Reverted)
	if j.Reverted == 0 {
		t.Fatal("no change was reverted: the case no longer shows a miss")
	}
	if j.Kept == 0 || j.Improvement < 3 {
		t.Errorf("after the revert: %d changes kept, gain %+.1f%%, want a kept change gaining at least 3%%", j.Kept, j.Improvement)
	}
}

// Where the FCTs spread as ECMP draws spread them, a rank link's count that
// no swap can leave behind must not keep the fabric fallback from trying.
// fig7b, REACT on job 1 (a recursive doubling AllGather beside a static
// ring job), seed 7: a ToR's congested uplinks read as 1.46 competing
// flows on one rank's uplink, which every step crosses alike; the link
// model's best change predicted 1.00-1.04 against 1.10-1.15 needed, and
// with the count barring the fallback REACT made no change in 100 epochs
// where the paper's loop gained 24%.
func TestFabricFallbackPastAFutileCount(t *testing.T) {
	j := runOne(t, "fig7b.json", 7, map[string]any{"param": "react_jobs", "values": []any{1}})
	t.Logf("gain %+.1f%%, %d changes, %d kept, %d reverted", j.Improvement, j.Changes, j.Kept, j.Reverted)
	if j.Kept == 0 || j.Improvement < 5 {
		t.Errorf("%d changes kept, gain %+.1f%%: want a kept change gaining at least 5%%", j.Kept, j.Improvement)
	}
}

// Until a fabric trial is kept, its revert must not make the fallback
// wait: the run's pattern is still one no trial improved, and the next
// blind trial is as likely to gain as the first. ecmp-fattree, an
// AllGather ring, seed 36: the first trial was reverted, and with the
// wait after it (twice the link model's) the run ended at +4.9%, where
// the paper's loop, which tries again at once, gained 48.8%.
func TestFabricRetriesUntilAKeep(t *testing.T) {
	j := runOne(t, "ecmp-fattree.json", 36, map[string]any{"param": "collective", "values": []any{"allgather/ring"}})
	t.Logf("gain %+.1f%%, %d changes, %d kept, %d reverted", j.Improvement, j.Changes, j.Kept, j.Reverted)
	if j.Reverted == 0 || j.Kept == 0 || j.Improvement < 25 {
		t.Errorf("%d reverted, %d kept, gain %+.1f%%: want a revert, then a kept change gaining at least 25%%", j.Reverted, j.Kept, j.Improvement)
	}
}

// Where the FCTs spread as ECMP draws spread them and the link model reads
// less than one competing flow on every rank link, its own change must not
// go before the fallback's: those counts are the fabric's collisions.
// ecmp-fattree, an AllReduce ring, seed 42: both loops kept the same first
// trial; the model then predicted 1.15 for a change that ran 2.5% slower,
// and the revert's wait and the trials after it ended the run at +1.6%,
// where the paper's loop, trying again at once, reached a pattern with no
// collisions (+63.1%).
func TestFabricCollisionsAreNotTheModelsCounts(t *testing.T) {
	j := runOne(t, "ecmp-fattree.json", 42, map[string]any{"param": "collective", "values": []any{"allreduce/ring"}})
	t.Logf("gain %+.1f%%, %d changes, %d kept, %d reverted", j.Improvement, j.Changes, j.Kept, j.Reverted)
	if j.Kept < 2 || j.Improvement < 40 {
		t.Errorf("%d kept, gain %+.1f%%: want two kept changes gaining at least 40%%", j.Kept, j.Improvement)
	}
}
