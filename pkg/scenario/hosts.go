package scenario

import (
	"fmt"
	"math"

	"github.com/react-torch/react-torch/pkg/netsim"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/react-torch/react-torch/pkg/topo"
)

// Hosts with several GPUs. With TopologySpec.GPUsPerHost = L > 1 a job's
// ranks are hosts and every job is hierarchical, as the runtime's will be:
// an intra-host reduce-scatter, the job's pattern over its hosts on every
// rail at once (local GPU i of every host runs it on 1/L of the bytes, as
// NCCL's channels do), an intra-host all-gather. Only the inter-host
// pattern crosses the network, so only it is tuned, and REACT's vertices
// are hosts: one tuner a job, whose swaps move a host with all its rails.
// The intra-host phases are local work on NVLink, not shared with the
// network: each takes (L-1)/L of the message at IntraCapacity (a ring's
// bytes a GPU). A flat variant runs one pattern over all H*L GPUs instead,
// rank r on host r/L, its flows within a host at IntraCapacity.

// DefaultIntraCapacity is a GPU's intra-host bandwidth, bits/s: NVLink 4's
// 450 GB/s a direction.
const DefaultIntraCapacity = 3.6e12

// maxGPUsPerHost bounds L against typos.
const maxGPUsPerHost = 64

// NIC modes of TopologySpec.NIC.
const (
	NICHost = "host" // the host's L GPUs share its NIC (and cables)
	NICGPU  = "gpu"  // one NIC a GPU, each on its own copy of the host's cables
)

func (t *TopologySpec) gpus() int { return max(t.GPUsPerHost, 1) }

func (t *TopologySpec) nic() string {
	if t.NIC == "" {
		return NICHost
	}
	return t.NIC
}

func (t *TopologySpec) intra() float64 {
	if t.IntraCapacity == 0 {
		return DefaultIntraCapacity
	}
	return t.IntraCapacity
}

func (t *TopologySpec) checkHosts() error {
	switch {
	case t.GPUsPerHost < 0 || t.GPUsPerHost > maxGPUsPerHost:
		return fmt.Errorf("gpus_per_host = %d, want in [1, %d]", t.GPUsPerHost, maxGPUsPerHost)
	case t.NIC != "" && t.NIC != NICHost && t.NIC != NICGPU:
		return fmt.Errorf("nic %q, want %s (one NIC a host) or %s (one a GPU)", t.NIC, NICHost, NICGPU)
	case !(t.IntraCapacity >= 0) || math.IsInf(t.IntraCapacity, 0):
		return fmt.Errorf("intra_capacity = %v bits/s, want a positive number", t.IntraCapacity)
	}
	return nil
}

// simNetwork is the network the simulator runs on: net itself, or with
// one NIC a GPU, net with every host's L NICs (host numbers and link ids
// unchanged).
func (t *TopologySpec) simNetwork(net *topo.Topology) (*topo.Topology, error) {
	if t.gpus() == 1 || t.nic() != NICGPU {
		return net, nil
	}
	return net.WithNICs(t.gpus())
}

// gpuNode is the node GPU i of host h sends from: the host, or its NIC i.
func (in *instance) gpuNode(h, i int) int {
	if in.sc.Topology.nic() == NICGPU {
		return in.simNet.NIC(h, i)
	}
	return h
}

// netJob is job i as the simulator runs it: hierarchical, on L rails,
// its intra-host phases before and after.
func (in *instance) netJob(i int) netsim.Job {
	spec, hosts := &in.sc.Jobs[i], in.hosts[i]
	j := netsim.Job{Hosts: hosts, Bytes: spec.Bytes, Ports: spec.ports(), Gap: spec.Gap}
	l := in.sc.Topology.gpus()
	if l == 1 {
		return j
	}
	j.Hosts = make([]int, 0, l*len(hosts))
	for rail := range l {
		for _, h := range hosts {
			j.Hosts = append(j.Hosts, in.gpuNode(h, rail))
		}
	}
	j.Rails, j.Intra = l, in.sc.Topology.intra()
	phase := float64(l-1) / float64(l) * spec.Bytes * 8 / j.Intra
	before, after := intraPhases(in.patterns[i].Op)
	if before {
		j.Before = phase
	}
	if after {
		j.After = phase
	}
	return j
}

// intraPhases says which intra-host phases a hierarchical op has: a
// reduce-scatter (or the root's scatter) before the inter-host pattern,
// an all-gather (or the gather to the root) after it.
func intraPhases(op ten.Op) (before, after bool) {
	switch op {
	case ten.AllGather:
		return false, true
	case ten.ReduceScatter:
		return true, false
	}
	return true, true
}

// flatJob is job i run flat: one rank a GPU, rank r on GPU r%L of host
// r/L.
func (in *instance) flatJob(i int) netsim.Job {
	j := in.netJob(i)
	l := in.sc.Topology.gpus()
	j.Hosts = make([]int, 0, l*len(in.hosts[i]))
	for _, h := range in.hosts[i] {
		for g := range l {
			j.Hosts = append(j.Hosts, in.gpuNode(h, g))
		}
	}
	j.Rails, j.Before, j.After = 0, 0, 0
	return j
}

// railFCTs is each pattern flow's FCT on its slowest rail: the rails run
// one pattern at once and the epoch waits for the slowest, so the slowest
// copy of a flow is the one a swap has to shorten.
func railFCTs(r netsim.EpochResult) []float64 {
	n := len(r.Pattern.Flows)
	fct := make([]float64, n)
	for g := range r.FlowStart {
		fct[g%n] = max(fct[g%n], r.FlowFinish[g]-r.FlowStart[g])
	}
	return fct
}
