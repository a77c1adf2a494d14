package netsim

import (
	"math/rand/v2"
	"testing"

	"github.com/react-torch/react-torch/pkg/pattern"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/react-torch/react-torch/pkg/topo"
)

// Properties every run must have, checked on random inputs and on every
// pattern: max-min fairness, the epoch's accounting, zero-byte flows.

// TestMaxMinProperty checks fill on random transfers over a fat tree with
// random link capacities against the definition of max-min fairness: no
// link is over capacity, and every transfer crosses a saturated link on
// which no transfer has a higher rate.
func TestMaxMinProperty(t *testing.T) {
	ft := must(topo.FatTree(4, 100*gbps, us))
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 200; trial++ {
		s := New(ft, uint64(trial))
		for l := 0; l < ft.NumLinks(); l++ {
			if rng.IntN(4) == 0 {
				if err := s.SetCapacity(topo.LinkID(l), float64(1+rng.IntN(100))*gbps); err != nil {
					t.Fatal(err)
				}
			}
		}
		n := 1 + rng.IntN(40)
		for i := 0; i < n; i++ {
			src, dst := rng.IntN(16), rng.IntN(16)
			if src == dst {
				continue
			}
			r := s.path(src, dst, rng.Uint64())
			s.act = append(s.act, xfer{links: r.links, rem: 1e9, size: 1e9, job: 0, flow: int32(i)})
		}
		s.fill()
		load := make([]float64, ft.NumLinks())
		top := make([]float64, ft.NumLinks())
		for _, x := range s.act {
			if !(x.rate > 0) {
				t.Fatalf("trial %d: rate %v", trial, x.rate)
			}
			for _, l := range x.links {
				load[l] += x.rate
				top[l] = max(top[l], x.rate)
			}
		}
		for l, v := range load {
			if v > s.cap[l]*(1+1e-9) {
				t.Fatalf("trial %d: link %d carries %g > %g", trial, l, v, s.cap[l])
			}
		}
		for i, x := range s.act {
			ok := false
			for _, l := range x.links {
				if load[l] >= s.cap[l]*(1-1e-9) && x.rate >= top[l]*(1-1e-9) {
					ok = true
				}
			}
			if !ok {
				t.Fatalf("trial %d: transfer %d (rate %g) has no bottleneck link", trial, i, x.rate)
			}
		}
	}
}

// TestEveryPattern runs every generated pattern, with some ranks sharing a
// host, on a busy fat tree and checks each epoch's times against the
// model: a flow starts the moment its last input arrives (at 0 with none)
// and lasts at least its path latency plus its bytes at full line rate.
func TestEveryPattern(t *testing.T) {
	ft := must(topo.FatTree(4, 100*gbps, us))
	ops := []ten.Op{ten.AllReduce, ten.AllGather, ten.ReduceScatter, ten.Broadcast, ten.Reduce}
	for _, op := range ops {
		for _, algo := range pattern.Algos(op) {
			for _, n := range []int{2, 3, 5, 8} {
				root := -1
				if op.Rooted() {
					root = n / 2
				}
				p, err := pattern.Generate(op, algo, n, root)
				if err != nil {
					t.Fatal(err)
				}
				hosts := make([]int, n)
				for r := range hosts {
					hosts[r] = (r * 5) % 13
				}
				hosts[n-1] = hosts[0] // one shared host
				s := New(ft, uint64(n))
				if err := s.AddExternal(14, hosts[1], 2); err != nil {
					t.Fatal(err)
				}
				job := Job{Hosts: hosts, Bytes: 3 * mb}
				for _, r := range run(t, s, job, p, 3) {
					checkEpoch(t, ft, job, r)
				}
			}
		}
	}
}

func checkEpoch(t *testing.T, ft *topo.Topology, job Job, r EpochResult) {
	t.Helper()
	p := r.Pattern
	last := 0.0
	for f, fl := range p.Flows {
		ready := 0.0
		for g, in := range p.Flows {
			if in.Chunk == fl.Chunk && in.Dst == fl.Src && in.Step < fl.Step {
				ready = max(ready, r.FlowFinish[g])
			}
		}
		if r.FlowStart[f] != ready {
			t.Fatalf("%s/%s n=%d epoch %d flow %d started %g, inputs arrived %g", p.Op, p.Algo, p.Ranks, r.Epoch, f, r.FlowStart[f], ready)
		}
		src, dst := job.Hosts[fl.Src], job.Hosts[fl.Dst]
		lo := 0.0
		if src != dst {
			lo = float64(ft.Hops(src, dst))*us + fl.Fraction*job.Bytes*8/(100*gbps)
		}
		if d := r.FlowFinish[f] - r.FlowStart[f]; d < lo*(1-1e-9) {
			t.Fatalf("%s/%s n=%d flow %d took %g < %g", p.Op, p.Algo, p.Ranks, f, d, lo)
		}
		last = max(last, r.FlowFinish[f])
	}
	if r.Elapsed != last {
		t.Fatalf("elapsed %g, last finish %g", r.Elapsed, last)
	}
}

// TestZeroBytes: an empty message costs the latencies only.
func TestZeroBytes(t *testing.T) {
	star := must(topo.Star(4, 100*gbps, 2*us))
	r := run(t, New(star, 1), Job{Hosts: identityHosts(4), Bytes: 0}, pattern.RingAllReduce(4), 2)
	for _, e := range r {
		if !near(e.Elapsed, 6*4*us, 1e-9) {
			t.Errorf("epoch %d: %g, want %g", e.Epoch, e.Elapsed, 24*us)
		}
	}
}
