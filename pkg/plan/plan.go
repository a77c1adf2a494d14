// Package plan computes one rank's execution plan of a pattern: the
// messages it sends and receives, the element ranges each carries, the
// received messages each send waits for, and the order constraints that
// keep a dataflow run exact and deterministic. The executor
// (python/react_torch/executor.py) runs a plan as it is; the dependency
// rule is critpath's, the one the simulator and the link model's replay
// follow, so the runtime and the tuner's judge cannot drift apart.
//
// A plan is pure: it depends on the pattern, the rank, the element count,
// the element size and the segment size, and on nothing else.
package plan

import (
	"fmt"
	"math"
	"slices"

	"github.com/react-torch/react-torch/pkg/critpath"
	"github.com/react-torch/react-torch/pkg/semantics"
	"github.com/react-torch/react-torch/pkg/ten"
)

// Tags: a message's tag is its step modulo TagSteps, and a segment's tag
// on the wire is (salt*TagSteps + tag)*MaxSegments + segment (the
// executor's). A message is cut into at most MaxSegments segments.
const (
	TagSteps    = 16
	MaxSegments = 64
)

// Range is the elements [Lo, Hi) of a buffer.
type Range struct{ Lo, Hi int64 }

func (r Range) empty() bool { return r.Hi <= r.Lo }

// Message is the flows of one step between one pair of ranks, sent as one
// buffer: its ranges of the working buffer laid end to end, in flow order.
type Message struct {
	Step, Src, Dst int32
	// Tag is Step modulo TagSteps: the same on both sides, and unique
	// among the messages of a pair that can be in flight at once (one a
	// step, posted in step order on both sides; Gloo matches a tag's
	// messages in order).
	Tag    int32
	Flows  []int32
	Ranges []Range    // per flow (allgather: per block the flow carries)
	Kinds  []ten.Kind // per range: reduce into, or copy over, the elements
	Size   int64      // elements, the sum of the ranges' lengths
	Segs   []Range    // the message buffer cut into segments, in order
}

// Send is a message this rank sends.
type Send struct {
	Message
	// Deps are the receives (indexes into Plan.Recvs, ascending) whose
	// flows are preds of the send's flows: it may start once they have
	// arrived and been applied.
	Deps []int32
	// Aligned, per dep: the send carries exactly that receive's elements
	// in the same segments, so it streams segment by segment.
	Aligned []bool
}

// Recv is a message this rank receives.
type Recv struct {
	Message
	// After is the receive before it (in step order) that touches the
	// same elements, or -1: it is applied only after that one in full.
	After int32
	// War are the sends of its step or earlier that read its elements:
	// it is applied only after they have completed.
	War []int32
	// Direct: received into place, because whatever else touches its
	// elements is over before it can arrive (its data was built from it)
	// and nothing touches them after; else into scratch at Offset.
	Direct bool
	Offset int64
}

// Plan is one rank's view of a pattern for an element count.
type Plan struct {
	Rank  int
	Numel int64
	Sends []Send // in step order
	Recvs []Recv // in step order
	// Need is the scratch buffer's length in elements (the receives not
	// received in place, end to end).
	Need  int64
	Peers []int32 // the ranks this rank exchanges with, ascending
}

// New computes rank's plan of a checked pattern for numel elements of
// itemsize bytes, cut into segments of about segBytes (0: one segment a
// message). ly and d must be the pattern's (semantics.NewLayout,
// critpath.New).
func New(p *ten.Pattern, ly *semantics.Layout, d *critpath.DAG, rank int, numel int64, itemsize, segBytes int) (*Plan, error) {
	switch {
	case rank < 0 || rank >= p.Ranks:
		return nil, fmt.Errorf("plan: rank %d out of range for %d ranks", rank, p.Ranks)
	case numel < 0:
		return nil, fmt.Errorf("plan: element count %d, want >= 0", numel)
	case itemsize <= 0:
		return nil, fmt.Errorf("plan: element size %d, want > 0", itemsize)
	case segBytes < 0:
		return nil, fmt.Errorf("plan: segment size %d, want >= 0", segBytes)
	case d.Len() != len(p.Flows) || len(ly.Start) != len(p.Flows)+1:
		return nil, fmt.Errorf("plan: layout or DAG not the pattern's")
	}
	pl := &Plan{Rank: rank, Numel: numel}
	sends, recvs := messages(p, int32(rank))
	ranges := rangesOf(p, ly, numel)
	for _, m := range sends {
		ranges.fill(m)
		m.Segs = segments(m.Size, itemsize, segBytes)
		pl.Sends = append(pl.Sends, Send{Message: *m})
	}
	for _, m := range recvs {
		ranges.fill(m)
		m.Segs = segments(m.Size, itemsize, segBytes)
		pl.Recvs = append(pl.Recvs, Recv{Message: *m, After: -1})
	}
	if err := pl.link(p, d); err != nil {
		return nil, err
	}
	peers := map[int32]bool{}
	for _, s := range pl.Sends {
		peers[s.Dst] = true
	}
	for _, r := range pl.Recvs {
		peers[r.Src] = true
	}
	for r := range peers {
		pl.Peers = append(pl.Peers, r)
	}
	slices.Sort(pl.Peers)
	return pl, nil
}

