package tuner

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestClipOutlier(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []float64
		want []float64 // nil: unchanged
	}{
		{"too few to tell", []float64{1, 1, 9}, nil},
		{"all equal", []float64{2, 2, 2, 2, 2, 2}, nil},
		{"noise within the fence", []float64{1.00, 1.02, 0.97, 1.05, 0.99, 1.01}, nil},
		// the testbed's batch: one epoch at 0.94 s; median 0.555, MAD 0.01
		{"one slow epoch", []float64{0.55, 0.56, 0.94, 0.54, 0.55, 0.57}, []float64{0.55, 0.56, 0.555 + 5*1.4826*0.01, 0.54, 0.55, 0.57}},
		{"one fast epoch", []float64{1, 1, 1, 0.5, 1, 1}, []float64{1, 1, 1, 1 - 5*0.005, 1, 1}},
		// a shift half-way through is not an outlier: the others spread as far
		{"a shift", []float64{0.90, 0.91, 0.90, 1.30, 1.31, 1.29}, nil},
		// one value a sample at most: of two slow epochs one still counts
		{"two slow epochs", []float64{1, 1, 1, 1, 2, 2}, []float64{1, 1, 1, 1, 1 + 5*0.005, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.in)
			got := clipOutlier(in)
			if !slices.Equal(in, tc.in) {
				t.Fatalf("input modified: %v", in)
			}
			want := tc.want
			if want == nil {
				want = tc.in
			}
			if len(got) != len(want) {
				t.Fatalf("got %v, want %v", got, want)
			}
			for i := range got {
				if d := got[i] - want[i]; d > 1e-12 || d < -1e-12 {
					t.Fatalf("got %v, want %v", got, want)
				}
			}
		})
	}
}

// One slow epoch in the new pattern's batch must not revert a change the
// other five epochs show is a gain, nor one fast epoch keep one that is not.
func TestJudgeChangeIsNotFlippedByOneEpoch(t *testing.T) {
	before := []float64{1.00, 1.01, 0.99, 1.02, 0.98, 1.00}
	for _, tc := range []struct {
		name  string
		after []float64
		want  verdict
	}{
		{"a gain", []float64{0.90, 0.91, 0.89, 0.90, 0.92, 0.90}, keep},
		{"a gain and one slow epoch", []float64{0.90, 0.91, 0.89, 0.90, 0.92, 1.80}, keep},
		{"no gain", []float64{1.00, 0.99, 1.01, 1.00, 1.02, 0.98}, revert},
		{"no gain and one fast epoch", []float64{1.00, 0.99, 1.01, 1.00, 1.02, 0.40}, revert},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if v, gain := judgeChange(before, tc.after, 0.95, 0.02, 0, false); v != tc.want {
				t.Fatalf("verdict %v (gain %.3f), want %v", v, gain, tc.want)
			}
		})
	}
}

// A trial the ECMP spread let through and its prior (the pair history)
// predicted is kept when, after its last batch, it gains at least minGain
// without being significant; it is still reverted when it gains less, and
// a change of the model's own is reverted undecided.
func TestJudgeChangeUndecided(t *testing.T) {
	before := []float64{2.02, 2.04, 1.83, 2.90, 2.58, 2.75, 1.44, 1.84, 2.10, 2.31}
	gain := []float64{2.22, 2.23, 2.13, 1.99, 2.04, 2.06, 1.86, 2.05, 2.39, 2.34, 2.05, 2.16, 2.26, 1.84, 1.64, 2.97, 2.30, 1.84}
	loss := []float64{2.32, 2.33, 2.23, 2.09, 2.14, 2.16, 1.96, 2.15, 2.49, 2.44, 2.15, 2.26, 2.36, 1.94, 1.74, 3.07, 2.40, 1.94}
	for _, tc := range []struct {
		name          string
		after         []float64
		ext           int
		keepUndecided bool
		want          verdict
	}{
		{"undecided, more batches to come", gain, 0, true, extend},
		{"undecided after the last batch: a blind trial", gain, maxExtensions, true, keep},
		{"undecided after the last batch: the model's change", gain, maxExtensions, false, revert},
		{"slower: a blind trial", loss, maxExtensions, true, revert},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if v, g := judgeChange(before, tc.after, fabricConfidence, 0.01, tc.ext, tc.keepUndecided); v != tc.want {
				t.Fatalf("verdict %v (gain %.3f), want %v", v, g, tc.want)
			}
		})
	}
}

