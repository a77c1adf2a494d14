package model

import (
	"math"
	"testing"

	"github.com/react-torch/react-torch/pkg/ten"
)

// star4 is a 4-rank pattern: step 1 has 1->0 and 2->0 (degree 2) and 3->1
// (degree 1); step 2 has 0->3 (degree 1).
func star4() *ten.Pattern {
	f := func(s, a, b int, frac float64) ten.Flow {
		return ten.Flow{Step: int32(s), Src: int32(a), Dst: int32(b), Kind: ten.KindReduce, Fraction: frac}
	}
	return &ten.Pattern{Op: ten.AllReduce, Ranks: 4, Root: -1, Flows: []ten.Flow{
		f(1, 1, 0, 1), f(1, 2, 0, 1), f(1, 3, 1, 1), f(2, 0, 3, 1),
	}}
}

func TestEstimate(t *testing.T) {
	p := star4()
	deg := ten.NewDegrees(p)
	h := NewHistory(3)
	// cost per byte per degree: pair (1,0) 2, (2,0) 4, (3,1) 1, (0,3) 3
	if err := h.Observe(0, p, deg, []float64{4, 8, 1, 3}, 1); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		q    *ten.Pattern
		want []float64
	}{
		{"same pattern reproduces the observation", p, []float64{4, 8, 1, 3}},
		{"a seen pair keeps its cost at a new degree", func() *ten.Pattern {
			q := p.Clone()
			q.Flows[1].Dst = 1 // 2->1 unseen; 1->0 now has degree 1
			return q
		}(), []float64{2, 3 * 2, 1 * 2, 3}}, // 2->1 unseen at degree 2: median(2, 4) = 3
		{"an unseen pair takes the median of its degree", func() *ten.Pattern {
			q := p.Clone()
			q.Flows[3].Src, q.Flows[3].Dst = 2, 3 // degree 1: median of (1, 3) is 2
			return q
		}(), []float64{4, 8, 1, 2}},
		{"size scales", func() *ten.Pattern {
			q := p.Clone()
			q.Flows[2].Fraction = .5
			return q
		}(), []float64{4, 8, .5, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := make([]float64, len(tt.q.Flows))
			if !h.Estimate(tt.q, ten.NewDegrees(tt.q), 1, w) {
				t.Fatal("no estimate")
			}
			for i := range w {
				if math.Abs(w[i]-tt.want[i]) > 1e-12 {
					t.Fatalf("estimates %v, want %v", w, tt.want)
				}
			}
		})
	}
}

func TestForgetsOldEpochs(t *testing.T) {
	p := star4()
	deg := ten.NewDegrees(p)
	h := NewHistory(2)
	for e, scale := range []float64{10, 1, 1} {
		if err := h.Observe(e, p, deg, []float64{4 * scale, 8 * scale, scale, 3 * scale}, 1); err != nil {
			t.Fatal(err)
		}
	}
	if h.Len() != 2 {
		t.Fatalf("holds %d epochs, want 2", h.Len())
	}
	w := make([]float64, 4)
	h.Estimate(p, deg, 1, w)
	if w[0] != 4 {
		t.Fatalf("estimate %v still remembers epoch 0", w[0])
	}
}

func TestObserveErrors(t *testing.T) {
	p := star4()
	deg := ten.NewDegrees(p)
	h := NewHistory(2)
	if err := h.Observe(0, p, deg, []float64{1, 2}, 1); err == nil {
		t.Error("wrong length accepted")
	}
	if err := h.Observe(0, p, deg, []float64{1, 2, 0, 1}, 1); err == nil {
		t.Error("zero FCT accepted")
	}
	if h.Estimate(p, deg, 1, make([]float64, 4)) {
		t.Error("estimate from an empty history")
	}
}
