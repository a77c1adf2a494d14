package topo

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const (
	gbps = 1e9
	us   = 1e-6
)

// must is for builders whose arguments are known to be valid.
func must(topo *Topology, err error) *Topology {
	if err != nil {
		panic(err)
	}
	return topo
}

func TestBuilderCounts(t *testing.T) {
	tests := []struct {
		name                  string
		build                 func() (*Topology, error)
		hosts, switches, link int
	}{
		{"star16", func() (*Topology, error) { return Star(16, 100*gbps, us) }, 16, 1, 32},
		{"star1", func() (*Topology, error) { return Star(1, 100*gbps, us) }, 1, 1, 2},
		{"fattree2", func() (*Topology, error) { return FatTree(2, 100*gbps, us) }, 2, 5, 2 * 6},
		{"fattree4", func() (*Topology, error) { return FatTree(4, 100*gbps, us) }, 16, 20, 2 * 48},
		{"fattree8", func() (*Topology, error) { return FatTree(8, 100*gbps, us) }, 128, 80, 2 * 384},
		{"clos-alibaba", func() (*Topology, error) { return Clos(48, 3, 15, 100*gbps, us) }, 720, 51, 2 * (720 + 48*3)},
		{"clos-small", func() (*Topology, error) { return Clos(2, 2, 3, 100*gbps, us) }, 6, 4, 2 * (6 + 4)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			topo := must(tt.build())
			if topo.Hosts() != tt.hosts || topo.Switches() != tt.switches || topo.NumLinks() != tt.link {
				t.Errorf("hosts, switches, links = %d, %d, %d, want %d, %d, %d",
					topo.Hosts(), topo.Switches(), topo.NumLinks(), tt.hosts, tt.switches, tt.link)
			}
			if topo.Nodes() != tt.hosts+tt.switches {
				t.Errorf("nodes = %d", topo.Nodes())
			}
			for h := 0; h < topo.Hosts(); h++ {
				up, down := topo.Link(LinkID(2*h)), topo.Link(LinkID(2*h+1))
				if up.From != h || down.To != h || up.To != down.From || up.To < topo.Hosts() {
					t.Fatalf("host %d cable is %+v / %+v, want links 2h, 2h+1", h, up, down)
				}
			}
		})
	}
}

// checkPath fails unless path is a chain of links from src to dst of
// shortest length that transits no host.
func checkPath(t *testing.T, topo *Topology, path []LinkID, src, dst int) {
	t.Helper()
	if len(path) != topo.Hops(src, dst) {
		t.Fatalf("path %d->%d has %d links, shortest is %d", src, dst, len(path), topo.Hops(src, dst))
	}
	at := src
	for i, id := range path {
		l := topo.Link(id)
		if l.From != at {
			t.Fatalf("path %d->%d: link %d starts at %d, want %d", src, dst, i, l.From, at)
		}
		if i < len(path)-1 && l.To < topo.Hosts() {
			t.Fatalf("path %d->%d transits host %d", src, dst, l.To)
		}
		at = l.To
	}
	if at != dst {
		t.Fatalf("path %d->%d ends at %d", src, dst, at)
	}
}

func TestFatTreePaths(t *testing.T) {
	ft := must(FatTree(8, 100*gbps, us))
	tests := []struct {
		name     string
		src, dst int
		links    int
		paths    int // distinct ECMP paths over many ports
	}{
		{"same edge", 0, 3, 2, 1},
		{"same pod", 0, 4, 4, 4},
		{"other pod", 0, 127, 6, 16},
		{"other pod back", 100, 5, 6, 16},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen := map[string]bool{}
			for port := 0; port < 400; port++ {
				p := ft.Path(tt.src, tt.dst, port)
				if len(p) != tt.links {
					t.Fatalf("port %d: %d links, want %d", port, len(p), tt.links)
				}
				checkPath(t, ft, p, tt.src, tt.dst)
				seen[keyOf(p)] = true
			}
			if len(seen) != tt.paths {
				t.Errorf("%d distinct paths over 400 ports, want all %d", len(seen), tt.paths)
			}
			if got := ft.Latency(ft.Path(tt.src, tt.dst, 0)); !near(got, float64(tt.links)*us) {
				t.Errorf("latency %v", got)
			}
		})
	}
	if p := ft.Path(7, 7, 3); len(p) != 0 {
		t.Errorf("self path %v, want empty", p)
	}
}

