package semantics

import (
	"math"

	"github.com/react-torch/react-torch/pkg/ten"
)

// referenceCheck is the plain count-vector checker the design asks to keep
// as the reference: counts[rank][contributor] as int per chunk, no bit
// tricks, the same rules as Check. It returns the problem class of the
// first violation, or 0. O(chunks * flows * N), for small N only.
func referenceCheck(p *ten.Pattern) Problem {
	if p.Validate() != nil {
		return Malformed
	}
	n := p.Ranks
	gather := p.Op == ten.AllGather
	if gather || p.Op == ten.Broadcast {
		for _, f := range p.Flows {
			if f.Kind == ten.KindReduce {
				return BadKind
			}
		}
	}
	nc := p.Chunks()
	if !gather {
		sum := 0.0
		for ch := 0; ch < nc; ch++ {
			share := -1.0
			for _, f := range p.Flows {
				if int(f.Chunk) != ch {
					continue
				}
				if share < 0 {
					share = f.Fraction
				} else if math.Abs(f.Fraction-share) > 1e-9*share {
					return Share
				}
			}
			if share > 0 {
				sum += share
			}
		}
		if math.Abs(sum-1) > 1e-9 {
			return Share
		}
	}
	total := make([][]int, n)
	for r := range total {
		total[r] = make([]int, n)
	}
	owned := make([]float64, n)
	for ch := 0; ch < nc; ch++ {
		st := make([][]int, n)
		for r := range st {
			st[r] = make([]int, n)
		}
		var fl []ten.Flow
		for _, f := range p.Flows {
			if int(f.Chunk) == ch {
				fl = append(fl, f)
			}
		}
		switch p.Op {
		case ten.AllReduce, ten.Reduce, ten.ReduceScatter:
			for r := 0; r < n; r++ {
				st[r][r] = 1
			}
		case ten.Broadcast:
			st[p.Root][p.Root] = 1
		case ten.AllGather:
			for r := 0; r < n; r++ {
				send, recv := math.MaxInt32, math.MaxInt32
				for _, f := range fl {
					if int(f.Src) == r {
						send = min(send, int(f.Step))
					}
					if int(f.Dst) == r {
						recv = min(recv, int(f.Step))
					}
				}
				if send != math.MaxInt32 && send <= recv {
					st[r][r] = 1
				}
			}
		}
		for step := 1; step <= p.Steps(); step++ {
			old := make([][]int, n)
			for r := range st {
				old[r] = append([]int(nil), st[r]...)
			}
			wrote := map[int]bool{} // dst -> wrote by a replacing copy
			written := map[int]bool{}
			for _, f := range fl {
				if int(f.Step) != step {
					continue
				}
				held := 0
				for _, x := range old[f.Src] {
					if x > 0 {
						held++
					}
				}
				if held == 0 {
					return Empty
				}
				if gather && math.Abs(f.Fraction-float64(held)/float64(n)) > 1e-9 {
					return Share
				}
			}
			for _, f := range fl {
				if int(f.Step) != step {
					continue
				}
				d := int(f.Dst)
				replace := f.Kind == ten.KindCopy && !gather && p.Op != ten.Broadcast
				if written[d] && (replace || wrote[d]) {
					return Conflict
				}
				written[d], wrote[d] = true, replace
				for k := 0; k < n; k++ {
					if replace {
						st[d][k] = old[f.Src][k]
					} else {
						st[d][k] += old[f.Src][k]
					}
				}
			}
		}
		exact := func(r int, want func(k int) int) Problem {
			for k := 0; k < n; k++ {
				if st[r][k] > 1 {
					return Twice
				}
			}
			for k := 0; k < n; k++ {
				if st[r][k] < want(k) {
					return Missing
				}
			}
			return 0
		}
		one := func(int) int { return 1 }
		switch p.Op {
		case ten.AllReduce:
			for r := 0; r < n; r++ {
				if pr := exact(r, one); pr != 0 {
					return pr
				}
			}
		case ten.Reduce:
			if pr := exact(p.Root, one); pr != 0 {
				return pr
			}
		case ten.Broadcast:
			for r := 0; r < n; r++ {
				if pr := exact(r, func(k int) int { return b2i(k == p.Root) }); pr != 0 {
					return pr
				}
			}
		case ten.ReduceScatter:
			owner, best, bestN := -1, -1, -1
			for r := 0; r < n; r++ {
				if pr := exact(r, one); pr == 0 {
					if owner >= 0 {
						return Owner
					}
					owner = r
				} else {
					k := 0
					for _, x := range st[r] {
						k += b2i(x > 0)
					}
					if k > bestN {
						best, bestN = r, k
					}
				}
			}
			if owner < 0 {
				return exact(best, one)
			}
			if len(fl) > 0 {
				owned[owner] += fl[0].Fraction
			}
		case ten.AllGather:
			for r := 0; r < n; r++ {
				for k := 0; k < n; k++ {
					total[r][k] += st[r][k]
					if total[r][k] > 1 {
						return Twice
					}
				}
			}
		}
	}
	switch p.Op {
	case ten.AllGather:
		for r := 0; r < n; r++ {
			for k := 0; k < n; k++ {
				if total[r][k] == 0 {
					return Missing
				}
			}
		}
	case ten.ReduceScatter:
		for r := 0; r < n; r++ {
			if math.Abs(owned[r]-1/float64(n)) > 1e-9 {
				return Share
			}
		}
	}
	return 0
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
