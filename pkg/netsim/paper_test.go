package netsim

import (
	"testing"

	"github.com/react-torch/react-torch/pkg/pattern"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/react-torch/react-torch/pkg/topo"
)

// swapInChunk relabels ranks a and b in the flows of one chunk: the
// paper's §4.3 swap, done by hand.
func swapInChunk(p *ten.Pattern, chunk int32, a, b int32) *ten.Pattern {
	q := p.Clone()
	for i := range q.Flows {
		f := &q.Flows[i]
		if f.Chunk != chunk {
			continue
		}
		for _, r := range []*int32{&f.Src, &f.Dst} {
			switch *r {
			case a:
				*r = b
			case b:
				*r = a
			}
		}
	}
	return q
}

// TestPaperExample is §4.3: 16 ranks on a star, 100 Gbps, alpha = 4 us a
// step (2 us a link), 2 MB, NCCL's double binary tree AllReduce. The reduce
// phase takes 4 alpha + 7/2 beta s = 576 us idle, 4 alpha + (3 + p/2) beta s
// = 656 us with p = 2 external flows into rank 3's host, and 576 us again
// once ranks 3 and 2 swap places in the tree whose leaves are even
// (chunk 1), which makes 3 a leaf of both trees.
func TestPaperExample(t *testing.T) {
	star := must(topo.Star(18, 100*gbps, 2*us))
	tree := pattern.TreeAllReduce(16)
	tests := []struct {
		name   string
		p      *ten.Pattern
		ext    int
		reduce float64
	}{
		{"no congestion", tree, 0, 576 * us},
		{"p=2 into rank 3", tree, 2, 656 * us},
		{"p=2, 3 and 2 swapped in chunk 1", swapInChunk(tree, 1, 3, 2), 2, 576 * us},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(star, 1)
			if err := s.AddExternal(16, 3, tt.ext); err != nil {
				t.Fatal(err)
			}
			r := run(t, s, Job{Hosts: identityHosts(16), Bytes: 2 * mb}, tt.p, 1)[0]
			reduce := 0.0
			for f, fl := range tt.p.Flows {
				if fl.Kind == ten.KindReduce {
					reduce = max(reduce, r.FlowFinish[f])
				}
			}
			t.Logf("reduce phase %.3f us, whole AllReduce %.3f us", reduce/us, r.Elapsed/us)
			// The brief allows 1%; the fluid model gives the closed form exactly.
			if !near(reduce, tt.reduce, 1e-9) {
				t.Errorf("reduce phase %.3f us, want %.0f us", reduce/us, tt.reduce/us)
			}
		})
	}
}
