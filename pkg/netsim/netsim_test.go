package netsim

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/react-torch/react-torch/pkg/pattern"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/react-torch/react-torch/pkg/topo"
)

const (
	gbps = 1e9
	us   = 1e-6
	mb   = 1e6 // bytes
)

func must(t *topo.Topology, err error) *topo.Topology {
	if err != nil {
		panic(err)
	}
	return t
}

func near(got, want, rel float64) bool {
	return math.Abs(got-want) <= rel*math.Abs(want)
}

func identityHosts(n int) []int {
	h := make([]int, n)
	for i := range h {
		h[i] = i
	}
	return h
}

// run simulates one job for epochs epochs with a fixed pattern.
func run(t *testing.T, s *Sim, job Job, p *ten.Pattern, epochs int) []EpochResult {
	t.Helper()
	d := &Fixed{Patterns: []*ten.Pattern{p}}
	if err := s.Run([]Job{job}, epochs, d); err != nil {
		t.Fatal(err)
	}
	if len(d.Results) != epochs {
		t.Fatalf("%d results, want %d", len(d.Results), epochs)
	}
	return d.Results
}

// independent is a pattern of flows that wait for nothing: flow i goes
// pairs[i][0] -> pairs[i][1] at step 1 in chunk i, carrying sizes[i] of the
// message.
func independent(ranks int, pairs [][2]int, sizes []float64) *ten.Pattern {
	p := &ten.Pattern{Op: ten.AllGather, Algo: "test", Ranks: ranks, Root: -1}
	for i, pr := range pairs {
		p.Flows = append(p.Flows, ten.Flow{Chunk: int32(i), Step: 1, Src: int32(pr[0]), Dst: int32(pr[1]), Kind: ten.KindCopy, Fraction: sizes[i]})
	}
	return p
}

// TestClosedForms runs flows that all start at once on an idle 8-host star
// (100 Gbps, 1 us a link, so 2 us a path); want is each flow's FCT minus the
// path latency in units of message/capacity.
func TestClosedForms(t *testing.T) {
	ones := func(n int) []float64 {
		s := make([]float64, n)
		for i := range s {
			s[i] = 1
		}
		return s
	}
	tests := []struct {
		name  string
		pairs [][2]int
		sizes []float64
		want  []float64
	}{
		{"one flow", [][2]int{{0, 1}}, ones(1), []float64{1}},
		{"two share a downlink", [][2]int{{1, 0}, {2, 0}}, ones(2), []float64{2, 2}},
		{"five share a downlink", [][2]int{{1, 0}, {2, 0}, {3, 0}, {4, 0}, {5, 0}}, ones(5), []float64{5, 5, 5, 5, 5}},
		{"three share an uplink", [][2]int{{0, 1}, {0, 2}, {0, 3}}, ones(3), []float64{3, 3, 3}},
		{"disjoint links do not interact", [][2]int{{0, 1}, {2, 3}, {4, 5}}, ones(3), []float64{1, 1, 1}},
		// Flow 0 (1->0) shares h0's downlink with two others (share 1/3) and
		// h1's uplink with flow 3 (share 1/2): it gets the min, 1/3, and
		// flow 3 the rest of the uplink, 2/3.
		{"downlink is the tighter bottleneck", [][2]int{{1, 0}, {2, 0}, {3, 0}, {1, 4}}, ones(4), []float64{3, 3, 3, 1.5}},
		// Flow 0 (1->0) shares h1's uplink with two others (1/3) and h0's
		// downlink with flow 1 (1/2).
		{"uplink is the tighter bottleneck", [][2]int{{1, 0}, {2, 0}, {1, 4}, {1, 5}}, ones(4), []float64{3, 1.5, 3, 3}},
		// Half each until the small one ends at 0.5, then the large one has
		// 0.5 left at the full rate.
		{"unequal sizes", [][2]int{{1, 0}, {2, 0}}, []float64{0.25, 0.75}, []float64{0.5, 1}},
	}
	const size = 4 * mb
	star := must(topo.Star(8, 100*gbps, us))
	unit := size * 8 / (100 * gbps) // seconds per whole message at full rate
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bytes := size * slices.Max(tt.sizes)
			sizes := make([]float64, len(tt.sizes))
			for i, f := range tt.sizes {
				sizes[i] = f * size / bytes
			}
			r := run(t, New(star, 1), Job{Hosts: identityHosts(8), Bytes: bytes}, independent(8, tt.pairs, sizes), 1)[0]
			for i, w := range tt.want {
				want := 2*us + w*unit
				if r.FlowStart[i] != 0 || !near(r.FlowFinish[i], want, 1e-9) {
					t.Errorf("flow %d ran [%g, %g], want [0, %g]", i, r.FlowStart[i], r.FlowFinish[i], want)
				}
			}
			if !near(r.Elapsed, slices.Max(r.FlowFinish), 1e-12) {
				t.Errorf("elapsed %g, last finish %g", r.Elapsed, slices.Max(r.FlowFinish))
			}
		})
	}
}

