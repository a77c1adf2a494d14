package topo

import "fmt"

// The builders add every cable as two links, the upward or host-side
// direction first: link 2i and 2i+1 are the two directions of cable i, and
// cable h (h < hosts) is host h's cable, so link 2h is host h's uplink and
// 2h+1 its downlink.

type builder struct {
	links    []Link
	cap, lat float64
}

func (b *builder) cable(a, c int) {
	b.links = append(b.links, Link{From: a, To: c, Capacity: b.cap, Latency: b.lat}, Link{From: c, To: a, Capacity: b.cap, Latency: b.lat})
}

// Star is hosts hosts on one switch (node hosts).
func Star(hosts int, capBps, latency float64) (*Topology, error) {
	if hosts < 1 {
		return nil, fmt.Errorf("topo: star: need at least 1 host, got %d", hosts)
	}
	b := builder{cap: capBps, lat: latency}
	names := make([]string, 0, hosts+1)
	for h := 0; h < hosts; h++ {
		b.cable(h, hosts)
		names = append(names, fmt.Sprintf("h%d", h))
	}
	names = append(names, "sw")
	return New(hosts, 1, b.links, names)
}

// FatTree is the k-ary fat tree of Al-Fares et al. (2008): k pods of k/2
// edge and k/2 aggregation switches, (k/2)^2 core switches, k^3/4 hosts
// (k/2 per edge switch). Hosts are numbered pod by pod, edge switch by edge
// switch; switches follow as all edges, all aggregations, all cores.
// Aggregation switch j of every pod connects to cores j*k/2 .. j*k/2+k/2-1.
func FatTree(k int, capBps, latency float64) (*Topology, error) {
	if k < 2 || k%2 != 0 {
		return nil, fmt.Errorf("topo: fat tree: k must be even and >= 2, got %d", k)
	}
	if k > 256 {
		return nil, fmt.Errorf("topo: fat tree: k = %d is too large (at most 256)", k)
	}
	half := k / 2
	hosts := k * half * half
	edge0 := hosts
	agg0 := edge0 + k*half
	core0 := agg0 + k*half
	names := make([]string, 0, core0+half*half)
	for h := 0; h < hosts; h++ {
		names = append(names, fmt.Sprintf("h%d", h))
	}
	for _, kind := range []string{"edge", "agg"} {
		for p := 0; p < k; p++ {
			for i := 0; i < half; i++ {
				names = append(names, fmt.Sprintf("%s%d.%d", kind, p, i))
			}
		}
	}
	for c := 0; c < half*half; c++ {
		names = append(names, fmt.Sprintf("core%d", c))
	}
	b := builder{cap: capBps, lat: latency}
	for h := 0; h < hosts; h++ {
		b.cable(h, edge0+h/half)
	}
	for p := 0; p < k; p++ {
		for e := 0; e < half; e++ {
			for a := 0; a < half; a++ {
				b.cable(edge0+p*half+e, agg0+p*half+a)
			}
		}
	}
	for p := 0; p < k; p++ {
		for a := 0; a < half; a++ {
			for c := 0; c < half; c++ {
				b.cable(agg0+p*half+a, core0+a*half+c)
			}
		}
	}
	return New(hosts, len(names)-hosts, b.links, names)
}

// Clos is the two-tier network of the Alibaba trace the paper simulates
// (48 ToRs, 3 aggregation switches, 15 hosts a ToR: 720 hosts): every host
// on one ToR, every ToR wired to every aggregation switch. Hosts are
// numbered ToR by ToR; switches follow as ToRs, then aggregations.
func Clos(tors, aggs, hostsPerTor int, capBps, latency float64) (*Topology, error) {
	if tors < 1 || aggs < 1 || hostsPerTor < 1 {
		return nil, fmt.Errorf("topo: clos: need at least 1 ToR, 1 aggregation switch and 1 host per ToR, got %d, %d, %d", tors, aggs, hostsPerTor)
	}
	hosts := tors * hostsPerTor
	tor0 := hosts
	agg0 := tor0 + tors
	names := make([]string, 0, agg0+aggs)
	for h := 0; h < hosts; h++ {
		names = append(names, fmt.Sprintf("h%d", h))
	}
	for i := 0; i < tors; i++ {
		names = append(names, fmt.Sprintf("tor%d", i))
	}
	for i := 0; i < aggs; i++ {
		names = append(names, fmt.Sprintf("agg%d", i))
	}
	b := builder{cap: capBps, lat: latency}
	for h := 0; h < hosts; h++ {
		b.cable(h, tor0+h/hostsPerTor)
	}
	for i := 0; i < tors; i++ {
		for a := 0; a < aggs; a++ {
			b.cable(tor0+i, agg0+a)
		}
	}
	return New(hosts, tors+aggs, b.links, names)
}
