// Package topo holds network topologies for the simulator and routes flows
// over them with ECMP.
//
// Nodes are numbered hosts first (0..Hosts()-1), then switches. Links are
// directed; a cable is two links. A Topology is immutable once built, so one
// value may be shared by several simulations, also concurrently.
package topo

import (
	"fmt"
	"math"

	"github.com/react-torch/react-torch/internal/splitmix"
)

// LinkID indexes Topology.Links.
type LinkID int32

// Link is one direction of a cable.
type Link struct {
	From, To int
	Capacity float64 // bits per second
	Latency  float64 // seconds
}

// MaxRouteEntries bounds hosts x nodes, the size of the distance table
// routing keeps (two bytes an entry).
const MaxRouteEntries = 1 << 27

// Topology is a network of hosts and switches with precomputed hop
// distances for ECMP routing.
type Topology struct {
	hosts  int
	names  []string // one per node
	links  []Link
	outOff []int32 // CSR of out-links per node
	out    []LinkID
	dist   []int16 // hops from node to host: dist[dst*nodes+node], -1 unreachable
	seed   uint64
	nics   int // NICs a host, when built by WithNICs; 0 otherwise
}

// New builds a topology of hosts and switches (numbered after the hosts)
// over directed links. names may be nil (hosts are then h0.., switches
// s0..); otherwise it names every node. Every host must reach every other
// host; paths never pass through a host.
func New(hosts, switches int, links []Link, names []string) (*Topology, error) {
	if hosts < 1 {
		return nil, fmt.Errorf("topo: need at least 1 host, got %d", hosts)
	}
	if switches < 0 {
		return nil, fmt.Errorf("topo: negative switch count %d", switches)
	}
	nodes := hosts + switches
	if nodes > math.MaxInt32 || int64(hosts)*int64(nodes) > MaxRouteEntries {
		return nil, fmt.Errorf("topo: %d hosts x %d nodes exceeds the routing table limit of %d entries", hosts, nodes, MaxRouteEntries)
	}
	if names == nil {
		names = make([]string, nodes)
		for i := range names {
			if i < hosts {
				names[i] = fmt.Sprintf("h%d", i)
			} else {
				names[i] = fmt.Sprintf("s%d", i-hosts)
			}
		}
	} else if len(names) != nodes {
		return nil, fmt.Errorf("topo: %d names for %d nodes", len(names), nodes)
	}
	t := &Topology{hosts: hosts, names: append([]string(nil), names...), links: append([]Link(nil), links...)}
	names = t.names
	links = t.links
	for i, l := range links {
		switch {
		case l.From < 0 || l.From >= nodes:
			return nil, fmt.Errorf("topo: link %d: from node %d out of range [0, %d)", i, l.From, nodes)
		case l.To < 0 || l.To >= nodes:
			return nil, fmt.Errorf("topo: link %d: to node %d out of range [0, %d)", i, l.To, nodes)
		case l.From == l.To:
			return nil, fmt.Errorf("topo: link %d: loop at node %s", i, names[l.From])
		case !(l.Capacity > 0) || math.IsInf(l.Capacity, 0):
			return nil, fmt.Errorf("topo: link %d (%s->%s): capacity %v bits/s, want a positive finite number", i, names[l.From], names[l.To], l.Capacity)
		case !(l.Latency >= 0) || math.IsInf(l.Latency, 0):
			return nil, fmt.Errorf("topo: link %d (%s->%s): latency %v s, want a finite number >= 0", i, names[l.From], names[l.To], l.Latency)
		}
	}
	t.outOff, t.out = csr(nodes, links, func(l Link) int { return l.From })
	if err := t.route(); err != nil {
		return nil, err
	}
	return t, nil
}

// csr groups link ids by the node key picks, in link id order.
func csr(nodes int, links []Link, key func(Link) int) ([]int32, []LinkID) {
	off := make([]int32, nodes+1)
	for _, l := range links {
		off[key(l)+1]++
	}
	for i := 0; i < nodes; i++ {
		off[i+1] += off[i]
	}
	ids := make([]LinkID, len(links))
	next := append([]int32(nil), off[:nodes]...)
	for i, l := range links {
		k := key(l)
		ids[next[k]] = LinkID(i)
		next[k]++
	}
	return off, ids
}