// TestOneFlowPaths: a lone flow takes latency + size/capacity on any path,
// capacity being the path's smallest.
func TestOneFlowPaths(t *testing.T) {
	ft := must(topo.FatTree(8, 100*gbps, 1*us))
	clos := must(topo.Clos(48, 3, 15, 100*gbps, 1.5*us))
	tests := []struct {
		name     string
		topo     *topo.Topology
		src, dst int
		cut      float64 // capacity of the destination's downlink, 0 to leave it
		hops     int
		capacity float64
	}{
		{"fat tree same edge", ft, 0, 1, 0, 2, 100 * gbps},
		{"fat tree same pod", ft, 0, 5, 0, 4, 100 * gbps},
		{"fat tree other pod", ft, 0, 127, 0, 6, 100 * gbps},
		{"fat tree cut downlink", ft, 0, 127, 30 * gbps, 6, 30 * gbps},
		{"clos other tor", clos, 3, 700, 0, 4, 100 * gbps},
		{"clos cut downlink", clos, 3, 700, 50 * gbps, 4, 50 * gbps},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(tt.topo, 7)
			if tt.cut > 0 {
				if err := s.SetCapacity(topo.LinkID(2*tt.dst+1), tt.cut); err != nil {
					t.Fatal(err)
				}
			}
			p := independent(2, [][2]int{{0, 1}}, []float64{1})
			r := run(t, s, Job{Hosts: []int{tt.src, tt.dst}, Bytes: 20 * mb}, p, 3)
			lat := float64(tt.hops) * tt.topo.Link(0).Latency
			want := lat + 20*mb*8/tt.capacity
			for _, e := range r {
				if !near(e.Elapsed, want, 1e-9) {
					t.Errorf("epoch %d: %g, want %g", e.Epoch, e.Elapsed, want)
				}
			}
		})
	}
}

// TestRingAllReduceStar: a ring AllReduce on an idle star takes 2(N-1) step
// latencies plus 2(N-1)/N of message/capacity.
func TestRingAllReduceStar(t *testing.T) {
	for _, n := range []int{2, 3, 4, 8, 16} {
		star := must(topo.Star(n, 100*gbps, 2*us))
		r := run(t, New(star, 1), Job{Hosts: identityHosts(n), Bytes: 20 * mb}, pattern.RingAllReduce(n), 2)
		steps := float64(2 * (n - 1))
		want := steps*4*us + steps/float64(n)*20*mb*8/(100*gbps)
		for _, e := range r {
			if !near(e.Elapsed, want, 1e-9) {
				t.Errorf("n=%d epoch %d: %g, want %g", n, e.Epoch, e.Elapsed, want)
			}
		}
	}
}

// TestExternalFlows: background flows slow only the flows that share their
// links, and take their max-min share.
func TestExternalFlows(t *testing.T) {
	star := must(topo.Star(8, 100*gbps, us))
	unit := 4 * mb * 8 / (100 * gbps)
	tests := []struct {
		name         string
		ext          [][3]int // src, dst, count
		want0, want1 float64  // flow 0 (0->1) and flow 1 (2->3), in units
	}{
		{"none", nil, 1, 1},
		{"one into h3", [][3]int{{6, 3, 1}}, 1, 2},
		{"two into h3", [][3]int{{6, 3, 2}}, 1, 3},
		{"two pairs into h3", [][3]int{{6, 3, 2}, {7, 3, 1}}, 1, 4},
		{"out of h2", [][3]int{{2, 6, 3}}, 1, 4},
		{"elsewhere", [][3]int{{6, 7, 5}, {4, 5, 2}}, 1, 1},
		// h6's uplink carries four flows, so the two to h3 get 1/4 each and
		// leave h3's downlink half free.
		{"limited at its source", [][3]int{{6, 3, 2}, {6, 7, 2}}, 1, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(star, 3)
			for _, e := range tt.ext {
				if err := s.AddExternal(e[0], e[1], e[2]); err != nil {
					t.Fatal(err)
				}
			}
			p := independent(4, [][2]int{{0, 1}, {2, 3}}, []float64{1, 1})
			r := run(t, s, Job{Hosts: identityHosts(4), Bytes: 4 * mb}, p, 2)
			for _, e := range r {
				if !near(e.FlowFinish[0], 2*us+tt.want0*unit, 1e-9) || !near(e.FlowFinish[1], 2*us+tt.want1*unit, 1e-9) {
					t.Errorf("epoch %d: finishes %v, want %g, %g", e.Epoch, e.FlowFinish, 2*us+tt.want0*unit, 2*us+tt.want1*unit)
				}
			}
		})
	}
}

