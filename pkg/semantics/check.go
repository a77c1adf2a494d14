// Package semantics decides whether a pattern computes its collective
// exactly once: at the end every rank the op requires holds, for every
// chunk, every contribution once — not zero times, not twice.
//
// The paper's bitvector check (Appendix A.3) cannot see double counting.
// Check tracks a saturating count per (rank, chunk, contributor) as two bit
// sets, "at least once" and "more than once", which answers the
// exactly-once question as plain count vectors do at 1/32 of their memory
// and time; a plain count-vector reference lives in the tests.
//
// State model, applied step by step, every flow of a step reading the state
// the previous step left:
//   - reduce: the destination adds the source's value of the chunk;
//   - copy: the destination's value is replaced by the source's, except in
//     allgather and broadcast, where the destination gains what the source
//     holds (so a second delivery counts twice).
//
// Initial state and goal per op:
//   - allreduce, reduce, reducescatter: every rank starts with its own
//     contribution in every chunk. Allreduce wants every rank complete in
//     every chunk; reduce wants the root complete; reducescatter wants each
//     chunk complete at exactly one rank (its owner, whose input block the
//     chunk carries) and each rank to own chunks worth 1/N of the message.
//   - broadcast: the root holds every chunk; every rank must end with it.
//   - allgather: a rank is an origin of chunk c when it sends in c no later
//     than it first receives in c; an origin starts with its own block in c.
//     Summed over chunks, every rank must end with every block once.
//
// Shares: in all ops but allgather every flow of a chunk carries the whole
// chunk, so its flows agree on Fraction and chunk shares sum to 1; in
// allgather a flow's Fraction is the share of the blocks its source holds.
package semantics

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/react-torch/react-torch/pkg/ten"
)

// Problem classifies a violation.
type Problem uint8

// Problems a pattern can have.
const (
	// Missing: a required contribution never arrived.
	Missing Problem = iota + 1
	// Twice: a contribution arrived more than once.
	Twice
	// Empty: a flow's source holds nothing of the chunk it sends.
	Empty
	// Conflict: two flows of one step write one destination with a copy involved,
	// so the result depends on an order the pattern does not fix.
	Conflict
	// Share: fractions disagree with what the flows carry.
	Share
	// Owner: a reducescatter chunk is complete at no rank or at several.
	Owner
	// BadKind: a flow kind the op has no use for.
	BadKind
	// Malformed: the pattern fails structural validation.
	Malformed
)

var problemNames = [...]string{"", "missing", "counted twice", "empty flow", "conflicting writes", "wrong share", "owner", "bad kind", "malformed"}

func (p Problem) String() string {
	if int(p) < len(problemNames) {
		return problemNames[p]
	}
	return fmt.Sprintf("problem(%d)", uint8(p))
}

// Violation is the first defect found, in chunk order then rank order.
// Fields that do not apply are -1.
type Violation struct {
	Op          ten.Op
	Problem     Problem
	Chunk       int
	Rank        int // the rank whose state is wrong
	Contributor int // whose contribution is missing or doubled
	Flow        int // the offending flow, when one flow is to blame
	Step        int
	Detail      string
}

func (v *Violation) Error() string {
	s := fmt.Sprintf("%s: ", v.Op)
	if v.Chunk >= 0 {
		s += fmt.Sprintf("chunk %d, ", v.Chunk)
	}
	if v.Rank >= 0 {
		s += fmt.Sprintf("rank %d: ", v.Rank)
	}
	switch v.Problem {
	case Missing, Twice:
		what := "contribution"
		if v.Op == ten.AllGather || v.Op == ten.Broadcast {
			what = "block"
		}
		s += fmt.Sprintf("%s of rank %d %s", what, v.Contributor, v.Problem)
	default:
		s += v.Problem.String()
	}
	if v.Flow >= 0 {
		s += fmt.Sprintf(" (flow %d, step %d)", v.Flow, v.Step)
	}
	if v.Detail != "" {
		s += ": " + v.Detail
	}
	return s
}

// shareTol bounds float error in shares (sums of up to a million terms).
const shareTol = 1e-9

