package netsim

import (
	"slices"
	"strings"
	"testing"

	"github.com/react-torch/react-torch/pkg/pattern"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/react-torch/react-torch/pkg/topo"
)

// TestRails runs one flow 0 -> 1 of 8 MB (a 12.5 GB/s unit of 640 us on
// 100 Gbps) on 4 rails of a 3-host star: on one NIC a host the rails share
// its cable, on one NIC a GPU each has its own; external flows into host 1
// reach it through its (first) NIC.
func TestRails(t *testing.T) {
	const rails, lat = 4, 2 * us
	unit := 8 * mb * 8 / (100 * gbps)
	star := must(topo.Star(3, 100*gbps, us))
	nics := must(star.WithNICs(rails))
	onHost, onNIC := make([]int, 0, 2*rails), make([]int, 0, 2*rails)
	for i := range rails {
		onHost = append(onHost, 0, 1)
		onNIC = append(onNIC, nics.NIC(0, i), nics.NIC(1, i))
	}
	tests := []struct {
		name  string
		net   *topo.Topology
		hosts []int
		ext   int       // external flows 2 -> 1
		want  []float64 // each rail's FCT minus the latency, in units
	}{
		{"one NIC a host", star, onHost, 0, []float64{1, 1, 1, 1}},
		{"one NIC a host, congested", star, onHost, 1, []float64{1.25, 1.25, 1.25, 1.25}},
		{"one NIC a GPU", nics, onNIC, 0, []float64{.25, .25, .25, .25}},
		{"one NIC a GPU, congested", nics, onNIC, 1, []float64{.5, .25, .25, .25}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(tt.net, 1)
			if err := s.AddExternal(2, 1, tt.ext); err != nil {
				t.Fatal(err)
			}
			p := independent(2, [][2]int{{0, 1}}, []float64{1})
			r := run(t, s, Job{Hosts: tt.hosts, Bytes: 8 * mb, Rails: rails}, p, 1)[0]
			if r.Rails != rails || len(r.FlowFinish) != rails {
				t.Fatalf("%d rails, %d flows reported, want %d", r.Rails, len(r.FlowFinish), rails)
			}
			for i, w := range tt.want {
				if got := r.FlowFinish[i] - r.FlowStart[i]; !near(got, lat+w*unit, 1e-9) {
					t.Errorf("rail %d: FCT %.2f us, want %.2f", i, got/us, (lat+w*unit)/us)
				}
			}
			if !near(r.Elapsed, lat+slices.Max(tt.want)*unit, 1e-9) || r.NetBytes != 8*mb {
				t.Errorf("elapsed %.2f us, %g bytes on the network; want the slowest rail and 8 MB", r.Elapsed/us, r.NetBytes)
			}
		})
	}
}

// TestRailsOne: one rail is the plain job, port draws included.
func TestRailsOne(t *testing.T) {
	ft := must(topo.FatTree(4, 100*gbps, us))
	p := pattern.RingAllReduce(8)
	hosts := []int{0, 5, 9, 2, 14, 7, 11, 3}
	a := run(t, New(ft, 3), Job{Hosts: hosts, Bytes: 4 * mb}, p, 3)
	b := run(t, New(ft, 3), Job{Hosts: hosts, Bytes: 4 * mb, Rails: 1}, p, 3)
	for i := range a {
		if !slices.Equal(a[i].FlowFinish, b[i].FlowFinish) || a[i].Elapsed != b[i].Elapsed {
			t.Fatalf("epoch %d differs with Rails 1", i)
		}
	}
}

