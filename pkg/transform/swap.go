// Package transform holds REACT's three safe transforms (§5.3 of the paper),
// which relabel ranks inside a pattern without changing what it computes:
//
//	① Global: swap every occurrence of ranks x and y in every chunk.
//	② ChunkLocal: swap x and y in every flow of one chunk subgraph.
//	③ Position: swap two TEN vertices (chunk, step, rank) of one chunk: the
//	   flows into vertex (c, t, x) at step t and out of it at step t+1 move to
//	   rank y, and those of (c, t', y) to x.
//
// A swap's legality is decided by package semantics (or, for ③, by the
// equivalent fast evaluator in positions*.go); the degree rule of §5.3.2
// (Prune) then keeps only swaps that do not overload the replacement.
package transform

import (
	"fmt"

	"github.com/react-torch/react-torch/pkg/ten"
)

// Kind is the transform kind; lower values have priority (③ before ② before ①).
type Kind uint8

// Transform kinds, in priority order.
const (
	Position   Kind = 1 // ③
	ChunkLocal Kind = 2 // ②
	Global     Kind = 3 // ①
)

func (k Kind) String() string {
	switch k {
	case Position:
		return "position"
	case ChunkLocal:
		return "chunk"
	case Global:
		return "global"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Vertex is a TEN vertex of one chunk subgraph: rank Rank at the end of step
// Step (step 0 is the start).
type Vertex struct{ Chunk, Step, Rank int32 }

// Swap is one transform. For Global only A.Rank and B.Rank matter; for
// ChunkLocal also A.Chunk; for Position the full vertices (same chunk).
type Swap struct {
	Kind Kind
	A, B Vertex
}

// GlobalSwap returns ① for ranks x and y.
func GlobalSwap(x, y int) Swap {
	return Swap{Kind: Global, A: Vertex{-1, -1, int32(x)}, B: Vertex{-1, -1, int32(y)}}
}

// ChunkSwap returns ② for ranks x and y in chunk c.
func ChunkSwap(c, x, y int) Swap {
	return Swap{Kind: ChunkLocal, A: Vertex{int32(c), -1, int32(x)}, B: Vertex{int32(c), -1, int32(y)}}
}

// PositionSwap returns ③ for two vertices of one chunk.
func PositionSwap(a, b Vertex) Swap { return Swap{Kind: Position, A: a, B: b} }

func (s Swap) String() string {
	switch s.Kind {
	case Global:
		return fmt.Sprintf("global %d<->%d", s.A.Rank, s.B.Rank)
	case ChunkLocal:
		return fmt.Sprintf("chunk %d: %d<->%d", s.A.Chunk, s.A.Rank, s.B.Rank)
	case Position:
		return fmt.Sprintf("chunk %d: (step %d, rank %d)<->(step %d, rank %d)", s.A.Chunk, s.A.Step, s.A.Rank, s.B.Step, s.B.Rank)
	}
	return "invalid swap"
}

// relabel returns the new endpoints of flow f under the swap.
func (s Swap) relabel(f *ten.Flow) (src, dst int32) {
	src, dst = f.Src, f.Dst
	x, y := s.A.Rank, s.B.Rank
	switch s.Kind {
	case Global:
		src, dst = swapRank(src, x, y), swapRank(dst, x, y)
	case ChunkLocal:
		if f.Chunk == s.A.Chunk {
			src, dst = swapRank(src, x, y), swapRank(dst, x, y)
		}
	case Position:
		if f.Chunk != s.A.Chunk {
			return
		}
		switch {
		case f.Step == s.A.Step && f.Dst == x:
			dst = y
		case f.Step == s.B.Step && f.Dst == y:
			dst = x
		}
		switch {
		case f.Step == s.A.Step+1 && f.Src == x:
			src = y
		case f.Step == s.B.Step+1 && f.Src == y:
			src = x
		}
	}
	return
}

func swapRank(r, x, y int32) int32 {
	switch r {
	case x:
		return y
	case y:
		return x
	}
	return r
}

// Apply returns a copy of p with the swap applied. Flow indexes are kept, so
// per-flow history (FCTs, critical paths) still refers to the same flows.
func Apply(p *ten.Pattern, s Swap) *ten.Pattern {
	q := &ten.Pattern{}
	ApplyInto(q, p, s)
	return q
}

// ApplyInto is Apply writing into q, whose flow slice it reuses: a search
// that screens thousands of candidates keeps one scratch pattern.
func ApplyInto(q, p *ten.Pattern, s Swap) {
	fl := append(q.Flows[:0], p.Flows...)
	*q = *p
	q.Flows = fl
	for i := range q.Flows {
		q.Flows[i].Src, q.Flows[i].Dst = s.relabel(&p.Flows[i])
	}
}

// Changed lists the flows whose endpoints the swap changes.
func Changed(p *ten.Pattern, s Swap) []int32 {
	var out []int32
	for i := range p.Flows {
		f := &p.Flows[i]
		if s.Kind != Global && f.Chunk != s.A.Chunk {
			continue
		}
		if src, dst := s.relabel(f); src != f.Src || dst != f.Dst {
			out = append(out, int32(i))
		}
	}
	return out
}
