package links_test

import (
	"math"
	"testing"

	"github.com/react-torch/react-torch/pkg/links"
	"github.com/react-torch/react-torch/pkg/pattern"
	"github.com/react-torch/react-torch/pkg/ten"
)

// A rank slowed in both directions alike is named a slow host, not
// competing flows on its links; competing flows on both of a rank's links
// stay counts where the patterns' concurrency tells them apart.
func TestSlowHostsToldFromCongestion(t *testing.T) {
	tree, _ := pattern.Generate(ten.AllReduce, "tree", 8, -1)
	ring, _ := pattern.Generate(ten.AllReduce, "ring", 8, -1)
	for _, tc := range []struct {
		name     string
		p        *ten.Pattern
		host     map[int]float64
		up, down map[int]float64
		busy     map[int]float64 // competing flows on a host its sends and receives share
	}{
		{"tree slow host", tree, map[int]float64{3: 1.6}, nil, nil, nil},
		{"ring slow host", ring, map[int]float64{5: 1.8}, nil, nil, nil},
		{"tree two slow hosts", tree, map[int]float64{1: 1.5, 6: 2}, nil, nil, nil},
		{"tree slow host receiving slower still", tree, map[int]float64{3: 1.6}, nil, map[int]float64{3: 0.3}, nil},
		{"tree busy host", tree, nil, nil, nil, map[int]float64{3: 2}},
		{"tree congested downlink", tree, nil, nil, map[int]float64{3: 2}, nil},
		{"tree congested both ways", tree, nil, map[int]float64{3: 3}, map[int]float64{3: 3}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			truth := &links.Net{C: 12.5e9, Alpha: 2e-6, Up: make([]float64, 8), Down: make([]float64, 8), Host: make([]float64, 8)}
			for r := range truth.Host {
				if h, ok := tc.host[r]; ok {
					truth.Host[r] = h - 1
				}
				truth.Up[r], truth.Down[r] = tc.up[r], tc.down[r]
			}
			if tc.busy != nil {
				truth.Shared = make([]float64, 8)
				for r, k := range tc.busy {
					truth.Shared[r] = k
				}
			}
			m, fit := fitted(t, tc.p, truth, 0.05, 3)
			got := map[int]links.SlowHost{}
			for _, h := range m.SlowHosts() {
				got[h.Rank] = h
			}
			for r := 0; r < 8; r++ {
				h, isSlow := got[r]
				want, slow := tc.host[r]
				_, busy := tc.busy[r]
				switch {
				case busy && (!isSlow || h.Kind != "busy"):
					t.Errorf("rank %d not read as a busy host: %+v", r, h)
				case busy:
				case slow && (!isSlow || h.Kind != "slow"):
					t.Errorf("rank %d not read as a slow host (truth x%.2f); counts %.2f / %.2f", r, want, fit.Net.Up[r], fit.Net.Down[r])
				case slow && tc.down[r] > 0:
					// receiving slower still: the receives' factor is
					// what is measured (the split with the sends is not)
					if rw := want * (1 + tc.down[r]); math.Abs(h.Receive-rw) > 0.1*rw || h.Receive <= h.Send {
						t.Errorf("host %d: receives x%.3f, sends x%.3f; want receives x%.3f, slower", r, h.Receive, h.Send, rw)
					}
				case slow && math.Abs(h.Factor-want) > 0.1*want:
					t.Errorf("host %d: factor %.3f ± %.3f, want %.3f", r, h.Factor, h.SE, want)
				case !slow && !busy && isSlow:
					t.Errorf("rank %d read as a slow host (x%.3f ± %.3f); counts %.2f / %.2f, truth %.2f / %.2f", r, h.Factor, h.SE, fit.Net.Up[r], fit.Net.Down[r], tc.up[r], tc.down[r])
				}
			}
			t.Logf("slow hosts %+v", got)
			t.Logf("up %.2f down %.2f rms %.4f", fit.Net.Up, fit.Net.Down, fit.RMS)
		})
	}
}