// TestRailsDependOnTheirRail: rail 1 of a chain 0 -> 1 -> 2 waits for rail
// 1's first hop only, so a rail slowed by congestion does not hold back
// another.
func TestRailsDependOnTheirRail(t *testing.T) {
	star := must(topo.Star(4, 100*gbps, us))
	nics := must(star.WithNICs(2))
	s := New(nics, 1)
	if err := s.AddExternal(3, 1, 3); err != nil { // into NIC 0 of host 1
		t.Fatal(err)
	}
	p := &ten.Pattern{Op: ten.Broadcast, Algo: "test", Ranks: 3, Root: 0, Flows: []ten.Flow{
		{Chunk: 0, Step: 1, Src: 0, Dst: 1, Kind: ten.KindCopy, Fraction: 1},
		{Chunk: 0, Step: 2, Src: 1, Dst: 2, Kind: ten.KindCopy, Fraction: 1},
	}}
	hosts := []int{nics.NIC(0, 0), nics.NIC(1, 0), nics.NIC(2, 0), nics.NIC(0, 1), nics.NIC(1, 1), nics.NIC(2, 1)}
	r := run(t, s, Job{Hosts: hosts, Bytes: 8 * mb, Rails: 2}, p, 1)[0]
	if r.FlowStart[1] != r.FlowFinish[0] || r.FlowStart[3] != r.FlowFinish[2] {
		t.Errorf("a rail's second hop did not start when its first arrived: %v, %v", r.FlowStart, r.FlowFinish)
	}
	if !(r.FlowFinish[3] < r.FlowFinish[0]) {
		t.Errorf("rail 1 finished at %g, after rail 0's congested first hop (%g)", r.FlowFinish[3], r.FlowFinish[0])
	}
}

// TestIntraHost: a flow between two ranks (or two NICs) of one host runs
// at the intra-host rate off the network, and Before and After frame the
// flows.
func TestIntraHost(t *testing.T) {
	const intra, before, after = 800 * gbps, 30 * us, 20 * us
	star := must(topo.Star(2, 100*gbps, us))
	nics := must(star.WithNICs(2))
	p := &ten.Pattern{Op: ten.Broadcast, Algo: "test", Ranks: 3, Root: 0, Flows: []ten.Flow{
		{Chunk: 0, Step: 1, Src: 0, Dst: 1, Kind: ten.KindCopy, Fraction: 1},
		{Chunk: 0, Step: 2, Src: 1, Dst: 2, Kind: ten.KindCopy, Fraction: 1},
	}}
	local := 8 * mb * 8 / intra
	remote := 2*us + 8*mb*8/(100*gbps)
	for _, tt := range []struct {
		name  string
		net   *topo.Topology
		hosts []int
	}{
		{"one NIC a host", star, []int{0, 0, 1}},
		{"one NIC a GPU", nics, []int{nics.NIC(0, 0), nics.NIC(0, 1), nics.NIC(1, 1)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, New(tt.net, 1), Job{Hosts: tt.hosts, Bytes: 8 * mb, Intra: intra, Before: before, After: after}, p, 2)[1]
			if !near(r.FlowStart[0], before, 1e-9) || !near(r.FlowFinish[0], before+local, 1e-9) {
				t.Errorf("intra-host flow ran [%g, %g] us, want [%g, %g]", r.FlowStart[0]/us, r.FlowFinish[0]/us, before/us, (before+local)/us)
			}
			if !near(r.Elapsed, before+local+remote+after, 1e-9) || r.NetBytes != 8*mb {
				t.Errorf("elapsed %g us, %g network bytes; want %g us, 8 MB", r.Elapsed/us, r.NetBytes, (before+local+remote+after)/us)
			}
		})
	}
}

func TestRailsErrors(t *testing.T) {
	star := must(topo.Star(4, 100*gbps, us))
	for _, tt := range []struct {
		name string
		job  Job
		want string
	}{
		{"rails", Job{Hosts: []int{0, 1, 2}, Bytes: 1, Rails: 2}, "2 rails of 3 hosts"},
		{"ranks", Job{Hosts: []int{0, 1, 2, 3}, Bytes: 1, Rails: 1}, "pattern has 2 ranks, job has 4 hosts on 1 rail"},
		{"intra", Job{Hosts: []int{0, 1}, Bytes: 1, Intra: -1}, "intra-host rate -1"},
		{"after", Job{Hosts: []int{0, 1}, Bytes: 1, After: -1}, "after -1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := New(star, 1).Run([]Job{tt.job}, 1, &Fixed{Patterns: []*ten.Pattern{pattern.RingAllReduce(2)}})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}