// TestDataDrivenStart: a flow starts when the flows of its chunk into its
// source have arrived, not at a step barrier, and flows of other chunks do
// not hold it.
func TestDataDrivenStart(t *testing.T) {
	star := must(topo.Star(8, 100*gbps, us))
	p := &ten.Pattern{Op: ten.AllGather, Algo: "test", Ranks: 6, Root: -1, Flows: []ten.Flow{
		{Chunk: 0, Step: 1, Src: 0, Dst: 1, Kind: ten.KindCopy, Fraction: 0.1},
		{Chunk: 1, Step: 1, Src: 2, Dst: 3, Kind: ten.KindCopy, Fraction: 1},   // long, same step
		{Chunk: 1, Step: 1, Src: 5, Dst: 1, Kind: ten.KindCopy, Fraction: 1},   // into 1, other chunk
		{Chunk: 0, Step: 2, Src: 1, Dst: 4, Kind: ten.KindCopy, Fraction: 0.1}, // waits for flow 0 only
		{Chunk: 0, Step: 3, Src: 4, Dst: 0, Kind: ten.KindCopy, Fraction: 0.1}, // waits for flow 3
		{Chunk: 0, Step: 3, Src: 3, Dst: 0, Kind: ten.KindCopy, Fraction: 0.1}, // 3 received nothing in chunk 0
	}}
	r := run(t, New(star, 1), Job{Hosts: identityHosts(6), Bytes: 10 * mb}, p, 1)[0]
	if r.FlowStart[3] != r.FlowFinish[0] {
		t.Errorf("flow 3 started at %g, its input arrived at %g", r.FlowStart[3], r.FlowFinish[0])
	}
	if r.FlowStart[4] != r.FlowFinish[3] {
		t.Errorf("flow 4 started at %g, its input arrived at %g", r.FlowStart[4], r.FlowFinish[3])
	}
	if r.FlowStart[5] != 0 {
		t.Errorf("flow 5 has no inputs but started at %g", r.FlowStart[5])
	}
	if !(r.FlowStart[3] < r.FlowFinish[1]) {
		t.Errorf("flow 3 waited for another chunk: started %g, chunk 1 ended %g", r.FlowStart[3], r.FlowFinish[1])
	}
}

// TestSameHost: flows between ranks on one host take no time.
func TestSameHost(t *testing.T) {
	star := must(topo.Star(4, 100*gbps, us))
	r := run(t, New(star, 1), Job{Hosts: []int{2, 2, 2, 2}, Bytes: 20 * mb}, pattern.RingAllReduce(4), 2)
	for _, e := range r {
		if e.Elapsed != 0 || slices.Max(e.FlowFinish) != 0 {
			t.Errorf("epoch %d on one host took %g", e.Epoch, e.Elapsed)
		}
	}
	// Two hosts, ranks 0,1 on one and 2,3 on the other: only the two ring
	// hops between hosts cost, and they are sequential per chunk.
	r = run(t, New(star, 1), Job{Hosts: []int{0, 0, 1, 1}, Bytes: 20 * mb}, pattern.RingAllReduce(4), 1)
	for f, fl := range r[0].Pattern.Flows {
		local := fl.Src/2 == fl.Dst/2
		if d := r[0].FlowFinish[f] - r[0].FlowStart[f]; local != (d == 0) {
			t.Errorf("flow %d (%d->%d) took %g", f, fl.Src, fl.Dst, d)
		}
	}
}