// Check returns nil when p is exactly-once correct, a *ten.Error when it is
// structurally malformed or past the size limits the generators share
// (ten.MaxRanks, ten.MaxSteps: errors.Is(err, ten.ErrLimit)), and a
// *Violation naming the first defect otherwise. Its memory is bounded by
// the limits and the flow count: N x N bits of state, one snapshot per
// distinct source of a step, an index as long as the flows.
func Check(p *ten.Pattern) error {
	if err := p.Validate(); err != nil {
		return err
	}
	c := newChecker(p)
	return c.run()
}

type checker struct {
	p      *ten.Pattern
	n, w   int // ranks, words per bit set
	ix     *ten.ChunkIndex
	state  []uint64 // per rank: ones[w], many[w]
	tmp    []uint64 // per distinct source of a step: its state before the step
	slot   []int32  // per rank: its slot in tmp during a step, -1 when none
	fslot  []int32  // per flow of a step: its source's slot
	all    []uint64 // the complete set for n contributors
	total  []uint64 // allgather: per rank, ones and many summed over chunks
	first  []int32  // allgather origins: first send and first receive step per rank
	writer []int32  // per rank: step and flow that last wrote it, to find conflicts
	wflow  []int32
	wcopy  []bool
	owned  []float64 // reducescatter: share owned per rank
}

func newChecker(p *ten.Pattern) *checker {
	n := p.Ranks
	w := (n + 63) / 64
	c := &checker{p: p, n: n, w: w, ix: ten.NewChunkIndex(p)}
	c.state = make([]uint64, n*2*w)
	c.slot = make([]int32, n)
	for r := range c.slot {
		c.slot[r] = -1
	}
	c.all = make([]uint64, w)
	for r := 0; r < n; r++ {
		c.all[r/64] |= 1 << (r % 64)
	}
	c.writer = make([]int32, n)
	c.wflow = make([]int32, n)
	c.wcopy = make([]bool, n)
	switch p.Op {
	case ten.AllGather:
		c.total = make([]uint64, n*2*w)
		c.first = make([]int32, 2*n)
	case ten.ReduceScatter:
		c.owned = make([]float64, n)
	}
	return c
}

func (c *checker) ones(r int) []uint64 { return c.state[r*2*c.w : r*2*c.w+c.w] }
func (c *checker) many(r int) []uint64 { return c.state[r*2*c.w+c.w : (r+1)*2*c.w] }

// gainsCopy reports whether a copy adds to the destination instead of replacing it.
func (c *checker) gainsCopy() bool { return c.p.Op == ten.AllGather || c.p.Op == ten.Broadcast }

func (c *checker) violation(pr Problem, chunk, rank, contrib, flow int, detail string) *Violation {
	v := &Violation{Op: c.p.Op, Problem: pr, Chunk: chunk, Rank: rank, Contributor: contrib, Flow: flow, Step: -1, Detail: detail}
	if flow >= 0 {
		v.Step = int(c.p.Flows[flow].Step)
	}
	return v
}

func (c *checker) run() error {
	if err := c.checkKinds(); err != nil {
		return err
	}
	if err := c.checkShares(); err != nil {
		return err
	}
	for ch := 0; ch < c.ix.Len(); ch++ {
		if err := c.runChunk(ch); err != nil {
			return err
		}
	}
	switch c.p.Op {
	case ten.AllGather:
		return c.finalAllGather()
	case ten.ReduceScatter:
		for r := 0; r < c.n; r++ {
			if want := 1 / float64(c.n); math.Abs(c.owned[r]-want) > shareTol {
				return c.violation(Share, -1, r, -1, -1, fmt.Sprintf("owns chunks worth %.6g of the message, want 1/%d", c.owned[r], c.n))
			}
		}
	}
	return nil
}

func (c *checker) checkKinds() error {
	if c.p.Op != ten.AllGather && c.p.Op != ten.Broadcast {
		return nil
	}
	for i := range c.p.Flows {
		if c.p.Flows[i].Kind == ten.KindReduce {
			f := &c.p.Flows[i]
			return c.violation(BadKind, int(f.Chunk), int(f.Dst), -1, i, fmt.Sprintf("a reduce flow in %s, which only moves data", c.p.Op))
		}
	}
	return nil
}

