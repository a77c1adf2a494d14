package tuner_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/react-torch/react-torch/internal/fixture"
	"github.com/react-torch/react-torch/pkg/critpath"
	"github.com/react-torch/react-torch/pkg/links"
	"github.com/react-torch/react-torch/pkg/pattern"
	"github.com/react-torch/react-torch/pkg/semantics"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/react-torch/react-torch/pkg/tuner"
)

// drive runs epochs epochs of tu on fixture FCTs scaled by factor (which
// sees the epoch), and returns the decisions.
func drive(t *testing.T, tu *tuner.Tuner, epochs int, factor func(epoch, f int, fl ten.Flow) float64) []*tuner.Decision {
	t.Helper()
	var ds []*tuner.Decision
	for e := 0; e < epochs; e++ {
		p, _ := tu.Pattern(e)
		d, err := tu.Observe(e, fixture.FCTs(p, msg, func(i int, f ten.Flow) float64 { return factor(e, i, f) }), 0)
		if err != nil {
			t.Fatal(err)
		}
		if d != nil {
			ds = append(ds, d)
		}
	}
	return ds
}

// paperConfig is DefaultConfig with the paper's loop.
func paperConfig() tuner.Config {
	c := tuner.DefaultConfig()
	c.Model = tuner.ModelPaper
	return c
}

// models lists a config of each loop, for the tests both must pass.
func models() map[string]tuner.Config {
	return map[string]tuner.Config{tuner.ModelReact: tuner.DefaultConfig(), tuner.ModelPaper: paperConfig()}
}

var quietPatterns = []*ten.Pattern{pattern.TreeAllReduce(8), pattern.TreeAllReduce(13), pattern.RingAllReduce(6), pattern.RecursiveDoublingAllGather(8), pattern.HalvingDoublingAllReduce(6)}

// The paper's loop on the fixture's FCTs (its own degree model) under 5%
// noise: nothing detected, nothing changed.
func TestNoCongestionNoChangePaper(t *testing.T) {
	for _, p := range quietPatterns {
		for seed := uint64(1); seed <= 20; seed++ {
			cfg := paperConfig()
			cfg.Seed = seed
			tu, err := tuner.New(cfg, p, msg)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(seed, 99))
			for _, d := range drive(t, tu, 120, func(int, int, ten.Flow) float64 { return 1 + 0.05*rng.Float64() }) {
				if d.Pattern != nil || len(d.Congested) > 0 {
					t.Fatalf("%s %d ranks seed %d: batch %d changed the pattern or saw congestion (%d flows) under 5%% noise",
						p.Algo, p.Ranks, seed, d.Batch, len(d.Congested))
				}
			}
		}
	}
}

// The link model's loop on a network without congestion (FCTs of a fair
// replay, every flow under lognormal noise of 5% and 20%): it must never
// change the pattern.
func TestNoCongestionNoChangeReact(t *testing.T) {
	for _, p := range quietPatterns {
		for _, sigma := range []float64{0.05, 0.2} {
			for seed := uint64(1); seed <= 10; seed++ {
				cfg := tuner.DefaultConfig()
				cfg.Seed = seed
				tu, err := tuner.New(cfg, p, msg)
				if err != nil {
					t.Fatal(err)
				}
				net := quietNet(p.Ranks)
				noise := fixture.Noise(sigma, seed)
				ds, _ := driveNet(t, tu, 120, func(int) *links.Net { return net }, noise)
				for _, d := range ds {
					if d.Pattern != nil {
						t.Fatalf("%s %d ranks sigma %v seed %d: batch %d changed the pattern (%s)", p.Algo, p.Ranks, sigma, seed, d.Batch, d.Note)
					}
				}
			}
		}
	}
}

// Where the FCTs follow a law the link model cannot express (the fixture's
// degree model: a flow of degree 2 takes twice as long however its
// neighbours are timed), the model misreads them; the cost must stay
// bounded: at most three reverted tries in 120 epochs, and the collective
// time at the end no worse than the static pattern's.
func TestModelMisfitCostIsBounded(t *testing.T) {
	t.Parallel()
	for _, p := range quietPatterns {
		for seed := uint64(1); seed <= 10; seed++ {
			cfg := tuner.DefaultConfig()
			cfg.Seed = seed
			tu, err := tuner.New(cfg, p, msg)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(seed, 99))
			var times []float64
			tries := 0
			for e := 0; e < 120; e++ {
				cur, _ := tu.Pattern(e)
				fct := fixture.FCTs(cur, msg, func(int, ten.Flow) float64 { return 1 + 0.05*rng.Float64() })
				mk, _ := critpath.New(cur).Critical(fct)
				times = append(times, mk)
				d, err := tu.Observe(e, fct, mk)
				if err != nil {
					t.Fatal(err)
				}
				if d != nil && d.Reverted {
					tries++
				}
			}
			static, last := meanOf(times[:5]), meanOf(times[90:])
			if tries > 3 || last > 1.01*static {
				t.Errorf("%s %d ranks seed %d: %d reverted tries, last 30 epochs %.4g against static %.4g", p.Algo, p.Ranks, seed, tries, last, static)
			}
		}
	}
}

