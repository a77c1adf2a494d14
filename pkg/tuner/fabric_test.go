package tuner_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/react-torch/react-torch/internal/fixture"
	"github.com/react-torch/react-torch/pkg/critpath"
	"github.com/react-torch/react-torch/pkg/pattern"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/react-torch/react-torch/pkg/tuner"
)

// A fabric the rank links cannot express: ranks 0, 1, 4, 5 hang off one
// switch and 2, 3, 6, 7 off another, and a pair across them takes 1.6
// times as long, behind ECMP-like noise of 0.3 a flow. The link model sees
// the pairs stand out and no count, so the fallback tries the pair
// history's swaps; each trial is judged on the collective times, a trial
// that does not gain is reverted and backs the tries off, so the tries
// stay few (a kept one gained; the reverts are what trying costs) and
// the pattern that runs at the end is no slower than the initial one.
func TestFabricTrialsAreJudgedAndFew(t *testing.T) {
	if tried := fabricTrials(t, false); tried == 0 {
		t.Error("no fabric trial in any run: the fallback never fired")
	}
}

// On one host there is no fabric: the same pairs standing out (a busy
// CPU's) get no trial.
func TestOneHostHasNoFabricTrials(t *testing.T) {
	if tried := fabricTrials(t, true); tried != 0 {
		t.Errorf("%d fabric trials on one host", tried)
	}
}

func fabricTrials(t *testing.T, oneHost bool) int {
	cross := func(a, b int32) bool { return (a%4 < 2) != (b%4 < 2) }
	tried := 0
	for _, algo := range []string{"tree", "ring"} {
		p, _ := pattern.Generate(ten.AllReduce, algo, 8, -1)
		for seed := uint64(1); seed <= 3; seed++ {
			cfg := tuner.DefaultConfig()
			cfg.Seed, cfg.OneHost = seed, oneHost
			tu, err := tuner.New(cfg, p, msg)
			if err != nil {
				t.Fatal(err)
			}
			noise := fixture.Noise(0.3, seed)
			law := func(_ int, f ten.Flow) float64 {
				k := noise(0, f)
				if cross(f.Src, f.Dst) {
					k *= 1.6
				}
				return k
			}
			truth := func(q *ten.Pattern) float64 { return crossTime(q, cross, 1.6) }
			trials, changes, reverts := 0, 0, 0
			for e := 0; e < 150; e++ {
				q, _ := tu.Pattern(e)
				d, err := tu.Observe(e, fixture.FCTs(q, msg, law), 0)
				if err != nil {
					t.Fatal(err)
				}
				if d == nil {
					continue
				}
				if strings.Contains(d.Note, "fabric") {
					trials++
					tried++
				}
				if d.Pattern != nil {
					changes++
				}
				if d.Reverted {
					reverts++
				}
			}
			end, _ := tu.Pattern(150)
			t.Logf("%s seed %d: %d fabric trials, %d changes (%d reverts), time x%.3f", algo, seed, trials, changes, reverts, truth(end)/truth(p))
			// a trial that is kept gained; what the tries cost is their
			// reverts
			if reverts > 4 || changes > 10 {
				t.Errorf("%s seed %d: %d changes in 150 epochs, %d of them reverts", algo, seed, changes, reverts)
			}
			if truth(end) > 1.01*truth(p) {
				t.Errorf("%s seed %d: the pattern in force takes x%.3f the initial one's time", algo, seed, truth(end)/truth(p))
			}
		}
	}
	return tried
}

