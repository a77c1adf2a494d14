package semantics

import (
	"math/bits"

	"github.com/react-torch/react-torch/pkg/ten"
)

// Layout is what an executor needs beyond the flows to move real bytes:
// which blocks of the gathered buffer every allgather flow carries, and at
// which rank every reducescatter chunk completes (whose input block the
// chunk therefore carries). Both follow from the state model of Check, so
// they are computed here and nowhere else.
type Layout struct {
	// Blocks[Start[f]:Start[f+1]] are the blocks flow f carries, ascending;
	// only for allgather (empty otherwise).
	Start  []int32
	Blocks []int32
	// Owner[c] is the rank at which chunk c completes, for reducescatter;
	// -1 for every chunk of the other ops.
	Owner []int32
}

// NewLayout computes the layout of a pattern; it fails exactly when Check does.
func NewLayout(p *ten.Pattern) (*Layout, error) {
	if err := Check(p); err != nil {
		return nil, err
	}
	c := newChecker(p)
	ly := &Layout{Start: make([]int32, len(p.Flows)+1), Owner: make([]int32, c.ix.Len())}
	for i := range ly.Owner {
		ly.Owner[i] = -1
	}
	switch p.Op {
	case ten.AllGather:
		carried := make([][]int32, len(p.Flows))
		for ch := 0; ch < c.ix.Len(); ch++ {
			fl := c.ix.Chunk(ch)
			c.initChunk(ch, fl)
			c.replay(fl, func(f int32, src []uint64) {
				for i, w := range src[:c.w] {
					for ; w != 0; w &= w - 1 {
						carried[f] = append(carried[f], int32(i*64+bits.TrailingZeros64(w)))
					}
				}
			})
		}
		for f, b := range carried {
			ly.Start[f+1] = ly.Start[f] + int32(len(b))
			ly.Blocks = append(ly.Blocks, b...)
		}
	case ten.ReduceScatter:
		for ch := 0; ch < c.ix.Len(); ch++ {
			fl := c.ix.Chunk(ch)
			c.initChunk(ch, fl)
			c.replay(fl, nil)
			for r := 0; r < c.n; r++ {
				if c.compare(ch, r, c.all) == nil {
					ly.Owner[ch] = int32(r)
				}
			}
		}
	}
	return ly, nil
}

// replay runs one chunk's flows on a pattern already known to be correct,
// calling sent (if not nil) with every flow and its source's state.
func (c *checker) replay(fl []int32, sent func(f int32, src []uint64)) {
	w2 := 2 * c.w
	for lo := 0; lo < len(fl); {
		step := c.p.Flows[fl[lo]].Step
		hi := lo
		for hi < len(fl) && c.p.Flows[fl[hi]].Step == step {
			hi++
		}
		group := fl[lo:hi]
		c.snapshot(group)
		if sent != nil {
			for k, f := range group {
				sent(f, c.source(k))
			}
		}
		for k, f := range group {
			fw := &c.p.Flows[f]
			d := int(fw.Dst)
			dst, src := c.state[d*w2:(d+1)*w2], c.source(k)
			if fw.Kind == ten.KindCopy && !c.gainsCopy() {
				copy(dst, src)
			} else {
				addCounts(dst[:c.w], dst[c.w:], src[:c.w], src[c.w:])
			}
		}
		lo = hi
	}
}
