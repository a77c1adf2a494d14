package detect

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/react-torch/react-torch/internal/fixture"
	"github.com/react-torch/react-torch/pkg/ten"
)

const (
	msgBytes = 1 << 20
	baseFCT  = 1e-3 // s, for a flow carrying half the buffer
)

// batch returns epochs x flows FCTs of baseFCT scaled by the flow's
// Fraction, times slow[f][e] where given.
func batch(p *ten.Pattern, epochs int, slow map[int][]float64) [][]float64 {
	fct := make([][]float64, epochs)
	for e := range fct {
		fct[e] = make([]float64, len(p.Flows))
		for f := range fct[e] {
			fct[e][f] = baseFCT * p.Flows[f].Fraction / .5
			if m, ok := slow[f]; ok {
				fct[e][f] *= m[e]
			}
		}
	}
	return fct
}

func all6(m float64) []float64 { return []float64{m, m, m, m, m, m} }

func TestDetect(t *testing.T) {
	no := []bool{false, false, false, false}
	tests := []struct {
		name         string
		slow         map[int][]float64
		want         map[int]Class // flows not listed: None
		wantVertices []Vertex
		wantIn       []bool
		wantOut      []bool
	}{
		{
			name: "all equal",
			want: map[int]Class{}, wantIn: no, wantOut: no,
		},
		{
			// Flow 7 (chunk 1, step 2, 2->3) is twice as slow in every
			// epoch; flow 0 (chunk 0, step 1, 3->1) in two of six. The
			// steady flow's vertices come first although its chunk is later.
			name: "one steady and one erratic flow",
			slow: map[int][]float64{7: all6(2), 0: {1, 2, 1, 1, 2, 1}},
			want: map[int]Class{7: Steady, 0: Erratic},
			wantVertices: []Vertex{
				{Chunk: 1, Step: 1, Rank: 2, Congested: 1, Steady: 1},
				{Chunk: 1, Step: 2, Rank: 3, Congested: 1, Steady: 1},
				{Chunk: 0, Step: 0, Rank: 3, Congested: 1},
				{Chunk: 0, Step: 1, Rank: 1, Congested: 1},
			},
			wantIn: no, wantOut: no,
		},
		{
			name: "slow in two of six epochs is erratic",
			slow: map[int][]float64{3: {1, 1, 2, 1, 1, 2}},
			want: map[int]Class{3: Erratic},
			wantVertices: []Vertex{
				{Chunk: 0, Step: 2, Rank: 0, Congested: 1},
				{Chunk: 0, Step: 3, Rank: 1, Congested: 1},
			},
			wantIn: no, wantOut: no,
		},
		{
			// Both tests fire; steady is the more severe and wins.
			name: "steady and erratic at once is steady",
			slow: map[int][]float64{4: {4, 4, 4, 1, 4, 4}},
			want: map[int]Class{4: Steady},
			wantVertices: []Vertex{
				{Chunk: 0, Step: 2, Rank: 0, Congested: 1, Steady: 1},
				{Chunk: 0, Step: 3, Rank: 2, Congested: 1, Steady: 1},
			},
			wantIn: no, wantOut: no,
		},
		{
			// Flows 1 and 2 both reduce into rank 0 at step 2.
			name: "shared vertex counts both flows",
			slow: map[int][]float64{1: all6(2), 2: all6(2)},
			want: map[int]Class{1: Steady, 2: Steady},
			wantVertices: []Vertex{
				{Chunk: 0, Step: 2, Rank: 0, Congested: 2, Steady: 2},
				{Chunk: 0, Step: 1, Rank: 1, Congested: 1, Steady: 1},
				{Chunk: 0, Step: 1, Rank: 2, Congested: 1, Steady: 1},
			},
			wantIn: no, wantOut: no,
		},
		{
			// Degree-2 flows share a link two ways: half the throughput
			// of degree-1 flows is normal for them.
			name: "degree-2 flows at half speed are not congested",
			slow: map[int][]float64{1: all6(2), 2: all6(2), 3: all6(2), 4: all6(2), 7: all6(2), 8: all6(2), 9: all6(2), 10: all6(2)},
			want: map[int]Class{}, wantIn: no, wantOut: no,
		},
		{
			name: "every flow into rank 0 slow",
			slow: map[int][]float64{1: all6(2), 2: all6(2), 11: all6(2)},
			want: map[int]Class{1: Steady, 2: Steady, 11: Steady},
			wantVertices: []Vertex{
				{Chunk: 0, Step: 2, Rank: 0, Congested: 2, Steady: 2},
				{Chunk: 0, Step: 1, Rank: 1, Congested: 1, Steady: 1},
				{Chunk: 0, Step: 1, Rank: 2, Congested: 1, Steady: 1},
				{Chunk: 1, Step: 3, Rank: 2, Congested: 1, Steady: 1},
				{Chunk: 1, Step: 4, Rank: 0, Congested: 1, Steady: 1},
			},
			wantIn: []bool{true, false, false, false}, wantOut: no,
		},
		{
			name: "every flow out of rank 3 slow",
			slow: map[int][]float64{0: all6(2), 9: all6(2), 10: all6(2)},
			want: map[int]Class{0: Steady, 9: Steady, 10: Steady},
			wantVertices: []Vertex{
				{Chunk: 1, Step: 2, Rank: 3, Congested: 2, Steady: 2},
				{Chunk: 0, Step: 0, Rank: 3, Congested: 1, Steady: 1},
				{Chunk: 0, Step: 1, Rank: 1, Congested: 1, Steady: 1},
				{Chunk: 1, Step: 3, Rank: 1, Congested: 1, Steady: 1},
				{Chunk: 1, Step: 3, Rank: 2, Congested: 1, Steady: 1},
			},
			wantIn: no, wantOut: []bool{false, false, false, true},
		},
	}
	p := fixture.Tree4()
	deg := ten.NewDegrees(p)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Detect(p, deg, batch(p, 6, tt.slow), msgBytes, DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			for f := range p.Flows {
				if got, want := r.Class[f], tt.want[f]; got != want {
					t.Errorf("flow %d %+v: class %v, want %v (p90 %.4g, mean %.4g, normstd %.3f, degree %d mean %.4g)",
						f, p.Flows[f], got, want, r.P90[f], r.Mean[f], r.NormStd[f], r.Degree[f], r.DegreeMean[r.Degree[f]])
				}
			}
			if !slices.Equal(r.Vertices, tt.wantVertices) {
				t.Errorf("Vertices =\n%+v\nwant\n%+v", r.Vertices, tt.wantVertices)
			}
			if !slices.Equal(r.SteadyIn, tt.wantIn) || !slices.Equal(r.SteadyOut, tt.wantOut) {
				t.Errorf("SteadyIn %v SteadyOut %v, want %v %v", r.SteadyIn, r.SteadyOut, tt.wantIn, tt.wantOut)
			}
			if r.Congested() != (len(tt.want) > 0) {
				t.Errorf("Congested() = %v", r.Congested())
			}
		})
	}
}