func near(a, b float64) bool { d := a - b; return d < 1e-15 && d > -1e-15 }

func keyOf(p []LinkID) string {
	var sb strings.Builder
	for _, id := range p {
		sb.WriteString(string(rune(id + 1)))
	}
	return sb.String()
}

func TestClosPaths(t *testing.T) {
	c := must(Clos(48, 3, 15, 100*gbps, us))
	seen := map[string]bool{}
	for port := 0; port < 100; port++ {
		p := c.Path(0, 719, port)
		checkPath(t, c, p, 0, 719)
		if len(p) != 4 {
			t.Fatalf("ToR to ToR path has %d links, want 4", len(p))
		}
		seen[keyOf(p)] = true
	}
	if len(seen) != 3 {
		t.Errorf("%d distinct paths between ToRs, want 3 (one per aggregation)", len(seen))
	}
	if p := c.Path(0, 14, 0); len(p) != 2 {
		t.Errorf("same ToR path has %d links, want 2", len(p))
	}
}

func TestSeedDeterminism(t *testing.T) {
	a := must(FatTree(8, 100*gbps, us)).WithSeed(42)
	b := must(FatTree(8, 100*gbps, us)).WithSeed(42)
	c := a.WithSeed(43)
	differ := 0
	for port := 0; port < 64; port++ {
		for _, pair := range [][2]int{{0, 127}, {17, 90}, {64, 1}} {
			pa, pb, pc := a.Path(pair[0], pair[1], port), b.Path(pair[0], pair[1], port), c.Path(pair[0], pair[1], port)
			if !slices.Equal(pa, pb) {
				t.Fatalf("same seed, different paths for %v port %d: %v vs %v", pair, port, pa, pb)
			}
			if !slices.Equal(pa, pc) {
				differ++
			}
		}
	}
	if differ == 0 {
		t.Error("seeds 42 and 43 route every flow the same")
	}
	if a.Seed() != 42 || c.Seed() != 43 {
		t.Error("Seed() wrong")
	}
}

// TestECMPSpreadsPairs checks that port 0 of many host pairs does not pile
// onto one core switch (the per-switch seeds must decorrelate choices).
func TestECMPSpreadsPairs(t *testing.T) {
	ft := must(FatTree(8, 100*gbps, us))
	cores := map[int]int{}
	for src := 0; src < 16; src++ {
		for dst := 64; dst < 80; dst++ {
			p := ft.Path(src, dst, 0)
			cores[ft.Link(p[2]).To]++
		}
	}
	if len(cores) != 16 {
		t.Errorf("256 inter-pod pairs used %d of 16 cores", len(cores))
	}
	for c, n := range cores {
		if n > 40 {
			t.Errorf("core %s carries %d of 256 pairs", ft.Name(c), n)
		}
	}
}