// messages groups rank's flows by (step, src, dst), each message in the
// order of its first flow, then the messages in step order (stable).
func messages(p *ten.Pattern, rank int32) (sends, recvs []*Message) {
	type key struct{ step, src, dst int32 }
	at := map[key]*Message{}
	var order []*Message
	for i, f := range p.Flows {
		if f.Src != rank && f.Dst != rank {
			continue
		}
		k := key{f.Step, f.Src, f.Dst}
		m := at[k]
		if m == nil {
			m = &Message{Step: f.Step, Src: f.Src, Dst: f.Dst, Tag: f.Step % TagSteps}
			at[k] = m
			order = append(order, m)
		}
		m.Flows = append(m.Flows, int32(i))
	}
	slices.SortStableFunc(order, func(a, b *Message) int { return int(a.Step) - int(b.Step) })
	for _, m := range order {
		if m.Src == rank {
			sends = append(sends, m)
		} else {
			recvs = append(recvs, m)
		}
	}
	return sends, recvs
}

// elementRanges places the pattern's data in the working buffer: a chunk's
// contiguous elements (every op but allgather) or a block of numel/ranks
// elements per origin rank (allgather).
type elementRanges struct {
	p      *ten.Pattern
	ly     *semantics.Layout
	lo, hi []int64 // per chunk
	block  int64
}

func rangesOf(p *ten.Pattern, ly *semantics.Layout, numel int64) elementRanges {
	e := elementRanges{p: p, ly: ly}
	if p.Op == ten.AllGather || p.Op == ten.ReduceScatter {
		e.block = numel / int64(p.Ranks)
	}
	if p.Op != ten.AllGather {
		e.lo, e.hi = chunkBounds(p, ly, numel)
	}
	return e
}

func (e elementRanges) fill(m *Message) {
	for _, f := range m.Flows {
		fl := &e.p.Flows[f]
		if e.p.Op == ten.AllGather {
			for _, b := range e.ly.Blocks[e.ly.Start[f]:e.ly.Start[f+1]] {
				m.Ranges = append(m.Ranges, Range{int64(b) * e.block, int64(b+1) * e.block})
				m.Kinds = append(m.Kinds, ten.KindCopy)
			}
			continue
		}
		m.Ranges = append(m.Ranges, Range{e.lo[fl.Chunk], e.hi[fl.Chunk]})
		m.Kinds = append(m.Kinds, fl.Kind)
	}
	for _, r := range m.Ranges {
		m.Size += r.Hi - r.Lo
	}
}

// chunkBounds gives the chunks' element ranges: contiguous, in chunk
// order, sized by their share (the fraction of the chunk's first flow).
// A reducescatter's working buffer is the ranks' blocks of the input, and
// the chunks a rank owns tile its own block, in chunk order.
func chunkBounds(p *ten.Pattern, ly *semantics.Layout, numel int64) (lo, hi []int64) {
	nc := 0
	for _, f := range p.Flows {
		nc = max(nc, int(f.Chunk)+1)
	}
	share := make([]float64, nc)
	seen := make([]bool, nc)
	for _, f := range p.Flows {
		if !seen[f.Chunk] {
			seen[f.Chunk] = true
			share[f.Chunk] = f.Fraction
		}
	}
	lo, hi = make([]int64, nc), make([]int64, nc)
	if p.Op == ten.ReduceScatter {
		block := numel / int64(p.Ranks)
		for r := range int32(p.Ranks) {
			tot := 0.0
			for c := range nc {
				if ly.Owner[c] == r {
					tot += share[c]
				}
			}
			acc := 0.0
			for c := range nc {
				if ly.Owner[c] != r {
					continue
				}
				lo[c] = int64(r)*block + int64(math.RoundToEven(acc/tot*float64(block)))
				acc += share[c]
				hi[c] = int64(r)*block + int64(math.RoundToEven(acc/tot*float64(block)))
			}
		}
		return lo, hi
	}
	cum := make([]float64, nc+1)
	for c := range nc {
		cum[c+1] = cum[c] + share[c]
	}
	bound := func(c int) int64 { return int64(math.RoundToEven(cum[c] / cum[nc] * float64(numel))) }
	for c := range nc {
		lo[c], hi[c] = bound(c), bound(c+1)
	}
	return lo, hi
}

// segments cuts n elements into contiguous segments of about segBytes,
// at most MaxSegments (segBytes 0: one).
func segments(n int64, itemsize, segBytes int) []Range {
	if n == 0 {
		return nil
	}
	k := int64(1)
	if segBytes > 0 {
		k = max(1, min(MaxSegments, n*int64(itemsize)/int64(segBytes)))
	}
	var out []Range
	for i := range k {
		r := Range{n * i / k, n * (i + 1) / k}
		if !r.empty() {
			out = append(out, r)
		}
	}
	return out
}
