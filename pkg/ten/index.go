package ten

import "sort"

// Degrees counts, for every (step, rank), the flows leaving the rank at that
// step (out) and arriving at it (in). It is the quantity the paper's pruning
// rule and congestion classes are stated in.
type Degrees struct {
	steps, ranks int
	in, out      []int32 // index step*ranks+rank, step 0 unused
}

// NewDegrees indexes the degrees of a structurally valid pattern.
func NewDegrees(p *Pattern) *Degrees {
	d := &Degrees{steps: p.Steps(), ranks: p.Ranks}
	size := (d.steps + 1) * d.ranks
	d.in = make([]int32, size)
	d.out = make([]int32, size)
	for i := range p.Flows {
		f := &p.Flows[i]
		d.out[int(f.Step)*d.ranks+int(f.Src)]++
		d.in[int(f.Step)*d.ranks+int(f.Dst)]++
	}
	return d
}

// Steps is the number of steps indexed.
func (d *Degrees) Steps() int { return d.steps }

// In is the number of flows into rank at step.
func (d *Degrees) In(step, rank int) int { return int(d.in[step*d.ranks+rank]) }

// Out is the number of flows out of rank at step.
func (d *Degrees) Out(step, rank int) int { return int(d.out[step*d.ranks+rank]) }

// Flow is the degree of a flow in the sense of §5.2 of the paper: the larger
// of its source's out-degree and its destination's in-degree at its step.
func (d *Degrees) Flow(f *Flow) int {
	return int(max(d.out[int(f.Step)*d.ranks+int(f.Src)], d.in[int(f.Step)*d.ranks+int(f.Dst)]))
}

// ChunkIndex lists the flows of every chunk subgraph, ordered by step and
// then by flow index (a compressed sparse row layout: the flows of chunk c
// are Flows[Start[c]:Start[c+1]], as indexes into the pattern's flows).
type ChunkIndex struct {
	Start []int32
	Flows []int32
}

// NewChunkIndex groups the flows of a structurally valid pattern by chunk.
func NewChunkIndex(p *Pattern) *ChunkIndex {
	nc := p.Chunks()
	ix := &ChunkIndex{Start: make([]int32, nc+1), Flows: make([]int32, len(p.Flows))}
	for i := range p.Flows {
		ix.Start[p.Flows[i].Chunk+1]++
	}
	for c := 0; c < nc; c++ {
		ix.Start[c+1] += ix.Start[c]
	}
	next := append([]int32(nil), ix.Start[:nc]...)
	for i := range p.Flows {
		c := p.Flows[i].Chunk
		ix.Flows[next[c]] = int32(i)
		next[c]++
	}
	for c := 0; c < nc; c++ {
		seg := ix.Flows[ix.Start[c]:ix.Start[c+1]]
		if !sort.SliceIsSorted(seg, func(a, b int) bool { return p.Flows[seg[a]].Step < p.Flows[seg[b]].Step }) {
			sort.SliceStable(seg, func(a, b int) bool { return p.Flows[seg[a]].Step < p.Flows[seg[b]].Step })
		}
	}
	return ix
}

// Chunk returns the flow indexes of chunk c in step order.
func (ix *ChunkIndex) Chunk(c int) []int32 { return ix.Flows[ix.Start[c]:ix.Start[c+1]] }

// Len is the number of chunks.
func (ix *ChunkIndex) Len() int { return len(ix.Start) - 1 }
