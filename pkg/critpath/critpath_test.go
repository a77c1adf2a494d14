package critpath

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/react-torch/react-torch/internal/fixture"
	"github.com/react-torch/react-torch/pkg/ten"
)

// fl is a flow literal: chunk, step, src, dst.
func fl(c, t, s, d int32) ten.Flow {
	return ten.Flow{Chunk: c, Step: t, Src: s, Dst: d, Kind: ten.KindReduce, Fraction: 1}
}

func pat(ranks int, flows ...ten.Flow) *ten.Pattern {
	return &ten.Pattern{Op: ten.AllReduce, Algo: "test", Ranks: ranks, Root: -1, Flows: flows}
}

func TestCritical(t *testing.T) {
	tests := []struct {
		name      string
		p         *ten.Pattern
		w         []float64
		wantPreds [][]int32
		wantLen   float64
		wantPath  []int32
	}{
		{
			name:      "chain",
			p:         pat(4, fl(0, 1, 0, 1), fl(0, 2, 1, 2), fl(0, 3, 2, 3)),
			w:         []float64{1, 2, 3},
			wantPreds: [][]int32{{}, {0}, {1}},
			wantLen:   6, wantPath: []int32{0, 1, 2},
		},
		{
			// Rank 1 fans out to 2 and 3, both send to 0, which sends on.
			name:      "diamond",
			p:         pat(4, fl(0, 1, 0, 1), fl(0, 2, 1, 2), fl(0, 2, 1, 3), fl(0, 3, 2, 0), fl(0, 3, 3, 0), fl(0, 4, 0, 1)),
			w:         []float64{1, 1, 5, 1, 1, 1},
			wantPreds: [][]int32{{}, {0}, {0}, {1}, {2}, {3, 4}},
			wantLen:   8, wantPath: []int32{0, 2, 4, 5},
		},
		{
			// Same ranks in both chunks: chunk 1's flow 1 must not gate
			// chunk 0's flow 2 (together they would weigh 7).
			name:      "two independent chunks",
			p:         pat(4, fl(0, 1, 0, 1), fl(1, 1, 0, 1), fl(0, 2, 1, 2), fl(1, 2, 1, 3)),
			w:         []float64{1, 5, 2, 1},
			wantPreds: [][]int32{{}, {}, {0}, {1}},
			wantLen:   6, wantPath: []int32{1, 3},
		},
		{
			// Rank 1 received at step 1; it still gates a send at step 3.
			name:      "gap between steps",
			p:         pat(4, fl(0, 1, 0, 1), fl(0, 2, 2, 3), fl(0, 3, 1, 0), fl(0, 3, 3, 2)),
			w:         []float64{4, 1, 1, 1},
			wantPreds: [][]int32{{}, {}, {0}, {1}},
			wantLen:   5, wantPath: []int32{0, 2},
		},
		{
			// Same-step flows never depend on each other.
			name:      "same step independent",
			p:         pat(3, fl(0, 1, 0, 1), fl(0, 1, 1, 2), fl(0, 1, 2, 0)),
			w:         []float64{1, 3, 2},
			wantPreds: [][]int32{{}, {}, {}},
			wantLen:   3, wantPath: []int32{1},
		},
		{
			name:      "tie between chunks goes to lowest end",
			p:         pat(4, fl(1, 1, 2, 3), fl(1, 2, 3, 0), fl(0, 1, 0, 1), fl(0, 2, 1, 2)),
			w:         []float64{1, 1, 1, 1},
			wantPreds: [][]int32{{}, {0}, {}, {2}},
			wantLen:   2, wantPath: []int32{0, 1},
		},
		{
			name:      "tie inside diamond goes to lowest pred",
			p:         pat(4, fl(0, 1, 0, 1), fl(0, 2, 1, 3), fl(0, 2, 1, 2), fl(0, 3, 3, 0), fl(0, 3, 2, 0), fl(0, 4, 0, 1)),
			w:         []float64{1, 1, 1, 1, 1, 1},
			wantPreds: [][]int32{{}, {0}, {0}, {1}, {2}, {3, 4}},
			wantLen:   4, wantPath: []int32{0, 1, 3, 5},
		},
		{
			// Preds come in step order, not flow index order.
			name:      "preds in step order",
			p:         pat(3, fl(0, 2, 2, 0), fl(0, 1, 1, 0), fl(0, 3, 0, 1)),
			w:         []float64{1, 1, 1},
			wantPreds: [][]int32{{}, {}, {1, 0}},
			wantLen:   2, wantPath: []int32{0, 2},
		},
		{
			name: "tree4 uniform",
			p:    fixture.Tree4(),
			w:    []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
			wantPreds: [][]int32{
				{}, {0}, {}, {1, 2}, {1, 2}, {0, 3},
				{}, {6}, {}, {7, 8}, {7, 8}, {6, 9},
			},
			wantLen: 4, wantPath: []int32{0, 1, 3, 5},
		},
		{
			// Rank 2's reduce in chunk 1 is slow: the chunk 1 chain
			// through it is critical.
			name: "tree4 slow chunk 1",
			p:    fixture.Tree4(),
			w:    []float64{1, 1, 1, 1, 1, 1, 1, 3, 1, 1, 1, 1},
			wantPreds: [][]int32{
				{}, {0}, {}, {1, 2}, {1, 2}, {0, 3},
				{}, {6}, {}, {7, 8}, {7, 8}, {6, 9},
			},
			wantLen: 6, wantPath: []int32{6, 7, 9, 11},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.p.Validate(); err != nil {
				t.Fatal(err)
			}
			d := New(tt.p)
			for f, want := range tt.wantPreds {
				if got := d.Preds(f); !slices.Equal(got, want) {
					t.Errorf("Preds(%d) = %v, want %v", f, got, want)
				}
			}
			gotLen, gotPath := d.Critical(tt.w)
			if gotLen != tt.wantLen || !slices.Equal(gotPath, tt.wantPath) {
				t.Errorf("Critical = %v %v, want %v %v", gotLen, gotPath, tt.wantLen, tt.wantPath)
			}
			if pl := PathLength(gotPath, tt.w); pl != gotLen {
				t.Errorf("PathLength(path) = %v, want %v", pl, gotLen)
			}
			finish := make([]float64, d.Len())
			if mk := d.Finish(tt.w, finish); mk != tt.wantLen {
				t.Errorf("Finish makespan = %v, want %v", mk, tt.wantLen)
			}
		})
	}
}