// Collisions in a fabric that no pair of the pattern shows: ranks of one
// parity share a pod, a flow between pods meets another on a core link in
// half the epochs (twice the time), and the ring's every neighbour is in
// the other pod, so every pair it carries is alike. Where the collective
// time follows the FCTs (the simulator's, a real fabric's), the fallback
// tries the pair history's swaps and keeps what gains; where only the
// timing spreads (the measured time steady, as under a clock's jitter), it
// tries nothing on the spread alone (a pair that stands out by chance
// still leads to a trial). Where it follows, every seed reaches the best
// ring the swaps reach (x0.762: it crosses the pods twice), and trials at
// that best pattern stay few: the reverts that cost no wait after a keep
// and one after the wait, 8 changes in seed 1 (with no wait after any
// revert 14, with four free after a keep 10). Before those two free
// reverts, seed 2 ended at x0.857.
func TestFabricSpreadTheCollectiveFollows(t *testing.T) {
	t.Parallel()
	cross := func(a, b int32) bool { return a%2 != b%2 }
	p, _ := pattern.Generate(ten.AllReduce, "ring", 8, -1)
	truth := func(q *ten.Pattern) float64 { return crossTime(q, cross, 1.5) }
	for _, follows := range []bool{true, false} {
		gained, tried := 0, 0
		for seed := uint64(1); seed <= 4; seed++ {
			cfg := tuner.DefaultConfig()
			cfg.Seed = seed
			tu, err := tuner.New(cfg, p, msg)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(seed, 3))
			law := func(_ int, f ten.Flow) float64 {
				if cross(f.Src, f.Dst) && rng.IntN(2) == 0 {
					return 2
				}
				return 1
			}
			changes := 0
			var times []float64 // the pattern in force's, epoch by epoch
			var changedAt []int // epochs of the changes
			for e := 0; e < 150; e++ {
				q, _ := tu.Pattern(e)
				times = append(times, truth(q))
				fct := fixture.FCTs(q, msg, law)
				elapsed, _ := critpath.New(q).Critical(fct)
				if !follows {
					elapsed = truth(q)
				}
				d, err := tu.Observe(e, fct, elapsed)
				if err != nil {
					t.Fatal(err)
				}
				if d != nil && strings.Contains(d.Note, "fabric") && len(d.Model.Pairs) == 0 {
					tried++ // on the spread alone
				}
				if d != nil && d.Pattern != nil {
					changes++
					changedAt = append(changedAt, e)
				}
			}
			end, _ := tu.Pattern(150)
			// the first epoch the pattern in force was as fast as the one
			// it ends with
			best := slices.IndexFunc(times, func(v float64) bool { return v <= truth(end)*(1+1e-9) })
			atBest := 0
			for _, e := range changedAt {
				if e >= best {
					atBest++
				}
			}
			t.Logf("collective follows %v, seed %d: %d changes, %d of them from epoch %d on, time x%.3f", follows, seed, changes, atBest, best, truth(end)/truth(p))
			if truth(end) > 1.01*truth(p) {
				t.Errorf("seed %d: the pattern in force takes x%.3f the initial one's time", seed, truth(end)/truth(p))
			}
			if truth(end) < 0.95*truth(p) {
				gained++
			}
			if follows && truth(end) > 0.77*truth(p) {
				t.Errorf("seed %d: the run ends at x%.3f of the initial time, x0.762 is reachable", seed, truth(end)/truth(p))
			}
			if atBest > 8 || changes > 16 {
				t.Errorf("seed %d: %d changes in 150 epochs, %d at the pattern it ends with", seed, changes, atBest)
			}
		}
		switch {
		case follows && (gained == 0 || tried == 0):
			t.Errorf("the collective follows the FCTs' spread: %d trials on it, %d runs gained", tried, gained)
		case !follows && tried > 0:
			t.Errorf("%d fabric trials on the spread alone where only the timing spread", tried)
		}
	}
}

// crossTime is q's collective time when the flows whose pair crosses take
// k times as long.
func crossTime(q *ten.Pattern, cross func(a, b int32) bool, k float64) float64 {
	v, _ := critpath.New(q).Critical(fixture.FCTs(q, msg, func(_ int, f ten.Flow) float64 {
		if cross(f.Src, f.Dst) {
			return k
		}
		return 1
	}))
	return v
}

// testbedQuiet runs a 4-rank tree tuner of seed (its noise drawn from
// stream) for epochs whose FCTs
// follow law (timing noise of 0.1 times what law adds) and whose collective
// time is their critical path, as on the 2-core testbed with nothing to
// fix. It fails the test on any fabric trial or change and hands every
// decision to each.
func testbedQuiet(t *testing.T, seed, stream uint64, epochs int, law func(e int, f ten.Flow, rng *rand.Rand) float64, each func(*tuner.Decision)) {
	t.Helper()
	cfg := tuner.DefaultConfig()
	cfg.Seed = seed
	tu, err := tuner.New(cfg, pattern.TreeAllReduce(4), msg)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, stream))
	for e := range epochs {
		q, _ := tu.Pattern(e)
		fct := fixture.FCTs(q, msg, func(_ int, f ten.Flow) float64 {
			return math.Exp(0.1*rng.NormFloat64()) * law(e, f, rng)
		})
		elapsed, _ := critpath.New(q).Critical(fct)
		d, err := tu.Observe(e, fct, elapsed)
		if err != nil {
			t.Fatal(err)
		}
		if d == nil {
			continue
		}
		each(d)
		if strings.Contains(d.Note, "fabric") || d.Pattern != nil {
			t.Errorf("seed %d, batch %d: %s", seed, d.Batch, d.Note)
		}
	}
}