// TestRandomNeverUnsafeAndDeterministic feeds random patterns random FCTs:
// every emitted pattern passes the checker, no emitted change is a no-op,
// and the same seed makes the same decisions.
func TestRandomNeverUnsafeAndDeterministic(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 7))
	for iter := 0; iter < 40; iter++ {
		op := []ten.Op{ten.AllReduce, ten.AllGather, ten.ReduceScatter, ten.Broadcast, ten.Reduce}[rng.IntN(5)]
		algos := pattern.Algos(op)
		algo := algos[rng.IntN(len(algos))]
		n := 2 + rng.IntN(14)
		root := -1
		if op.Rooted() {
			root = rng.IntN(n)
		}
		p, err := pattern.Generate(op, algo, n, root)
		if err != nil {
			t.Fatal(err)
		}
		seed := rng.Uint64()
		run := func() []*tuner.Decision {
			cfg := tuner.DefaultConfig()
			if iter%2 == 1 {
				cfg = paperConfig()
			}
			cfg.Seed = seed
			tu, err := tuner.New(cfg, p, msg)
			if err != nil {
				t.Fatal(err)
			}
			frng := rand.New(rand.NewPCG(seed, 3))
			hot := int32(frng.IntN(n))
			return drive(t, tu, 60, func(e, i int, f ten.Flow) float64 {
				x := 1 + frng.Float64()
				if f.Dst == hot || (f.Src == hot && e%3 == 0) {
					x *= 3
				}
				return x
			})
		}
		a, b := run(), run()
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%s/%s n=%d: the same seed gave different decisions", op, algo, n)
		}
		prev := p
		for _, d := range a {
			if d.Pattern == nil {
				continue
			}
			if err := semantics.Check(d.Pattern); err != nil {
				t.Fatalf("%s/%s n=%d batch %d: emitted pattern fails the check: %v", op, algo, n, d.Batch, err)
			}
			if reflect.DeepEqual(d.Pattern.Flows, prev.Flows) {
				t.Fatalf("%s/%s n=%d batch %d: emitted a no-op change", op, algo, n, d.Batch)
			}
			prev = d.Pattern
		}
	}
}

// The paper's loop; TestReactRevertsAndBacksOff is the link model's.
func TestRevertWhenObservedIsNoBetter(t *testing.T) {
	p := pattern.TreeAllReduce(8)
	tu, err := tuner.New(paperConfig(), p, msg)
	if err != nil {
		t.Fatal(err)
	}
	// Rank 3's downlink is slow whatever pattern runs, and every pattern
	// but the initial one is slower still: a change must be reverted.
	ds := drive(t, tu, 40, func(e, i int, f ten.Flow) float64 {
		cur, _ := tu.Pattern(e)
		x := 1.0
		if f.Dst == 3 {
			x = 3
		}
		if !reflect.DeepEqual(cur.Flows, p.Flows) {
			x *= 2
		}
		return x
	})
	emitted, reverted := false, false
	for _, d := range ds {
		emitted = emitted || (d.Pattern != nil && !d.Reverted)
		if d.Reverted {
			reverted = true
			if !reflect.DeepEqual(d.Pattern.Flows, p.Flows) {
				t.Fatal("revert did not restore the previous pattern")
			}
		}
	}
	if !emitted || !reverted {
		t.Fatalf("emitted %v reverted %v, want both", emitted, reverted)
	}
}

