package topo

import "testing"

func TestWithNICs(t *testing.T) {
	tests := []struct {
		name  string
		base  *Topology
		nics  int
		hosts int
	}{
		{"star3x2", must(Star(3, 100*gbps, us)), 2, 3},
		{"fattree4x4", must(FatTree(4, 100*gbps, us)), 4, 16},
		{"clos-small x8", must(Clos(2, 2, 3, 100*gbps, us)), 8, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.base.WithSeed(7)
			n := must(b.WithNICs(tt.nics))
			if n.Hosts() != tt.hosts*tt.nics || n.Switches() != b.Switches() || n.Seed() != 7 {
				t.Fatalf("hosts %d, switches %d, seed %d; want %d, %d, 7", n.Hosts(), n.Switches(), n.Seed(), tt.hosts*tt.nics, b.Switches())
			}
			// Every link of the base keeps its id and its ends' names.
			for id := 0; id < b.NumLinks(); id++ {
				l, m := b.Link(LinkID(id)), n.Link(LinkID(id))
				if b.Name(l.From) != n.Name(m.From) || b.Name(l.To) != n.Name(m.To) || l.Capacity != m.Capacity {
					t.Fatalf("link %d: %s->%s became %s->%s", id, b.Name(l.From), b.Name(l.To), n.Name(m.From), n.Name(m.To))
				}
			}
			seen := map[int]bool{}
			for h := 0; h < tt.hosts; h++ {
				for i := 0; i < tt.nics; i++ {
					v := n.NIC(h, i)
					if seen[v] || v >= n.Hosts() || n.HostOf(v) != h {
						t.Fatalf("NIC(%d, %d) = node %d (HostOf %d), seen before %v", h, i, v, n.HostOf(v), seen[v])
					}
					seen[v] = true
					// Each NIC has the host's cables: one up, one down.
					if len(n.Out(v)) != len(b.Out(h)) {
						t.Errorf("NIC(%d, %d) has %d out-links, host has %d", h, i, len(n.Out(v)), len(b.Out(h)))
					}
				}
			}
			// A NIC's path leaves by its own cable and never transits a host.
			src, dst := n.NIC(0, tt.nics-1), n.NIC(tt.hosts-1, tt.nics-1)
			p := n.Path(src, dst, 3)
			checkPath(t, n, p, src, dst)
			if n.Hops(src, dst) != b.Hops(0, tt.hosts-1) {
				t.Errorf("hops %d, base %d", n.Hops(src, dst), b.Hops(0, tt.hosts-1))
			}
		})
	}
	s := must(Star(2, gbps, us))
	if one, _ := s.WithNICs(1); one != s {
		t.Error("WithNICs(1) built a new network")
	}
	if s.HostOf(1) != 1 || s.NIC(1, 0) != 1 {
		t.Error("one NIC a host: HostOf or NIC is not the identity")
	}
	if _, err := s.WithNICs(0); err == nil {
		t.Error("WithNICs(0): no error")
	}
	if _, err := must(s.WithNICs(2)).WithNICs(2); err == nil {
		t.Error("WithNICs twice: no error")
	}
}
