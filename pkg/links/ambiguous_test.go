package links_test

import (
	"slices"
	"testing"

	"github.com/react-torch/react-torch/pkg/links"
	"github.com/react-torch/react-torch/pkg/pattern"
	"github.com/react-torch/react-torch/pkg/ten"
)

// A ring sends a's flows only to a+1: up[a] and down[a+1] carry the same
// flows and cannot be told apart. A tree's parent receives from its
// children at once, so its downlink stands alone.
func TestAmbiguous(t *testing.T) {
	ring, _ := pattern.Generate(ten.AllReduce, "ring", 8, -1)
	tree, _ := pattern.Generate(ten.AllReduce, "tree", 8, -1)
	for _, tc := range []struct {
		name string
		p    *ten.Pattern
		slow links.Link
		want []links.Link
	}{
		{"ring up", ring, links.Link{Rank: 2}, []links.Link{{Rank: 3, Down: true}}},
		{"ring down", ring, links.Link{Rank: 5, Down: true}, []links.Link{{Rank: 4}}},
		{"tree down", tree, links.Link{Rank: 5, Down: true}, nil},
		{"tree up", tree, links.Link{Rank: 3}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			truth := &links.Net{C: 12.5e9, Alpha: 2e-6, Up: make([]float64, 8), Down: make([]float64, 8)}
			if tc.slow.Down {
				truth.Down[tc.slow.Rank] = 3
			} else {
				truth.Up[tc.slow.Rank] = 3
			}
			m, fit := fitted(t, tc.p, truth, 0.05, 3)
			count := func(l links.Link) float64 {
				if l.Down {
					return fit.Net.Down[l.Rank]
				}
				return fit.Net.Up[l.Rank]
			}
			// the fit may name either of two links it cannot tell apart
			named := tc.slow
			if count(named) < 1 {
				if len(tc.want) != 1 || count(tc.want[0]) < 1 {
					t.Fatalf("the fit missed %+v: up %.2f down %.2f", tc.slow, fit.Net.Up, fit.Net.Down)
				}
				named, tc.want = tc.want[0], []links.Link{tc.slow}
			}
			got := m.Ambiguous(named)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Ambiguous(%+v) = %+v, want %+v (up %.2f down %.2f)", named, got, tc.want, fit.Net.Up, fit.Net.Down)
			}
		})
	}
}