func TestConfigAndInputErrors(t *testing.T) {
	bad := tuner.DefaultConfig()
	bad.B = 0
	if _, err := tuner.New(bad, pattern.RingAllReduce(4), msg); err == nil {
		t.Error("B = 0 accepted")
	}
	broken := pattern.RingAllReduce(4)
	broken.Flows = broken.Flows[1:]
	if _, err := tuner.New(tuner.DefaultConfig(), broken, msg); err == nil {
		t.Error("a pattern failing the check was accepted")
	}
	tu, err := tuner.New(tuner.DefaultConfig(), pattern.RingAllReduce(4), msg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tu.Observe(0, []float64{1}, 0); err == nil {
		t.Error("a batch of the wrong length was accepted")
	}
	fct := make([]float64, len(pattern.RingAllReduce(4).Flows))
	if _, err := tu.Observe(0, fct, 0); err == nil {
		t.Error("zero FCTs were accepted")
	}
}

func BenchmarkDecision(b *testing.B) {
	for _, m := range []string{tuner.ModelReact, tuner.ModelPaper} {
		for _, n := range []int{8, 64, 1024} {
			benchDecision(b, m, n, false)
		}
	}
	for _, n := range []int{8, 64, 1024} {
		benchDecision(b, tuner.ModelReact, n, true)
	}
}

// benchDecision times New plus one batch ending in a decision, on FCTs of
// a fair replay with rank 3's downlink shared with two other flows and 1%
// noise (the model then finds one congested link, as in a real job); slow:
// the downlink at a third of the line rate instead (the fit then reads it
// again as slow).
func benchDecision(b *testing.B, model string, n int, slow bool) {
	p := pattern.TreeAllReduce(n)
	name := fmt.Sprintf("%s/tree-%d", model, n)
	if slow {
		name += "-slow"
	}
	b.Run(name, func(b *testing.B) {
		cfg := tuner.DefaultConfig()
		cfg.Model = model
		net := quietNet(n)
		net.Down[3] = 2
		if slow {
			net.Down[3] = 0
			net.Slow = make([]float64, 2*n)
			net.Slow[n+3] = 2
		}
		var rp links.Replayer
		base := make([]float64, len(p.Flows))
		mk := rp.Replay(p, critpath.New(p), msg, net, nil, base)
		noise := fixture.Noise(0.01, 1)
		batch := make([][]float64, cfg.B)
		for e := range batch {
			batch[e] = make([]float64, len(base))
			for i, v := range base {
				batch[e][i] = v * noise(i, p.Flows[i])
			}
		}
		for b.Loop() {
			tu, _ := tuner.New(cfg, p, msg)
			for e, fct := range batch {
				tu.Pattern(e)
				if _, err := tu.Observe(e, fct, mk); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// noisyFCTs is an epoch of FCTs on a noisy fabric: each flow's times a
// uniform factor of 1-2, rank 3's receives and every third epoch its
// sends x3 (BenchmarkNoisyRun, TestNoisyFitsStayWithinTheirBudget).
func noisyFCTs(q *ten.Pattern, epoch int, rng *rand.Rand) []float64 {
	return fixture.FCTs(q, msg, func(_ int, f ten.Flow) float64 {
		x := 1 + rng.Float64()
		if f.Dst == 3 || (f.Src == 3 && epoch%3 == 0) {
			x *= 3
		}
		return x
	})
}

func noisyRNG() *rand.Rand { return rand.New(rand.NewPCG(5, 3)) }

// BenchmarkNoisyRun times a 60-epoch run whose FCTs spread by a factor of
// up to two (a shared fabric's, where the fit stays poor and reads the
// loaded ranks again as slow) and whose rank 3 is slowed x3, per batch:
// the decisions a job meets most, at the patterns with the most flows
// running at once.
func BenchmarkNoisyRun(b *testing.B) {
	for _, c := range []struct {
		algo string
		n    int
	}{{"ring", 8}, {"halving_doubling", 8}, {"ring", 16}, {"halving_doubling", 16}} {
		p, err := pattern.Generate(ten.AllReduce, c.algo, c.n, -1)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("%s-%d", c.algo, c.n), func(b *testing.B) {
			batches := 0
			for b.Loop() {
				tu, _ := tuner.New(tuner.DefaultConfig(), p, msg)
				rng := noisyRNG()
				for e := range 60 {
					q, _ := tu.Pattern(e)
					d, err := tu.Observe(e, noisyFCTs(q, e, rng), 0)
					if err != nil {
						b.Fatal(err)
					}
					if d != nil {
						batches++
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(max(batches, 1)), "ms/decision")
		})
	}
}

// BenchmarkSteadyBatch times one batch of a tuner whose history is full
// (H epochs) on a quiet network with 1% noise: the cost of every batch of
// a job with nothing to fix (the fit stands; the pairs are measured
// again).
func BenchmarkSteadyBatch(b *testing.B) {
	for _, n := range []int{8, 64, 1024} {
		p := pattern.TreeAllReduce(n)
		b.Run(fmt.Sprintf("tree-%d", n), func(b *testing.B) {
			cfg := tuner.DefaultConfig()
			var rp links.Replayer
			base := make([]float64, len(p.Flows))
			mk := rp.Replay(p, critpath.New(p), msg, quietNet(n), nil, base)
			noise := fixture.Noise(0.01, 1)
			fct := make([]float64, len(base))
			tu, _ := tuner.New(cfg, p, msg)
			e := 0
			feed := func(epochs int) {
				for range epochs {
					for i, v := range base {
						fct[i] = v * noise(i, p.Flows[i])
					}
					tu.Pattern(e)
					if _, err := tu.Observe(e, fct, mk); err != nil {
						b.Fatal(err)
					}
					e++
				}
			}
			feed(cfg.H)
			for b.Loop() {
				feed(cfg.B)
			}
		})
	}
}

// TestRevertTriesNewTransforms: after a revert REACT "tries new transforms"
// on the older pattern (§5.4.2). When every change is slower, each
// exploration from the initial pattern must start from a swap that no
// reverted change took on its way, so no first accepted swap repeats.
func TestRevertTriesNewTransforms(t *testing.T) {
	for _, tc := range []struct {
		p   *ten.Pattern
		hot int32
	}{
		{pattern.TreeAllReduce(8), 3},
		{pattern.TreeAllReduce(16), 5},
		{pattern.RecursiveDoublingAllGather(8), 2},
	} {
		for seed := uint64(1); seed <= 5; seed++ {
			cfg := paperConfig()
			cfg.Seed = seed
			tu, err := tuner.New(cfg, tc.p, msg)
			if err != nil {
				t.Fatal(err)
			}
			ds := drive(t, tu, 200, func(e, i int, f ten.Flow) float64 {
				cur, _ := tu.Pattern(e)
				x := 1.0
				if f.Dst == tc.hot {
					x = 3
				}
				if !reflect.DeepEqual(cur.Flows, tc.p.Flows) {
					x *= 2
				}
				return x
			})
			seen := map[string]int{}
			changes := 0
			for _, d := range ds {
				if d.Pattern == nil || d.Reverted {
					continue
				}
				changes++
				for _, tr := range d.Trials {
					if tr.Accepted {
						key := fmt.Sprint(tr.Swap)
						if b, ok := seen[key]; ok {
							t.Fatalf("%s %d ranks seed %d: batch %d starts again with %v, reverted after batch %d",
								tc.p.Algo, tc.p.Ranks, seed, d.Batch, tr.Swap, b)
						}
						seen[key] = d.Batch
						break
					}
				}
			}
			if changes < 2 {
				t.Fatalf("%s %d ranks seed %d: %d changes, want at least 2 to compare", tc.p.Algo, tc.p.Ranks, seed, changes)
			}
		}
	}
}

// A runtime that switches later than a decision's Effective says so with
// Ran: the switch waits, the epochs in between are the old pattern's, and
// Ran changes nothing otherwise.
func TestRanDefersASwitch(t *testing.T) {
	p := pattern.TreeAllReduce(8)
	tu, err := tuner.New(paperConfig(), p, msg)
	if err != nil {
		t.Fatal(err)
	}
	slow := func(i int, f ten.Flow) float64 {
		if f.Dst == 3 {
			return 3
		}
		return 1
	}
	var d *tuner.Decision
	e := 0
	for ; d == nil || d.Pattern == nil; e++ {
		if e > 60 {
			t.Fatal("no switch decided under a slow rank")
		}
		if tu.Ran(e, 0) {
			t.Fatalf("epoch %d: deferred with no switch due", e)
		}
		cur, _ := tu.Pattern(e)
		if d, err = tu.Observe(e, fixture.FCTs(cur, msg, slow), 0); err != nil {
			t.Fatal(err)
		}
	}
	for ; e < d.Effective; e++ { // lag epochs: nothing to defer yet
		if tu.Ran(e, 0) {
			t.Fatalf("epoch %d before the switch epoch %d deferred it", e, d.Effective)
		}
		cur, _ := tu.Pattern(e)
		if _, err := tu.Observe(e, fixture.FCTs(cur, msg, slow), 0); err != nil {
			t.Fatal(err)
		}
	}
	for late := e + 3; e < late; e++ { // the runtime still runs version 0
		if tu.Ran(e, 1) || !tu.Ran(e, 0) {
			t.Fatalf("epoch %d: the new version deferred, or the old one did not", e)
		}
		cur, v := tu.Pattern(e)
		if v != 0 {
			t.Fatalf("epoch %d runs version %d after a deferral", e, v)
		}
		if _, err := tu.Observe(e, fixture.FCTs(cur, msg, slow), 0); err != nil {
			t.Fatal(err)
		}
	}
	if tu.Ran(e, 1) {
		t.Fatal("the new version's first epoch deferred the switch")
	}
	if cur, v := tu.Pattern(e); v != 1 || !reflect.DeepEqual(cur.Flows, d.Pattern.Flows) {
		t.Fatalf("epoch %d runs version %d, want the decided version 1", e, v)
	}
	if tu.Ran(e+1, 1) || tu.Ran(e+1, 0) {
		t.Fatal("Ran deferred with no switch pending")
	}
}
