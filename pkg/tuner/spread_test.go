package tuner

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/stat"
)

// The spread gate's correlation takes each pattern's mean out: a change
// that moves the critical path and the collective time together is no
// evidence that one follows the other from epoch to epoch.
func TestWithinCorrelation(t *testing.T) {
	up := []float64{0, 1, 0, 1, 5, 6, 5, 6}   // two patterns, the second slower
	flat := []float64{0, 0, 1, 1, 5, 5, 6, 6} // unrelated to up within each
	for _, tc := range []struct {
		name  string
		x, y  []float64
		of    []int
		wantR float64 // NaN: undefined
		wantN int
	}{
		{"one pattern is the plain correlation", []float64{1, 2, 3, 4}, []float64{1, 3, 2, 5}, []int{1, 1, 1, 1},
			stat.Correlation([]float64{1, 2, 3, 4}, []float64{1, 3, 2, 5}, nil), 4},
		{"a shift between patterns is taken out", up, flat, []int{1, 1, 1, 1, 2, 2, 2, 2}, 0, 7},
		{"following within each pattern counts", up, up, []int{1, 1, 1, 1, 2, 2, 2, 2}, 1, 7},
		{"a pattern of one epoch is worth nothing", []float64{9, 1, 2, 3}, []float64{0, 1, 2, 3}, []int{1, 2, 2, 2}, 1, 3},
		{"constant within every pattern", []float64{1, 1, 2, 2}, []float64{0, 1, 0, 1}, []int{1, 1, 2, 2}, math.NaN(), 3},
		{"nothing recorded", nil, nil, nil, math.NaN(), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, n := withinCorrelation(tc.x, tc.y, tc.of)
			if n != tc.wantN {
				t.Errorf("worth %d points, want %d", n, tc.wantN)
			}
			if math.IsNaN(tc.wantR) != math.IsNaN(r) || (!math.IsNaN(r) && math.Abs(r-tc.wantR) > 1e-12) {
				t.Errorf("r = %v, want %v", r, tc.wantR)
			}
		})
	}
	if r := stat.Correlation(up, flat, nil); r < 0.9 {
		t.Fatalf("the fixture's plain correlation is %v: the shift case tests nothing", r)
	}
}