// TestEpochLoop: jobs start their next epoch Gap after the previous ended,
// each at its own pace, and a nil pattern stops a job.
func TestEpochLoop(t *testing.T) {
	star := must(topo.Star(8, 100*gbps, us))
	jobs := []Job{
		{Hosts: []int{0, 1, 2, 3}, Bytes: 10 * mb, Gap: 5 * us},
		{Hosts: []int{3, 4, 5}, Bytes: 3 * mb},
	}
	d := &scripted{patterns: [][]*ten.Pattern{
		{pattern.RingAllReduce(4), pattern.TreeAllReduce(4), pattern.RingAllReduce(4)},
		{pattern.TreeAllReduce(3), pattern.TreeAllReduce(3), pattern.TreeAllReduce(3), nil},
	}}
	if err := New(star, 1).Run(jobs, 10, d); err != nil {
		t.Fatal(err)
	}
	byJob := [2][]EpochResult{}
	for _, r := range d.results {
		byJob[r.Job] = append(byJob[r.Job], r)
	}
	if len(byJob[0]) != 3 || len(byJob[1]) != 3 {
		t.Fatalf("epochs per job %d, %d, want 3, 3", len(byJob[0]), len(byJob[1]))
	}
	for j, rs := range byJob {
		for e, r := range rs {
			if r.Epoch != e || r.Pattern != d.patterns[j][e] {
				t.Errorf("job %d result %d is epoch %d with another pattern", j, e, r.Epoch)
			}
			if e > 0 {
				prev := rs[e-1]
				if want := prev.Start + prev.Elapsed + jobs[j].Gap; r.Start != want {
					t.Errorf("job %d epoch %d started %g, want %g", j, e, r.Start, want)
				}
			}
		}
	}
	if d.calls != [2]int{4, 4} {
		t.Errorf("Pattern calls %v, want 4 each (3 patterns, then nil)", d.calls)
	}
}

// scripted runs patterns[job][epoch] and nil past the end.
type scripted struct {
	patterns [][]*ten.Pattern
	results  []EpochResult
	calls    [2]int
}

func (d *scripted) Pattern(job, epoch int) *ten.Pattern {
	d.calls[job]++
	if epoch < len(d.patterns[job]) {
		return d.patterns[job][epoch]
	}
	return nil
}

func (d *scripted) Done(r EpochResult) { d.results = append(d.results, r) }

// TestPorts: with one port a flow always takes the same path; with several
// it moves between them from epoch to epoch. On a k=4 fat tree a flow
// between pods leaves its edge switch through one of two aggregation
// switches; one of those links is cut to 10 Gbps.
func TestPorts(t *testing.T) {
	ft := must(topo.FatTree(4, 100*gbps, us))
	edge := ft.Hosts() // edge0.0, host 0's switch
	agg := edge + 8    // agg0.0
	cut, ok := ft.Find(edge, agg)
	if !ok {
		t.Fatal("no edge0.0 -> agg0.0 link")
	}
	fast := 6*us + 4*mb*8/(100*gbps)
	slow := 6*us + 4*mb*8/(10*gbps)
	for _, ports := range []int{1, 2, 4, 8} {
		s := New(ft, 11)
		if err := s.SetCapacity(cut, 10*gbps); err != nil {
			t.Fatal(err)
		}
		p := independent(2, [][2]int{{0, 1}}, []float64{1})
		rs := run(t, s, Job{Hosts: []int{0, 15}, Bytes: 4 * mb, Ports: ports}, p, 60)
		var nf, ns int
		for _, r := range rs {
			switch {
			case near(r.Elapsed, fast, 1e-9):
				nf++
			case near(r.Elapsed, slow, 1e-9):
				ns++
			default:
				t.Fatalf("ports=%d epoch %d: %g, neither %g nor %g", ports, r.Epoch, r.Elapsed, fast, slow)
			}
		}
		t.Logf("ports=%d: %d fast, %d slow epochs", ports, nf, ns)
		if ports == 1 && nf*ns != 0 {
			t.Errorf("one port but the path changed: %d fast, %d slow", nf, ns)
		}
		if ports >= 4 && nf*ns == 0 {
			t.Errorf("%d ports but one path in 60 epochs: %d fast, %d slow", ports, nf, ns)
		}
	}
}

// TestDeterminism: same seed, same run; another seed, other ports.
func TestDeterminism(t *testing.T) {
	ft := must(topo.FatTree(8, 100*gbps, us))
	once := func(seed uint64) []EpochResult {
		s := New(ft, seed)
		for _, e := range [][3]int{{1, 17, 2}, {40, 100, 2}, {127, 3, 1}} {
			if err := s.AddExternal(e[0], e[1], e[2]); err != nil {
				t.Fatal(err)
			}
		}
		d := &Fixed{Patterns: []*ten.Pattern{pattern.TreeAllReduce(8), pattern.RingAllReduce(8)}}
		jobs := []Job{
			{Hosts: []int{0, 17, 34, 51, 68, 85, 102, 119}, Bytes: 20 * mb},
			{Hosts: []int{3, 20, 37, 54, 71, 88, 105, 122}, Bytes: 20 * mb, Gap: 3 * us},
		}
		if err := s.Run(jobs, 20, d); err != nil {
			t.Fatal(err)
		}
		return d.Results
	}
	a, b, c := once(5), once(5), once(6)
	if len(a) != 40 || len(b) != 40 {
		t.Fatalf("results %d, %d", len(a), len(b))
	}
	differ := false
	for i := range a {
		if a[i].Job != b[i].Job || a[i].Start != b[i].Start || !slices.Equal(a[i].FlowFinish, b[i].FlowFinish) {
			t.Fatalf("result %d differs between runs with the same seed", i)
		}
		if i < len(c) && !slices.Equal(a[i].FlowFinish, c[i].FlowFinish) {
			differ = true
		}
	}
	if !differ {
		t.Error("seeds 5 and 6 gave the same run")
	}
}