// checkShares checks the op-independent part of Fraction: in every op but
// allgather each chunk has one share that all its flows carry, and the
// shares sum to the whole message.
func (c *checker) checkShares() error {
	if c.p.Op == ten.AllGather {
		return nil
	}
	sum := 0.0
	for ch := 0; ch < c.ix.Len(); ch++ {
		fl := c.ix.Chunk(ch)
		if len(fl) == 0 {
			continue
		}
		share := c.p.Flows[fl[0]].Fraction
		for _, f := range fl[1:] {
			if got := c.p.Flows[f].Fraction; math.Abs(got-share) > shareTol*share {
				return c.violation(Share, ch, -1, -1, int(f), fmt.Sprintf("fraction %.6g, but the chunk's first flow carries %.6g", got, share))
			}
		}
		sum += share
	}
	if math.Abs(sum-1) > shareTol {
		return c.violation(Share, -1, -1, -1, -1, fmt.Sprintf("chunk shares sum to %.9g, want 1", sum))
	}
	return nil
}

func (c *checker) initChunk(ch int, fl []int32) {
	clear(c.state)
	set := func(r int) { c.ones(r)[r/64] |= 1 << (r % 64) }
	switch c.p.Op {
	case ten.AllReduce, ten.Reduce, ten.ReduceScatter:
		for r := 0; r < c.n; r++ {
			set(r)
		}
	case ten.Broadcast:
		set(c.p.Root)
	case ten.AllGather:
		sendAt, recvAt := c.first[:c.n], c.first[c.n:]
		for r := range c.first {
			c.first[r] = math.MaxInt32
		}
		for _, f := range fl {
			fw := &c.p.Flows[f]
			sendAt[fw.Src] = min(sendAt[fw.Src], fw.Step)
			recvAt[fw.Dst] = min(recvAt[fw.Dst], fw.Step)
		}
		for r := 0; r < c.n; r++ {
			if sendAt[r] != math.MaxInt32 && sendAt[r] <= recvAt[r] {
				set(r)
			}
		}
	}
	for r := range c.writer {
		c.writer[r] = 0
	}
}

func (c *checker) runChunk(ch int) error {
	fl := c.ix.Chunk(ch)
	c.initChunk(ch, fl)
	w2 := 2 * c.w
	for lo := 0; lo < len(fl); {
		step := c.p.Flows[fl[lo]].Step
		hi := lo
		for hi < len(fl) && c.p.Flows[fl[hi]].Step == step {
			hi++
		}
		group := fl[lo:hi]
		c.snapshot(group)
		for k, f := range group {
			fw := &c.p.Flows[f]
			held := popcount(c.source(k)[:c.w])
			if held == 0 {
				return c.violation(Empty, ch, int(fw.Src), -1, int(f), "its source holds nothing of the chunk yet")
			}
			if c.p.Op == ten.AllGather {
				if want := float64(held) / float64(c.n); math.Abs(fw.Fraction-want) > shareTol {
					return c.violation(Share, ch, int(fw.Src), -1, int(f), fmt.Sprintf("fraction %.6g, but the source holds %d of %d blocks", fw.Fraction, held, c.n))
				}
			}
		}
		for k, f := range group {
			fw := &c.p.Flows[f]
			d := int(fw.Dst)
			replace := fw.Kind == ten.KindCopy && !c.gainsCopy()
			if c.writer[d] == step && (replace || c.wcopy[d]) {
				return c.violation(Conflict, ch, d, -1, int(f), fmt.Sprintf("flow %d writes the same rank at the same step and one of them is a replacing copy", c.wflow[d]))
			}
			c.writer[d], c.wflow[d], c.wcopy[d] = step, f, replace
			src := c.source(k)
			dst := c.state[d*w2 : (d+1)*w2]
			if replace {
				copy(dst, src)
				continue
			}
			addCounts(dst[:c.w], dst[c.w:], src[:c.w], src[c.w:])
		}
		lo = hi
	}
	return c.finishChunk(ch)
}