func TestRingIsChainPerChunk(t *testing.T) {
	const n = 5
	p := fixture.RingAllReduce(n)
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	d := New(p)
	w := make([]float64, len(p.Flows))
	for i := range w {
		w[i] = 1
	}
	w[3] = 2 // flow 3: step 1, rank 3, chunk 2
	l, path := d.Critical(w)
	if l != 2*(n-1)+1 || len(path) != 2*(n-1) {
		t.Fatalf("Critical = %v over %d flows, want %d over %d", l, len(path), 2*(n-1)+1, 2*(n-1))
	}
	for i, f := range path {
		if p.Flows[f].Chunk != 2 || p.Flows[f].Step != int32(i+1) {
			t.Fatalf("path[%d] = flow %d %+v, want chunk 2 step %d", i, f, p.Flows[f], i+1)
		}
	}
}

func TestFinishEmptyAndLengthPanics(t *testing.T) {
	d := New(pat(2))
	if mk := d.Finish(nil, nil); mk != 0 {
		t.Errorf("empty Finish = %v", mk)
	}
	if l, path := d.Critical(nil); l != 0 || len(path) != 0 {
		t.Errorf("empty Critical = %v %v", l, path)
	}
	defer func() {
		if recover() == nil {
			t.Error("Finish with short w did not panic")
		}
	}()
	New(pat(2, fl(0, 1, 0, 1))).Finish(nil, make([]float64, 1))
}

func TestCriticalAppendReusesBuffer(t *testing.T) {
	p := fixture.Tree4()
	d := New(p)
	w := make([]float64, len(p.Flows))
	for i := range w {
		w[i] = float64(i % 3)
	}
	buf := make([]int32, 0, 16)
	allocs := testing.AllocsPerRun(50, func() {
		_, buf = d.CriticalAppend(buf[:0], w)
	})
	if allocs != 0 {
		t.Errorf("CriticalAppend allocates %v times per call", allocs)
	}
	_, want := d.Critical(w)
	if !slices.Equal(buf, want) {
		t.Errorf("CriticalAppend path %v, Critical path %v", buf, want)
	}
	prefix := []int32{99}
	_, got := d.CriticalAppend(prefix, w)
	if got[0] != 99 || !slices.Equal(got[1:], want) {
		t.Errorf("CriticalAppend did not append: %v", got)
	}
}

