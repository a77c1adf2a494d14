package links_test

import (
	"fmt"
	"testing"

	"github.com/react-torch/react-torch/pkg/critpath"
	"github.com/react-torch/react-torch/pkg/links"
	"github.com/react-torch/react-torch/pkg/pattern"
	"github.com/react-torch/react-torch/pkg/ten"
)

// BenchmarkReplay is one judgement of a candidate: a tree AllReduce with
// one congested downlink replayed through the link model.
func BenchmarkReplay(b *testing.B) {
	for _, n := range []int{8, 64, 1024} {
		p, _ := pattern.Generate(ten.AllReduce, "tree", n, -1)
		dag := critpath.New(p)
		net := &links.Net{C: 12.5e9, Alpha: 2e-6, Up: make([]float64, n), Down: make([]float64, n)}
		net.Down[3] = 2
		fct := make([]float64, len(p.Flows))
		var rp links.Replayer
		b.Run(fmt.Sprintf("tree-%d", n), func(b *testing.B) {
			for b.Loop() {
				rp.Replay(p, dag, 20e6, net, nil, fct)
			}
		})
	}
}

// BenchmarkSlowHosts is what a report's slow-host readings cost beside the
// fit they start from: one rank of a tree slowed both ways, 12 epochs.
func BenchmarkSlowHosts(b *testing.B) {
	for _, n := range []int{8, 64, 1024} {
		p, _ := pattern.Generate(ten.AllReduce, "tree", n, -1)
		net := &links.Net{C: 12.5e9, Alpha: 2e-6, Up: make([]float64, n), Down: make([]float64, n), Host: make([]float64, n)}
		net.Host[3] = 0.6
		var rp links.Replayer
		fct := make([]float64, len(p.Flows))
		rp.Replay(p, critpath.New(p), 20e6, net, nil, fct)
		b.Run(fmt.Sprintf("tree-%d", n), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				m, _ := links.NewModel(n, 60, 6, false)
				for e := range 12 {
					if err := m.Observe(0, e, p, 20e6, fct); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := m.Refit(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if h := m.SlowHosts(); len(h) != 1 || h[0].Rank != 3 {
					b.Fatalf("slow hosts %+v", h)
				}
			}
		})
	}
}
