package wire

import (
	"fmt"
	"testing"

	"github.com/react-torch/react-torch/pkg/pattern"
	"github.com/react-torch/react-torch/pkg/ten"
)

// BenchmarkExchangeBytes gives the bytes that reach the leader in one
// exchange of a data-parallel job (17 keys, DDP's gradient buckets of a
// ResNet-50, 6 epochs each) against the group's size, from the real row
// of each default pattern: with the MAX reduction (Gloo's reduce: a ring
// reduce-scatter, then every rank's chunk to the root, so the root takes
// in 2(N-1)/N of the vector) and, for comparison, with the gather it
// replaced (N vectors). The timed part is the patterns' generation.
func BenchmarkExchangeBytes(b *testing.B) {
	const keys, epochs = 17, 6
	for _, algo := range []string{"tree", "ring"} {
		for _, n := range []int{8, 64, 1024} {
			b.Run(fmt.Sprintf("%s/ranks=%d", algo, n), func(b *testing.B) {
				var row int
				for range b.N {
					p, err := pattern.Generate(ten.AllReduce, algo, n, -1)
					if err != nil {
						b.Fatal(err)
					}
					row = ExchangeRowLen(len(p.Flows), p.Ranks)
				}
				vec := float64(8 * keys * epochs * row)
				b.ReportMetric(float64(row), "values/row")
				b.ReportMetric(2*vec*float64(n-1)/float64(n)/1e6, "leader-MB")
				b.ReportMetric(vec*float64(n)/1e6, "gather-MB")
			})
		}
	}
}

func TestExchangeRowLen(t *testing.T) {
	for _, tc := range []struct{ flows, ranks, want int }{{0, 1, 2}, {12, 4, 17}, {4092, 1024, 5117}} {
		if got := ExchangeRowLen(tc.flows, tc.ranks); got != tc.want {
			t.Errorf("ExchangeRowLen(%d, %d) = %d, want %d", tc.flows, tc.ranks, got, tc.want)
		}
	}
}
