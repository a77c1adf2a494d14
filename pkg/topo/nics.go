package topo

import "fmt"

// WithNICs returns the network with every host given n NICs (one per GPU),
// each on a copy of every cable of the host, so that each rail of a job has
// its own uplink. NIC 0 of host h stays node h and every link keeps its id,
// so host numbers and link ids of t (failed cables, external flows) mean
// the same in the result; NIC i > 0 of host h is node NIC(h, i), switches
// follow, and the copied cables are appended. Hosts() of the result counts
// NICs. n = 1 returns t.
func (t *Topology) WithNICs(n int) (*Topology, error) {
	if n < 1 {
		return nil, fmt.Errorf("topo: %d NICs a host, want >= 1", n)
	}
	if n == 1 {
		return t, nil
	}
	if t.nics > 1 {
		return nil, fmt.Errorf("topo: hosts already have %d NICs", t.nics)
	}
	h := t.hosts
	extra := h * (n - 1)
	node := func(v int) int {
		if v < h {
			return v
		}
		return v + extra
	}
	names := make([]string, 0, len(t.names)+extra)
	names = append(names, t.names[:h]...)
	for host := 0; host < h; host++ {
		for i := 1; i < n; i++ {
			names = append(names, fmt.Sprintf("%s.nic%d", t.names[host], i))
		}
	}
	names = append(names, t.names[h:]...)
	links := make([]Link, 0, len(t.links)*2)
	for _, l := range t.links {
		l.From, l.To = node(l.From), node(l.To)
		links = append(links, l)
	}
	for host := 0; host < h; host++ {
		for i := 1; i < n; i++ {
			nic := h + host*(n-1) + i - 1
			for _, l := range t.links {
				switch host {
				case l.From:
					links = append(links, Link{From: nic, To: node(l.To), Capacity: l.Capacity, Latency: l.Latency})
				case l.To:
					links = append(links, Link{From: node(l.From), To: nic, Capacity: l.Capacity, Latency: l.Latency})
				}
			}
		}
	}
	u, err := New(h*n, len(t.names)-h, links, names)
	if err != nil {
		return nil, err
	}
	u.nics, u.seed = n, t.seed
	return u, nil
}

// NIC is the node of NIC i of host h in a network built by WithNICs (h
// itself for i = 0 or one NIC a host).
func (t *Topology) NIC(h, i int) int {
	if i == 0 {
		return h
	}
	return t.machines() + h*(t.nics-1) + i - 1
}

// HostOf is the host whose NIC node is: node itself unless the network was
// built by WithNICs. Flows between two NICs of one host never enter the
// network.
func (t *Topology) HostOf(node int) int {
	if m := t.machines(); t.nics > 1 && node >= m && node < t.hosts {
		return (node - m) / (t.nics - 1)
	}
	return node
}

// machines is the number of hosts, each of nics NICs.
func (t *Topology) machines() int { return t.hosts / max(t.nics, 1) }
