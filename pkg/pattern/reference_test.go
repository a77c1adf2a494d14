package pattern

import (
	"fmt"
	"math"

	"github.com/react-torch/react-torch/pkg/ten"
)

// simulate runs p with plain count vectors, independently of package
// semantics: state[c][r][k] is how often rank r holds contribution (or
// block) k in chunk c at the end. It models only what the data ends up
// being, not shares, empty sources or write conflicts, so that the mutation
// tests can tell a mutation that changes the result from one that does not.
// Chunks run from 0 to nc-1, so that a chunk whose flows were all removed
// still counts. O(flows * N) time and chunks * N^2 memory: small N only.
func simulate(p *ten.Pattern, nc int) [][][]int {
	n := p.Ranks
	ix := ten.NewChunkIndex(p)
	gains := p.Op == ten.AllGather || p.Op == ten.Broadcast
	out := make([][][]int, max(nc, ix.Len()))
	for c := range out {
		st := make([][]int, n)
		for r := range st {
			st[r] = make([]int, n)
		}
		var fl []int32
		if c < ix.Len() {
			fl = ix.Chunk(c)
		}
		switch p.Op {
		case ten.AllReduce, ten.Reduce, ten.ReduceScatter:
			for r := range st {
				st[r][r] = 1
			}
		case ten.Broadcast:
			st[p.Root][p.Root] = 1
		case ten.AllGather:
			for r := 0; r < n; r++ {
				send, recv := int32(math.MaxInt32), int32(math.MaxInt32)
				for _, i := range fl {
					if f := p.Flows[i]; int(f.Src) == r {
						send = min(send, f.Step)
					} else if int(f.Dst) == r {
						recv = min(recv, f.Step)
					}
				}
				if send != math.MaxInt32 && send <= recv {
					st[r][r] = 1
				}
			}
		}
		for lo := 0; lo < len(fl); {
			hi := lo
			for hi < len(fl) && p.Flows[fl[hi]].Step == p.Flows[fl[lo]].Step {
				hi++
			}
			src := make([][]int, hi-lo)
			for k := range src {
				src[k] = append([]int(nil), st[p.Flows[fl[lo+k]].Src]...)
			}
			for k := range src {
				f := p.Flows[fl[lo+k]]
				d := st[f.Dst]
				if f.Kind == ten.KindCopy && !gains {
					copy(d, src[k])
					continue
				}
				for j := range d {
					d[j] += src[k][j]
				}
			}
			lo = hi
		}
		out[c] = st
	}
	return out
}

func complete(v []int) bool {
	for _, x := range v {
		if x != 1 {
			return false
		}
	}
	return true
}

// meaning says whether p's result is what its op asks for, by simulate's
// count vectors over chunks 0..nc-1 at least, or why not.
func meaning(p *ten.Pattern, nc int) error {
	n := p.Ranks
	if p.Op == ten.AllGather || p.Op == ten.Broadcast {
		for i, f := range p.Flows {
			if f.Kind != ten.KindCopy {
				return fmt.Errorf("flow %d: %v only moves data, got a %v", i, p.Op, f.Kind)
			}
		}
	}
	st := simulate(p, nc)
	switch p.Op {
	case ten.AllReduce, ten.Reduce:
		for c := range st {
			for r := range st[c] {
				if (p.Op == ten.AllReduce || r == p.Root) && !complete(st[c][r]) {
					return fmt.Errorf("chunk %d rank %d holds %v", c, r, st[c][r])
				}
			}
		}
	case ten.ReduceScatter:
		owned := make([]float64, n)
		for c := range st {
			owner := -1
			for r := range st[c] {
				if complete(st[c][r]) {
					if owner >= 0 {
						return fmt.Errorf("chunk %d complete at ranks %d and %d", c, owner, r)
					}
					owner = r
				}
			}
			if owner < 0 {
				return fmt.Errorf("chunk %d complete nowhere", c)
			}
			for _, f := range p.Flows {
				if int(f.Chunk) == c {
					owned[owner] += f.Fraction
					break
				}
			}
		}
		for r, s := range owned {
			if math.Abs(s-1/float64(n)) > 1e-9 {
				return fmt.Errorf("rank %d owns %v of the message", r, s)
			}
		}
	case ten.Broadcast:
		for c := range st {
			for r := range st[c] {
				if st[c][r][p.Root] != 1 {
					return fmt.Errorf("chunk %d rank %d holds the data %d times", c, r, st[c][r][p.Root])
				}
			}
		}
	case ten.AllGather:
		for r := 0; r < n; r++ {
			sum := make([]int, n)
			for c := range st {
				for k, x := range st[c][r] {
					sum[k] += x
				}
			}
			if !complete(sum) {
				return fmt.Errorf("rank %d holds blocks %v", r, sum)
			}
		}
	}
	return nil
}