func TestDegreeMeans(t *testing.T) {
	p := fixture.Tree4()
	slow := map[int][]float64{}
	for _, f := range []int{1, 2, 3, 4, 7, 8, 9, 10} {
		slow[f] = all6(2)
	}
	r, err := Detect(p, ten.NewDegrees(p), batch(p, 6, slow), msgBytes, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	want1 := .5 * msgBytes / baseFCT
	if len(r.DegreeMean) != 3 || r.DegreeMean[0] != 0 || math.Abs(r.DegreeMean[1]-want1) > 1e-6*want1 || math.Abs(r.DegreeMean[2]-want1/2) > 1e-6*want1 {
		t.Errorf("DegreeMean = %v, want [0 %g %g]", r.DegreeMean, want1, want1/2)
	}
	if r.Degree[0] != 1 || r.Degree[1] != 2 {
		t.Errorf("Degree[0:2] = %v, want [1 2]", r.Degree[:2])
	}
}

func TestNoiseIsNotCongestion(t *testing.T) {
	for _, p := range []*ten.Pattern{fixture.Tree4(), fixture.HeapTreeAllReduce(16), fixture.HeapTreeAllReduce(64)} {
		deg := ten.NewDegrees(p)
		for seed := uint64(0); seed < 200; seed++ {
			rng := rand.New(rand.NewPCG(seed, 7))
			fct := batch(p, 6, nil)
			for e := range fct {
				for f := range fct[e] {
					fct[e][f] *= 1 + 0.05*rng.Float64()
				}
			}
			r, err := Detect(p, deg, fct, msgBytes, DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			if r.Congested() || len(r.Vertices) != 0 {
				f := slices.IndexFunc(r.Class, func(c Class) bool { return c != None })
				t.Fatalf("%d ranks, seed %d: flow %d classified %v (p90 %.4g mean %.4g normstd %.3f)", p.Ranks, seed, f, r.Class[f], r.P90[f], r.Mean[f], r.NormStd[f])
			}
		}
	}
}

func TestOneEpochBatch(t *testing.T) {
	p := fixture.Tree4()
	r, err := Detect(p, ten.NewDegrees(p), batch(p, 1, map[int][]float64{7: {2}}), msgBytes, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if r.Class[7] != Steady || r.NormStd[7] != 0 || r.Congested() != true {
		t.Errorf("one epoch: class %v normstd %v, want steady and 0", r.Class[7], r.NormStd[7])
	}
}

func TestErrors(t *testing.T) {
	p := fixture.Tree4()
	deg := ten.NewDegrees(p)
	good := func() [][]float64 { return batch(p, 6, nil) }
	tests := []struct {
		name  string
		fct   [][]float64
		msg   float64
		cfg   Config
		deg   *ten.Degrees
		want  string
		epoch int
		flow  int
	}{
		{name: "empty batch", fct: [][]float64{}, want: "empty batch", epoch: -1, flow: -1},
		{name: "nil batch", fct: nil, want: "empty batch", epoch: -1, flow: -1},
		{name: "short row", fct: func() [][]float64 { b := good(); b[3] = b[3][:5]; return b }(), want: "epoch 3: 5 FCTs, pattern has 12 flows", epoch: 3, flow: -1},
		{name: "zero FCT", fct: func() [][]float64 { b := good(); b[2][7] = 0; return b }(), want: "epoch 2 flow 7: FCT 0 s", epoch: 2, flow: 7},
		{name: "negative FCT", fct: func() [][]float64 { b := good(); b[0][1] = -1; return b }(), want: "epoch 0 flow 1", epoch: 0, flow: 1},
		{name: "NaN FCT", fct: func() [][]float64 { b := good(); b[5][11] = math.NaN(); return b }(), want: "epoch 5 flow 11: FCT NaN", epoch: 5, flow: 11},
		{name: "infinite FCT", fct: func() [][]float64 { b := good(); b[1][0] = math.Inf(1); return b }(), want: "epoch 1 flow 0: FCT +Inf", epoch: 1, flow: 0},
		{name: "subnormal FCT", fct: func() [][]float64 { b := good(); b[4][2] = 5e-324; return b }(), want: "epoch 4 flow 2: FCT 5e-324 s too small", epoch: 4, flow: 2},
		{name: "zero message", fct: good(), msg: -1, want: "messageBytes: -1", epoch: -1, flow: -1},
		{name: "delta1 one", fct: good(), cfg: Config{Delta1: 1, Delta2: .15}, want: "Delta1 = 1", epoch: -1, flow: -1},
		{name: "delta1 negative", fct: good(), cfg: Config{Delta1: -.1, Delta2: .15}, want: "Delta1 = -0.1", epoch: -1, flow: -1},
		{name: "delta2 negative", fct: good(), cfg: Config{Delta1: .2, Delta2: -.01}, want: "Delta2 = -0.01", epoch: -1, flow: -1},
		{name: "delta2 NaN", fct: good(), cfg: Config{Delta1: .2, Delta2: math.NaN()}, want: "Delta2 = NaN", epoch: -1, flow: -1},
		{name: "wrong degrees", fct: good(), deg: ten.NewDegrees(&ten.Pattern{Ranks: 2, Flows: []ten.Flow{{Step: 1, Src: 0, Dst: 1}}}), want: "not the pattern's degrees", epoch: -1, flow: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg, cfg, d := float64(msgBytes), DefaultConfig(), deg
			if tt.msg != 0 {
				msg = tt.msg
			}
			if tt.cfg != (Config{}) {
				cfg = tt.cfg
			}
			if tt.deg != nil {
				d = tt.deg
			}
			r, err := Detect(p, d, tt.fct, msg, cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Detect() = %v, %v; want error containing %q", r, err, tt.want)
			}
			var ie *InputError
			if !errors.As(err, &ie) || ie.Epoch != tt.epoch || ie.Flow != tt.flow {
				t.Errorf("error %#v, want an *InputError at epoch %d flow %d", err, tt.epoch, tt.flow)
			}
		})
	}
	if _, err := Detect(p, deg, good(), 0, DefaultConfig()); err == nil || !strings.Contains(err.Error(), "messageBytes") {
		t.Errorf("zero messageBytes: %v", err)
	}
	if _, err := Detect(nil, deg, good(), msgBytes, DefaultConfig()); err == nil {
		t.Error("nil pattern accepted")
	}
}

func TestClassString(t *testing.T) {
	for c, want := range map[Class]string{None: "none", Steady: "steady", Erratic: "erratic", 9: "class(9)"} {
		if got := c.String(); got != want {
			t.Errorf("Class(%d).String() = %q, want %q", uint8(c), got, want)
		}
	}
}

func BenchmarkDetect(b *testing.B) {
	for _, n := range []int{64, 1024} {
		p := fixture.HeapTreeAllReduce(n)
		deg := ten.NewDegrees(p)
		rng := rand.New(rand.NewPCG(1, 1))
		fct := batch(p, 6, map[int][]float64{3: all6(2), 10: {1, 3, 1, 1, 3, 1}})
		for e := range fct {
			for f := range fct[e] {
				fct[e][f] *= 1 + 0.05*rng.Float64()
			}
		}
		b.Run(fmt.Sprintf("tree%d", n), func(b *testing.B) {
			b.ReportMetric(float64(len(p.Flows)), "flows")
			for b.Loop() {
				if _, err := Detect(p, deg, fct, msgBytes, DefaultConfig()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
