package netsim

import (
	"testing"

	"github.com/react-torch/react-torch/pkg/pattern"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/react-torch/react-torch/pkg/topo"
)

// discard is a Driver that keeps nothing.
type discard struct {
	p       []*ten.Pattern
	elapsed float64
}

func (d *discard) Pattern(job, epoch int) *ten.Pattern { return d.p[job] }
func (d *discard) Done(r EpochResult)                  { d.elapsed += r.Elapsed }

// BenchmarkTreeFatTree is §7.3's default: an 8-rank tree AllReduce, 20 MB,
// 100 epochs on the k=8 fat tree with 4 ports, with external flows (p = 2
// from two outside hosts into two ranks).
func BenchmarkTreeFatTree(b *testing.B) {
	ft := must(topo.FatTree(8, 100*gbps, us))
	jobs := []Job{{Hosts: []int{0, 17, 34, 51, 68, 85, 102, 119}, Bytes: 20 * mb, Ports: 4}}
	d := &discard{p: []*ten.Pattern{pattern.TreeAllReduce(8)}}
	for b.Loop() {
		s := New(ft, 1)
		if err := s.AddExternal(5, 17, 2); err != nil {
			b.Fatal(err)
		}
		if err := s.AddExternal(90, 68, 2); err != nil {
			b.Fatal(err)
		}
		if err := s.Run(jobs, 100, d); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTwoJobsClos is §7.3.3's network-only sharing: a tree and a ring
// AllReduce of 8 ranks each, on disjoint hosts spread over the 720-host
// Alibaba Clos, 100 epochs.
func BenchmarkTwoJobsClos(b *testing.B) {
	clos := must(topo.Clos(48, 3, 15, 100*gbps, us))
	var h0, h1 []int
	for i := 0; i < 8; i++ {
		h0 = append(h0, i*15*6)    // ToRs 0, 6, 12, ...
		h1 = append(h1, i*15*6+16) // ToRs 1, 7, 13, ...
	}
	jobs := []Job{{Hosts: h0, Bytes: 20 * mb}, {Hosts: h1, Bytes: 20 * mb}}
	d := &discard{p: []*ten.Pattern{pattern.TreeAllReduce(8), pattern.RingAllReduce(8)}}
	for b.Loop() {
		if err := New(clos, 1).Run(jobs, 100, d); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRing128FatTree is a large pattern: a 128-rank ring AllReduce
// (32512 flows an epoch) over every host of the k=8 fat tree, 5 epochs.
func BenchmarkRing128FatTree(b *testing.B) {
	ft := must(topo.FatTree(8, 100*gbps, us))
	jobs := []Job{{Hosts: identityHosts(128), Bytes: 20 * mb}}
	d := &discard{p: []*ten.Pattern{pattern.RingAllReduce(128)}}
	for b.Loop() {
		if err := New(ft, 1).Run(jobs, 5, d); err != nil {
			b.Fatal(err)
		}
	}
}