func TestBuilderErrors(t *testing.T) {
	tests := []struct {
		name string
		err  func() error
		want string
	}{
		{"star no hosts", func() error { _, err := Star(0, gbps, us); return err }, "at least 1 host"},
		{"star zero capacity", func() error { _, err := Star(2, 0, us); return err }, "capacity 0"},
		{"star negative latency", func() error { _, err := Star(2, gbps, -1); return err }, "latency -1"},
		{"fat tree odd k", func() error { _, err := FatTree(5, gbps, us); return err }, "k must be even"},
		{"clos no aggs", func() error { _, err := Clos(2, 0, 3, gbps, us); return err }, "aggregation"},
		{"disconnected", func() error {
			_, err := New(2, 1, []Link{{From: 0, To: 2, Capacity: 1, Latency: 0}, {From: 2, To: 0, Capacity: 1, Latency: 0}}, nil)
			return err
		}, "host h1 cannot reach host h0"},
		{"one way", func() error {
			_, err := New(2, 1, []Link{{From: 0, To: 2, Capacity: 1}, {From: 2, To: 1, Capacity: 1}}, nil)
			return err
		}, "host h1 cannot reach host h0"},
		{"link out of range", func() error { _, err := New(2, 0, []Link{{From: 0, To: 5, Capacity: 1}}, nil); return err }, "to node 5 out of range"},
		{"names", func() error { _, err := New(2, 0, nil, []string{"a"}); return err }, "1 names for 2 nodes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.err()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestNoHostTransit: h0 reaches h2 via h1 in two hops, but hosts do not
// forward, so the route is the three-hop one over the switches.
func TestNoHostTransit(t *testing.T) {
	link := func(a, b int) []Link {
		return []Link{{From: a, To: b, Capacity: 1, Latency: 1}, {From: b, To: a, Capacity: 1, Latency: 1}}
	}
	var links []Link
	for _, c := range [][2]int{{0, 1}, {1, 2}, {0, 3}, {3, 4}, {4, 2}} {
		links = append(links, link(c[0], c[1])...)
	}
	topo := must(New(3, 2, links, nil))
	p := topo.Path(0, 2, 0)
	checkPath(t, topo, p, 0, 2)
	if len(p) != 3 {
		t.Fatalf("path %v, want the 3 links over the switches", p)
	}
	if len(topo.Path(0, 1, 0)) != 1 {
		t.Error("direct host link not used")
	}
}

const sampleJSON = `{
  "hosts": ["a", "b", "c"],
  "switches": ["sw"],
  "capacity": 100e9,
  "latency": 1e-6,
  "seed": 9,
  "links": [
    {"from": "a", "to": "sw"},
    {"from": "b", "to": "sw", "capacity": 50e9},
    {"from": "sw", "to": "c", "directed": true},
    {"from": "c", "to": "sw", "latency": 2e-6, "directed": true}
  ]
}`

func TestFromJSON(t *testing.T) {
	topo, err := FromJSON([]byte(sampleJSON))
	if err != nil {
		t.Fatal(err)
	}
	if topo.Hosts() != 3 || topo.Switches() != 1 || topo.NumLinks() != 6 || topo.Seed() != 9 {
		t.Fatalf("hosts %d switches %d links %d seed %d", topo.Hosts(), topo.Switches(), topo.NumLinks(), topo.Seed())
	}
	want := []Link{
		{0, 3, 100e9, 1e-6}, {3, 0, 100e9, 1e-6},
		{1, 3, 50e9, 1e-6}, {3, 1, 50e9, 1e-6},
		{3, 2, 100e9, 1e-6}, {2, 3, 100e9, 2e-6},
	}
	for i, l := range want {
		if topo.Link(LinkID(i)) != l {
			t.Errorf("link %d = %+v, want %+v", i, topo.Link(LinkID(i)), l)
		}
	}
	if id, ok := topo.Find(2, 3); !ok || id != 5 {
		t.Errorf("Find(c, sw) = %d, %v", id, ok)
	}
	if topo.Name(3) != "sw" {
		t.Errorf("name %q", topo.Name(3))
	}
}

func TestFromJSONErrors(t *testing.T) {
	tests := []struct {
		name, json, want string
	}{
		{"syntax", `{"hosts": [`, "unexpected EOF"},
		{"unknown field", `{"hosts": ["a"], "linkz": []}`, `unknown field "linkz"`},
		{"no hosts", `{"switches": ["s"]}`, "no hosts"},
		{"duplicate name", `{"hosts": ["a", "b"], "switches": ["a"]}`, `"a" used twice`},
		{"empty name", `{"hosts": ["a", ""]}`, "node 1 has an empty name"},
		{"unknown node", `{"hosts": ["a", "b"], "capacity": 1, "latency": 0, "links": [{"from": "a", "to": "x"}]}`, `link 0: unknown node "x" in to`},
		{"no capacity", `{"hosts": ["a", "b"], "latency": 0, "links": [{"from": "a", "to": "b"}]}`, "link 0 (a-b): no capacity"},
		{"no latency", `{"hosts": ["a", "b"], "capacity": 1, "links": [{"from": "a", "to": "b"}]}`, "link 0 (a-b): no latency"},
		{"zero capacity", `{"hosts": ["a", "b"], "latency": 0, "links": [{"from": "a", "to": "b", "capacity": 0}]}`, "capacity 0"},
		{"negative latency", `{"hosts": ["a", "b"], "capacity": 1, "links": [{"from": "a", "to": "b", "latency": -1}]}`, "latency -1"},
		{"self loop", `{"hosts": ["a", "b"], "capacity": 1, "latency": 0, "links": [{"from": "a", "to": "a"}]}`, "loop at node a"},
		{"disconnected", `{"hosts": ["a", "b"], "switches": ["s"], "capacity": 1, "latency": 0, "links": [{"from": "a", "to": "s"}]}`, "cannot reach host"},
		{"trailing", `{"hosts": ["a"]} {}`, "data after"},
		{"bad seed", `{"hosts": ["a"], "seed": -1}`, "seed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FromJSON([]byte(tt.json))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("FromJSON error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestJSONGolden(t *testing.T) {
	ft := must(FatTree(4, 100*gbps, us)).WithSeed(3)
	got, err := ft.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "fattree4.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("MarshalJSON differs from %s (run with -update if intended)", golden)
	}
	back, err := FromJSON(want)
	if err != nil {
		t.Fatal(err)
	}
	sameTopology(t, ft, back)
}

func sameTopology(t *testing.T, a, b *Topology) {
	t.Helper()
	if a.Hosts() != b.Hosts() || a.Nodes() != b.Nodes() || a.NumLinks() != b.NumLinks() || a.Seed() != b.Seed() {
		t.Fatalf("shape differs: %d/%d/%d/%d vs %d/%d/%d/%d", a.Hosts(), a.Nodes(), a.NumLinks(), a.Seed(), b.Hosts(), b.Nodes(), b.NumLinks(), b.Seed())
	}
	for i := 0; i < a.NumLinks(); i++ {
		if a.Link(LinkID(i)) != b.Link(LinkID(i)) {
			t.Fatalf("link %d differs: %+v vs %+v", i, a.Link(LinkID(i)), b.Link(LinkID(i)))
		}
	}
	for i := 0; i < a.Nodes(); i++ {
		if a.Name(i) != b.Name(i) {
			t.Fatalf("node %d name %q vs %q", i, a.Name(i), b.Name(i))
		}
	}
}

func FuzzFromJSON(f *testing.F) {
	f.Add([]byte(sampleJSON))
	f.Add([]byte(`{"hosts": ["a", "b"], "capacity": 1, "latency": 0, "links": [{"from": "a", "to": "b"}]}`))
	f.Add([]byte(`{"hosts": ["a"]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		topo, err := FromJSON(data)
		if err != nil {
			return
		}
		out, err := topo.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		back, err := FromJSON(out)
		if err != nil {
			t.Fatalf("re-reading own output: %v\n%s", err, out)
		}
		sameTopology(t, topo, back)
		for s := 0; s < topo.Hosts() && s < 4; s++ {
			for d := 0; d < topo.Hosts() && d < 4; d++ {
				checkPath(t, topo, topo.Path(s, d, s+d), s, d)
			}
		}
	})
}

func BenchmarkPathFatTree8(b *testing.B) {
	ft := must(FatTree(8, 100*gbps, us))
	var buf []LinkID
	i := 0
	for b.Loop() {
		buf = ft.AppendPath(buf[:0], i%128, (i*37+5)%128, i)
		i++
	}
}

func BenchmarkClosBuild(b *testing.B) {
	for b.Loop() {
		must(Clos(48, 3, 15, 100*gbps, us))
	}
}