func TestErrors(t *testing.T) {
	star := must(topo.Star(4, 100*gbps, us))
	s := New(star, 1)
	setup := []struct {
		name string
		err  error
		want string
	}{
		{"external src", s.AddExternal(4, 0, 1), "source host 4 out of range"},
		{"external dst", s.AddExternal(0, -1, 1), "destination host -1"},
		{"external self", s.AddExternal(2, 2, 1), "host 2 to itself"},
		{"external count", s.AddExternal(1, 2, -1), "negative external flow count"},
		{"capacity link", s.SetCapacity(99, gbps), "link 99 out of range"},
		{"capacity zero", s.SetCapacity(1, 0), "capacity 0"},
	}
	for _, tt := range setup {
		if tt.err == nil || !strings.Contains(tt.err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one containing %q", tt.name, tt.err, tt.want)
		}
	}
	bad := pattern.RingAllReduce(4)
	bad.Flows[3].Dst = bad.Flows[3].Src
	runs := []struct {
		name string
		job  Job
		p    *ten.Pattern
		want string
	}{
		{"no hosts", Job{Bytes: 1}, pattern.RingAllReduce(2), "job 0 has no hosts"},
		{"host range", Job{Hosts: []int{0, 9}, Bytes: 1}, pattern.RingAllReduce(2), "rank 1 on host 9"},
		{"bytes", Job{Hosts: []int{0, 1}, Bytes: math.NaN()}, pattern.RingAllReduce(2), "message size NaN"},
		{"ranks", Job{Hosts: []int{0, 1, 2}, Bytes: 1}, pattern.RingAllReduce(2), "pattern has 2 ranks, job has 3 hosts"},
		{"invalid pattern", Job{Hosts: []int{0, 1, 2, 3}, Bytes: 1}, bad, "job 0 epoch 0: pattern flow 3"},
		{"gap", Job{Hosts: []int{0, 1}, Bytes: 1, Gap: -1}, pattern.RingAllReduce(2), "gap -1"},
	}
	for _, tt := range runs {
		t.Run(tt.name, func(t *testing.T) {
			err := New(star, 1).Run([]Job{tt.job}, 3, &Fixed{Patterns: []*ten.Pattern{tt.p}})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestRunTwice: a Sim runs again from time zero with the same result.
func TestRunTwice(t *testing.T) {
	ft := must(topo.FatTree(4, 100*gbps, us))
	s := New(ft, 9)
	if err := s.AddExternal(0, 12, 2); err != nil {
		t.Fatal(err)
	}
	job := Job{Hosts: []int{0, 5, 10, 15}, Bytes: 8 * mb}
	a := run(t, s, job, pattern.TreeAllReduce(4), 10)
	b := run(t, s, job, pattern.TreeAllReduce(4), 10)
	for i := range a {
		if a[i].Start != b[i].Start || !slices.Equal(a[i].FlowFinish, b[i].FlowFinish) {
			t.Fatalf("epoch %d differs on the second run", i)
		}
	}
}

// TestExternalPortsDiffer: the p flows of one external pair are separate
// connections, so ECMP spreads them over the paths between pods.
func TestExternalPortsDiffer(t *testing.T) {
	ft := must(topo.FatTree(4, 100*gbps, us))
	s := New(ft, 2)
	if err := s.AddExternal(0, 15, 8); err != nil {
		t.Fatal(err)
	}
	run(t, s, Job{Hosts: []int{1, 2}, Bytes: mb}, independent(2, [][2]int{{0, 1}}, []float64{1}), 1)
	paths := map[topo.LinkID]bool{}
	n := 0
	for _, x := range s.act {
		if x.job < 0 {
			n++
			paths[x.links[2]] = true // the aggregation -> core hop
		}
	}
	if n != 8 {
		t.Fatalf("%d external transfers, want 8", n)
	}
	if len(paths) < 2 {
		t.Errorf("8 external flows between pods all crossed one core link")
	}
}