// route fills the hop distance from every node to every host by a BFS
// over reversed links from each host. A host other than the destination
// gets a distance but is never expanded, so no path transits a host.
func (t *Topology) route() error {
	nodes := len(t.names)
	inOff, in := csr(nodes, t.links, func(l Link) int { return l.To })
	t.dist = make([]int16, t.hosts*nodes)
	queue := make([]int32, 0, nodes)
	for dst := 0; dst < t.hosts; dst++ {
		d := t.dist[dst*nodes : (dst+1)*nodes]
		for i := range d {
			d[i] = -1
		}
		d[dst] = 0
		queue = append(queue[:0], int32(dst))
		for qi := 0; qi < len(queue); qi++ {
			v := queue[qi]
			if d[v] == math.MaxInt16 {
				return fmt.Errorf("topo: paths to host %s longer than %d hops", t.names[dst], math.MaxInt16)
			}
			for _, id := range in[inOff[v]:inOff[v+1]] {
				w := t.links[id].From
				if d[w] >= 0 {
					continue
				}
				d[w] = d[v] + 1
				if w >= t.hosts {
					queue = append(queue, int32(w))
				}
			}
		}
		for src := 0; src < t.hosts; src++ {
			if d[src] < 0 {
				return fmt.Errorf("topo: host %s cannot reach host %s", t.names[src], t.names[dst])
			}
		}
	}
	return nil
}

// Hosts is the number of hosts (nodes 0..Hosts()-1).
func (t *Topology) Hosts() int { return t.hosts }

// Switches is the number of switches (nodes Hosts()..Nodes()-1).
func (t *Topology) Switches() int { return len(t.names) - t.hosts }

// Nodes is the number of hosts and switches.
func (t *Topology) Nodes() int { return len(t.names) }

// Name is the node's name.
func (t *Topology) Name(node int) string { return t.names[node] }

// NumLinks is the number of directed links.
func (t *Topology) NumLinks() int { return len(t.links) }

// Link returns link id.
func (t *Topology) Link(id LinkID) Link { return t.links[id] }

// Out lists the links leaving node, in id order. The slice is shared: do
// not modify it.
func (t *Topology) Out(node int) []LinkID { return t.out[t.outOff[node]:t.outOff[node+1]] }

// Find returns the first link from -> to.
func (t *Topology) Find(from, to int) (LinkID, bool) {
	for _, id := range t.Out(from) {
		if t.links[id].To == to {
			return id, true
		}
	}
	return -1, false
}

// Hops is the number of links on a shortest path from node src to host dst.
func (t *Topology) Hops(src, dst int) int { return int(t.dist[dst*len(t.names)+src]) }

// Seed is the ECMP seed the per-switch hash seeds derive from.
func (t *Topology) Seed() uint64 { return t.seed }

// WithSeed returns the same network with another ECMP seed; it shares the
// routing tables with t.
func (t *Topology) WithSeed(seed uint64) *Topology {
	u := *t
	u.seed = seed
	return &u
}

// Latency sums the latencies of path's links.
func (t *Topology) Latency(path []LinkID) float64 {
	s := 0.0
	for _, id := range path {
		s += t.links[id].Latency
	}
	return s
}

// Path is the ECMP path of the flow (src host, dst host, port): a shortest
// path by hop count on which every node picks its next hop among the
// equal-cost choices by a hash of (src, dst, port) mixed with the node's
// own seed. Same seed, same path. Empty when src == dst. The hop tables
// are precomputed, so a path costs a few hashes per hop; callers that route
// the same connection often (netsim) cache the result.
func (t *Topology) Path(src, dst, port int) []LinkID {
	return t.AppendPath(nil, src, dst, port)
}

// AppendPath appends Path(src, dst, port) to buf.
func (t *Topology) AppendPath(buf []LinkID, src, dst, port int) []LinkID {
	if src < 0 || src >= t.hosts || dst < 0 || dst >= t.hosts {
		panic(fmt.Sprintf("topo: Path(%d, %d): hosts are [0, %d)", src, dst, t.hosts))
	}
	nodes := len(t.names)
	d := t.dist[dst*nodes : (dst+1)*nodes]
	key := splitmix.Mix(uint64(uint32(src))<<32|uint64(uint32(dst))) ^ splitmix.Mix(uint64(port)+golden)
	for u := src; u != dst; {
		want := d[u] - 1
		n := uint64(0)
		for _, id := range t.Out(u) {
			if v := t.links[id].To; d[v] == want && (v >= t.hosts || v == dst) {
				n++
			}
		}
		pick := splitmix.Mix(key^t.nodeSeed(u)) % n
		for _, id := range t.Out(u) {
			if v := t.links[id].To; d[v] == want && (v >= t.hosts || v == dst) {
				if pick == 0 {
					buf = append(buf, id)
					u = v
					break
				}
				pick--
			}
		}
	}
	return buf
}

const golden = 0x9e3779b97f4a7c15

func (t *Topology) nodeSeed(u int) uint64 { return splitmix.Mix(t.seed + uint64(u+1)*golden) }