// snapshot copies the state of every distinct source of a step's flows
// into tmp before any destination changes (all flows of a step read the
// state the previous step left): one copy per source, not per flow, so
// that tmp is bounded by the state however many flows a step holds.
func (c *checker) snapshot(group []int32) {
	w2 := 2 * c.w
	if cap(c.fslot) < len(group) {
		c.fslot = make([]int32, len(group))
	}
	c.fslot = c.fslot[:len(group)]
	used := 0
	for k, f := range group {
		src := int(c.p.Flows[f].Src)
		if c.slot[src] < 0 {
			if need := (used + 1) * w2; len(c.tmp) < need {
				c.tmp = append(c.tmp, make([]uint64, need-len(c.tmp))...)
			}
			copy(c.tmp[used*w2:(used+1)*w2], c.state[src*w2:(src+1)*w2])
			c.slot[src] = int32(used)
			used++
		}
		c.fslot[k] = c.slot[src]
	}
	for _, f := range group {
		c.slot[c.p.Flows[f].Src] = -1
	}
}

// source is the state of the k-th flow's source before the step.
func (c *checker) source(k int) []uint64 {
	s := int(c.fslot[k])
	return c.tmp[s*2*c.w : (s+1)*2*c.w]
}

// addCounts adds saturating counts (a, am) += (b, bm).
func addCounts(a, am, b, bm []uint64) {
	for i := range a {
		am[i] |= (a[i] & b[i]) | bm[i]
		a[i] |= b[i]
	}
}

func (c *checker) finishChunk(ch int) error {
	switch c.p.Op {
	case ten.AllReduce:
		for r := 0; r < c.n; r++ {
			if v := c.compare(ch, r, c.all); v != nil {
				return v
			}
		}
	case ten.Reduce:
		if v := c.compare(ch, c.p.Root, c.all); v != nil {
			return v
		}
	case ten.Broadcast:
		want := make([]uint64, c.w)
		want[c.p.Root/64] = 1 << (c.p.Root % 64)
		for r := 0; r < c.n; r++ {
			if v := c.compare(ch, r, want); v != nil {
				return v
			}
		}
	case ten.ReduceScatter:
		owner, best, bestN := -1, -1, -1
		for r := 0; r < c.n; r++ {
			if c.compare(ch, r, c.all) == nil {
				if owner >= 0 {
					return c.violation(Owner, ch, r, -1, -1, fmt.Sprintf("complete at ranks %d and %d, so its output block is ambiguous", owner, r))
				}
				owner = r
			} else if k := popcount(c.ones(r)); k > bestN {
				best, bestN = r, k
			}
		}
		if owner < 0 {
			return c.compare(ch, best, c.all) // the rank closest to complete says what is wrong
		}
		if fl := c.ix.Chunk(ch); len(fl) > 0 {
			c.owned[owner] += c.p.Flows[fl[0]].Fraction
		}
	case ten.AllGather:
		for r := 0; r < c.n; r++ {
			o, m := c.ones(r), c.many(r)
			to, tm := c.total[r*2*c.w:r*2*c.w+c.w], c.total[r*2*c.w+c.w:(r+1)*2*c.w]
			for i := range o {
				if dup := (to[i] & o[i]) | m[i]; dup != 0 {
					return c.violation(Twice, ch, r, i*64+bits.TrailingZeros64(dup), -1, "")
				}
			}
			addCounts(to, tm, o, m)
		}
	}
	return nil
}

// compare checks rank r's state in chunk ch against the wanted set.
func (c *checker) compare(ch, r int, want []uint64) *Violation {
	o, m := c.ones(r), c.many(r)
	for i := range want {
		if dup := m[i]; dup != 0 {
			return c.violation(Twice, ch, r, i*64+bits.TrailingZeros64(dup), -1, "")
		}
		if miss := want[i] &^ o[i]; miss != 0 {
			return c.violation(Missing, ch, r, i*64+bits.TrailingZeros64(miss), -1, "")
		}
	}
	return nil
}

func (c *checker) finalAllGather() error {
	for r := 0; r < c.n; r++ {
		to := c.total[r*2*c.w : r*2*c.w+c.w]
		for i := range to {
			if miss := c.all[i] &^ to[i]; miss != 0 {
				return c.violation(Missing, -1, r, i*64+bits.TrailingZeros64(miss), -1, "no chunk delivers it")
			}
		}
	}
	return nil
}

func popcount(s []uint64) int {
	k := 0
	for _, x := range s {
		k += bits.OnesCount64(x)
	}
	return k
}