// bruteCritical enumerates every path that starts at a flow without preds
// (every prefix counts as a path) and returns the longest, ties going to the
// least path compared last flow first.
func bruteCritical(p *ten.Pattern, preds [][]int, w []float64) (float64, []int32) {
	nf := len(p.Flows)
	succ := make([][]int, nf)
	for f, ps := range preds {
		for _, g := range ps {
			succ[g] = append(succ[g], f)
		}
	}
	less := func(a, b []int32) bool { // reversed lexicographic order
		for i, j := len(a)-1, len(b)-1; i >= 0 && j >= 0; i, j = i-1, j-1 {
			if a[i] != b[j] {
				return a[i] < b[j]
			}
		}
		return len(a) < len(b)
	}
	bestLen, best := -1.0, []int32(nil)
	var walk func(f int, path []int32, sum float64)
	walk = func(f int, path []int32, sum float64) {
		path = append(path, int32(f))
		sum += w[f]
		if sum > bestLen || (sum == bestLen && less(path, best)) {
			bestLen, best = sum, slices.Clone(path)
		}
		for _, g := range succ[f] {
			walk(g, path, sum)
		}
	}
	for f := 0; f < nf; f++ {
		if len(preds[f]) == 0 {
			walk(f, nil, 0)
		}
	}
	return bestLen, best
}

func TestCriticalAgainstBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 500; trial++ {
		ranks := 2 + r.IntN(4)
		chunks := 1 + r.IntN(3)
		steps := 1 + r.IntN(5)
		p := pat(ranks)
		for i, nf := 0, 1+r.IntN(14); i < nf; i++ {
			s := r.IntN(ranks)
			d := (s + 1 + r.IntN(ranks-1)) % ranks
			p.Flows = append(p.Flows, fl(int32(r.IntN(chunks)), int32(1+r.IntN(steps)), int32(s), int32(d)))
		}
		// Sometimes spread chunk or step numbers out, to take New's
		// paths for sparse numbering (a map of heads, a comparison sort).
		chunkScale, stepScale := int32(1), int32(1)
		switch trial % 4 {
		case 1:
			chunkScale = 100003
		case 2:
			stepScale = 1000
		}
		for i := range p.Flows {
			p.Flows[i].Chunk *= chunkScale
			p.Flows[i].Step *= stepScale
		}
		w := make([]float64, len(p.Flows))
		for i := range w {
			w[i] = float64(r.IntN(4)) // small integers: exact sums, many ties, some zeros
		}
		// The dependency rule, straight from its definition.
		preds := make([][]int, len(p.Flows))
		for f, ff := range p.Flows {
			for g, gg := range p.Flows {
				if gg.Chunk == ff.Chunk && gg.Dst == ff.Src && gg.Step < ff.Step {
					preds[f] = append(preds[f], g)
				}
			}
		}
		d := New(p)
		for f := range p.Flows {
			got := d.Preds(f)
			gotInts := make([]int, len(got))
			for i, g := range got {
				gotInts[i] = int(g)
			}
			slices.Sort(gotInts)
			if !slices.Equal(gotInts, preds[f]) {
				t.Fatalf("trial %d: Preds(%d) = %v, want %v; flows %v", trial, f, got, preds[f], p.Flows)
			}
			for i := 1; i < len(got); i++ {
				a, b := p.Flows[got[i-1]], p.Flows[got[i]]
				if a.Step > b.Step || (a.Step == b.Step && got[i-1] > got[i]) {
					t.Fatalf("trial %d: Preds(%d) = %v not in step order", trial, f, got)
				}
			}
		}
		wantLen, wantPath := bruteCritical(p, preds, w)
		gotLen, gotPath := d.Critical(w)
		if gotLen != wantLen || !slices.Equal(gotPath, wantPath) {
			t.Fatalf("trial %d: Critical = %v %v, brute force %v %v; flows %v w %v", trial, gotLen, gotPath, wantLen, wantPath, p.Flows, w)
		}
		if mk := d.Finish(w, make([]float64, len(w))); mk != wantLen {
			t.Fatalf("trial %d: Finish makespan %v, want %v", trial, mk, wantLen)
		}
	}
}

func benchPatterns() []struct {
	name string
	p    *ten.Pattern
} {
	return []struct {
		name string
		p    *ten.Pattern
	}{
		{"ring1024", fixture.RingAllReduce(1024)},
		{"tree1024", fixture.HeapTreeAllReduce(1024)},
	}
}

func BenchmarkNew(b *testing.B) {
	for _, bp := range benchPatterns() {
		b.Run(bp.name, func(b *testing.B) {
			b.ReportMetric(float64(len(bp.p.Flows)), "flows")
			for b.Loop() {
				New(bp.p)
			}
		})
	}
}