// One slow, skewed epoch in a run's first batch (the 2-core testbed's
// first recorded epoch, 1.36 times the median) spreads the FCTs past the
// bar where the timing noise alone (0.1) stays below it: no trial on the
// spread, though the collective follows.
func TestFabricSpreadNotFromOneEpoch(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		testbedQuiet(t, seed, 11, 36, func(e int, _ ten.Flow, rng *rand.Rand) float64 {
			if e == 0 {
				return 1 + 1.5*rng.Float64()
			}
			return 1
		}, func(d *tuner.Decision) {
			if d.Batch == 0 && d.Model.Noise < 0.15 {
				t.Fatalf("seed %d: the first batch's noise %.3f is below the bar: the case is not made", seed, d.Model.Noise)
			}
		})
	}
}

// The 4-rank testbed with nothing to fix: pair 0->1 runs fast (x0.83,
// in every log) and 2->1 a little slow (x1.11), a host's doing, under
// timing noise of 0.1 that the collective follows. Neither is a fabric's
// slowness that a swap leaves behind: no trial.
func TestFabricLonePairsOfAHostAreNoFabric(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		stood := false
		testbedQuiet(t, seed, 13, 60, func(_ int, f ten.Flow, _ *rand.Rand) float64 {
			switch {
			case f.Src == 0 && f.Dst == 1:
				return 0.83
			case f.Src == 2 && f.Dst == 1:
				return 1.11
			}
			return 1
		}, func(d *tuner.Decision) { stood = stood || len(d.Model.Pairs) > 0 })
		if !stood {
			t.Errorf("seed %d: no pair stood out: the case is not made", seed)
		}
	}
}

// The fabric of TestFabricSpreadTheCollectiveFollows, its cross-pod
// flows twice as slow in one epoch of eight (the collective's true time
// varies by a tenth or so from epoch to epoch), seen through a jitter of
// 0.2 on every FCT and on every collective time (the simulator's
// overhead-noise): the correlation of the measured time with the critical
// path of the jittered FCTs is weak, and only several batches make it
// significant. Where the collective follows, 22 of 30 runs end on a
// faster ring (15 with the correlation over 18 epochs of one pattern at
// 0.5 and 99%); where only the jitter moves the measured time, the spread
// lets through a third as many trials, and no run ends slower.
func TestFabricSpreadThroughNoise(t *testing.T) {
	t.Parallel()
	cross := func(a, b int32) bool { return a%2 != b%2 }
	p, _ := pattern.Generate(ten.AllReduce, "ring", 8, -1)
	truth := func(q *ten.Pattern) float64 { return crossTime(q, cross, 1.125) }
	const seeds = 30
	tried := map[bool]int{}
	for _, follows := range []bool{true, false} {
		gained := 0
		for seed := uint64(1); seed <= seeds; seed++ {
			cfg := tuner.DefaultConfig()
			cfg.Seed = seed
			tu, err := tuner.New(cfg, p, msg)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(seed, 5))
			law := func(_ int, f ten.Flow) float64 {
				if cross(f.Src, f.Dst) && rng.IntN(8) == 0 {
					return 2
				}
				return 1
			}
			jitter := fixture.Noise(0.2, seed)
			for e := 0; e < 150; e++ {
				q, _ := tu.Pattern(e)
				fct := fixture.FCTs(q, msg, law)
				elapsed, _ := critpath.New(q).Critical(fct)
				if !follows {
					elapsed = truth(q)
				}
				for i := range fct {
					fct[i] *= jitter(e, ten.Flow{})
				}
				d, err := tu.Observe(e, fct, elapsed*jitter(e, ten.Flow{}))
				if err != nil {
					t.Fatal(err)
				}
				if d != nil && strings.Contains(d.Note, "fabric") && len(d.Model.Pairs) == 0 {
					tried[follows]++
				}
			}
			end, _ := tu.Pattern(150)
			if truth(end) > 1.01*truth(p) {
				t.Errorf("follows %v, seed %d: the pattern in force takes x%.3f the initial one's time", follows, seed, truth(end)/truth(p))
			}
			if truth(end) < 0.99*truth(p) {
				gained++
			}
		}
		t.Logf("collective follows %v: %d trials on the spread, %d of %d runs end faster", follows, tried[follows], gained, seeds)
		if follows && gained < 19 {
			t.Errorf("the collective follows through the jitter: %d of %d runs end faster", gained, seeds)
		}
	}
	if 2*tried[false] > tried[true] {
		t.Errorf("%d trials on the spread where only the jitter moves the collective time, %d where it follows", tried[false], tried[true])
	}
}
