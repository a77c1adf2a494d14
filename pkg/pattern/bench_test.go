package pattern

import (
	"testing"

	"github.com/react-torch/react-torch/pkg/semantics"
	"github.com/react-torch/react-torch/pkg/ten"
)

func BenchmarkGenerateCheck(b *testing.B) {
	for _, bm := range []struct {
		name string
		gen  func(int) *ten.Pattern
	}{
		{"tree-1024", TreeAllReduce},
		{"ring-1024", RingAllReduce},
		{"halving_doubling-1024", HalvingDoublingAllReduce},
		{"recursive_doubling-1024", RecursiveDoublingAllGather},
	} {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := semantics.Check(bm.gen(1024)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkGenerate(b *testing.B) {
	for _, bm := range []struct {
		name string
		gen  func(int) *ten.Pattern
	}{
		{"tree-1024", TreeAllReduce},
		{"ring-1024", RingAllReduce},
	} {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bm.gen(1024)
			}
		})
	}
}