// The pattern's earlier epochs join its batch where the two agree, and
// are dropped where the network changed between them (a shift beyond
// their spread, or any shift in noise-free times).
func TestBaseline(t *testing.T) {
	batch := []float64{1.00, 1.03, 0.97, 1.02, 0.98, 1.01}
	for _, tc := range []struct {
		name string
		hist []float64
		want int // length of the baseline
	}{
		{"the same spread", []float64{0.99, 1.02, 1.01, 0.97, 1.03, 1.00, 0.98, 1.02, 1.00, 0.99, 1.01, 1.02}, 18},
		{"faster before (congestion began)", []float64{0.80, 0.82, 0.79, 0.81, 0.80, 0.83}, 6},
		{"slower before", []float64{1.20, 1.22, 1.19, 1.21, 1.20, 1.23}, 6},
		{"one epoch before", []float64{1.00}, 6},
		{"none", nil, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := baseline(both(tc.hist), both(batch))
			if len(got.e) != tc.want || len(got.c) != tc.want {
				t.Fatalf("baseline of %d and %d epochs, want %d", len(got.e), len(got.c), tc.want)
			}
			if !slices.Equal(got.e[len(got.e)-len(batch):], batch) {
				t.Fatalf("baseline %v does not end with the batch", got.e)
			}
		})
	}
	flat := []float64{2, 2, 2, 2}
	if got := baseline(both([]float64{2, 2, 2, 2}), both(flat)); len(got.e) != 8 {
		t.Errorf("noise-free, unchanged: %d epochs, want 8", len(got.e))
	}
	if got := baseline(both([]float64{1.9, 1.9, 1.9, 1.9}), both(flat)); len(got.e) != 4 {
		t.Errorf("noise-free, changed: %d epochs, want 4", len(got.e))
	}
}

// both is times whose critical paths are their collective times.
func both(xs []float64) times { return times{e: xs, c: xs} }

// A collective time jittered apart from its flows (lognormal 0.2 an epoch,
// the noise files' measurement noise) hides a 12% gain that the critical
// path of the FCTs (jitter 0.03) shows: the judge leans on the path and
// keeps the change at once; on the collective times alone it cannot yet.
// Where the two measures agree, or their ratio moved with the pattern, the
// collective times are judged as they are.
func TestJudgedLeansOnTheQuieterMeasure(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	draw := func(n int, true_, jitE, jitC float64) times {
		var s times
		for range n {
			s.e = append(s.e, true_*math.Exp(jitE*rng.NormFloat64()))
			s.c = append(s.c, 0.9*true_*math.Exp(jitC*rng.NormFloat64()))
		}
		return s
	}
	before, after := draw(12, 1, 0.2, 0.03), draw(6, 1/1.12, 0.2, 0.03)
	if v, _ := judgeChange(before.e, after.e, 0.95, 0.01, 0, false); v == keep {
		t.Fatal("the collective times alone keep the change: the case is not made")
	}
	b, a := judged(before, after)
	v, gain := judgeChange(b, a, 0.95, 0.01, 0, false)
	if v != keep || math.Abs(gain-0.12) > 0.03 {
		t.Errorf("mixed: verdict %v, gain %.3f, want keep and about 0.12", v, gain)
	}
	if b, a := judged(both(before.e), both(after.e)); !slices.Equal(b, before.e) || !slices.Equal(a, after.e) {
		t.Error("the same measure twice: not the collective times")
	}
	moved := after.clone()
	for k := range moved.c {
		moved.c[k] *= 0.6 // the path's share of the collective fell
	}
	if b, a := judged(before, moved); !slices.Equal(b, before.e) || !slices.Equal(a, moved.e) {
		t.Error("the ratio moved with the pattern: not the collective times")
	}
}