func BenchmarkFinish(b *testing.B) {
	for _, bp := range benchPatterns() {
		b.Run(bp.name, func(b *testing.B) {
			d := New(bp.p)
			w := make([]float64, d.Len())
			for i := range w {
				w[i] = 1e-3
			}
			finish := make([]float64, d.Len())
			for b.Loop() {
				d.Finish(w, finish)
			}
		})
	}
}

func BenchmarkCritical(b *testing.B) {
	for _, bp := range benchPatterns() {
		b.Run(bp.name, func(b *testing.B) {
			d := New(bp.p)
			r := rand.New(rand.NewPCG(3, 4))
			w := make([]float64, d.Len())
			for i := range w {
				w[i] = 1e-3 * (1 + r.Float64())
			}
			buf := make([]int32, 0, 4096)
			d.CriticalAppend(buf, w) // allocate the DAG's scratch outside the loop
			for b.Loop() {
				_, buf = d.CriticalAppend(buf[:0], w)
			}
		})
	}
}

// Durations inverts Finish: the arrivals Finish gives for positive
// durations give those durations back, on every pattern the generators
// make; an arrival before the latest input's becomes the floor.
func TestDurationsInvertsFinish(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i, p := range []*ten.Pattern{fixture.Tree4(), fixture.HeapTreeAllReduce(7), fixture.RingAllReduce(5)} {
		d := New(p)
		w := make([]float64, len(p.Flows))
		for i := range w {
			w[i] = 0.5 + float64(r.IntN(8)) // exact sums
		}
		fin := make([]float64, len(w))
		d.Finish(w, fin)
		got := make([]float64, len(w))
		d.Durations(p, fin, nil, got)
		if !slices.Equal(got, w) {
			t.Errorf("pattern %d: durations of Finish's arrivals differ from the weights", i)
		}
	}
	p := pat(3, fl(0, 1, 0, 1), fl(0, 2, 1, 2))
	got := make([]float64, 2)
	New(p).Durations(p, []float64{2, 1.5}, nil, got)
	if got[0] != 2 || got[1] != minDuration {
		t.Errorf("durations %v, want [2 %g]", got, minDuration)
	}
}

// With entries on a shared clock, a flow's arrival is read on that clock
// and the flow starts no earlier than both its ends entered: a late
// receiver's wait is not the flow's, nor is a late sender's.
func TestDurationsEntries(t *testing.T) {
	// step 1: 0->1 (chunk 0) and 2->1 (chunk 1); step 2: 1->2 (chunk 0)
	p := pat(3, fl(0, 1, 0, 1), fl(1, 1, 2, 1), fl(0, 2, 1, 2))
	for _, c := range []struct {
		name    string
		arrival []float64
		entry   []float64
		want    []float64
	}{
		{"entered together", []float64{1, 2, 4}, []float64{0, 0, 0}, []float64{1, 2, 3}},
		{"no entries", []float64{1, 2, 4}, nil, []float64{1, 2, 3}},
		// rank 1 entered 0.5 late: its arrivals are 0.5 later on the shared
		// clock, and 0->1 waited for it; 1->2 starts at 0->1's arrival (1.5)
		{"late receiver", []float64{1, 2, 4}, []float64{0, 0.5, 0}, []float64{1, 2, 2.5}},
		// rank 2 entered 3 late: 2->1 started then; 1->2's receiver was
		// not there before 3 either
		{"late sender", []float64{4, 4, 2}, []float64{0, 0, 3}, []float64{4, 1, 1}},
		// an arrival before its start (clock error) becomes the floor
		{"clock error", []float64{1, 2, 0.25}, []float64{0, 0, 0.5}, []float64{1, 1.5, minDuration}},
	} {
		got := make([]float64, 3)
		New(p).Durations(p, c.arrival, c.entry, got)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: durations %v, want %v", c.name, got, c.want)
		}
	}
}

// StepDurations times each flow from its receiver's previous step.
func TestStepDurations(t *testing.T) {
	// 0->1 and 2->1 at step 1, 1->2 at step 2, 0->2 at step 3
	p := pat(3, fl(0, 1, 0, 1), fl(0, 1, 2, 1), fl(0, 2, 1, 2), fl(1, 3, 0, 2))
	got := make([]float64, 4)
	StepDurations(p, []float64{1, 3, 5, 6}, got)
	if want := []float64{1, 3, 5, 1}; !slices.Equal(got, want) {
		t.Errorf("durations %v, want %v", got, want)
	}
}
