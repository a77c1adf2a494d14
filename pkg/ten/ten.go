// Package ten holds the time-expanded network (TEN) of a collective pattern:
// flows between ranks at logical steps, grouped into chunk subgraphs.
//
// A flow at step t goes from vertex (t-1, Src) to vertex (t, Dst). All flows
// of one step read the state left by the previous step. The package is pure:
// it validates structure and derives indexes, and knows nothing of what a
// collective computes (that is package semantics).
package ten

import (
	"errors"
	"fmt"
	"strings"
)

// Op is the collective operation a pattern implements.
type Op uint8

// The collective operations.
const (
	OpInvalid Op = iota
	AllReduce
	AllGather
	ReduceScatter
	Broadcast
	Reduce
)

var opNames = [...]string{"invalid", "allreduce", "allgather", "reducescatter", "broadcast", "reduce"}

func (o Op) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// Rooted reports whether the op has a root rank (broadcast, reduce).
func (o Op) Rooted() bool { return o == Broadcast || o == Reduce }

// ParseOp reads an op name as the JSON form spells it.
func ParseOp(s string) (Op, error) {
	for i := 1; i < len(opNames); i++ {
		if strings.EqualFold(s, opNames[i]) {
			return Op(i), nil
		}
	}
	return OpInvalid, fmt.Errorf("unknown op %q (want one of %s)", s, strings.Join(opNames[1:], ", "))
}

// Kind says what a flow does to the destination's value of its chunk.
type Kind uint8

// Flow kinds.
const (
	KindInvalid Kind = iota
	// KindReduce adds the source's partial value of the chunk into the destination's.
	KindReduce
	// KindCopy replaces the destination's value with the source's; for
	// allgather-like ops the destination gains what the source holds.
	KindCopy
)

func (k Kind) String() string {
	switch k {
	case KindReduce:
		return "reduce"
	case KindCopy:
		return "copy"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// ParseKind reads a kind name.
func ParseKind(s string) (Kind, error) {
	switch strings.ToLower(s) {
	case "reduce":
		return KindReduce, nil
	case "copy":
		return KindCopy, nil
	}
	return KindInvalid, fmt.Errorf("unknown flow kind %q (want reduce or copy)", s)
}

// Flow is one point-to-point transfer: an edge (Step-1, Src) -> (Step, Dst)
// of chunk subgraph Chunk, carrying Fraction of the full message buffer.
// Fields are int32 so that a 1024-rank ring (two million flows) stays small.
type Flow struct {
	Chunk    int32
	Step     int32
	Src      int32
	Dst      int32
	Kind     Kind
	Fraction float64
}

// Pattern is a collective pattern: the whole TEN of one collective call.
type Pattern struct {
	Op    Op
	Algo  string
	Ranks int
	Root  int // root rank for broadcast and reduce, else -1
	Flows []Flow
}

// Clone returns a deep copy.
func (p *Pattern) Clone() *Pattern {
	q := *p
	q.Flows = append([]Flow(nil), p.Flows...)
	return &q
}

// Steps is the largest step of any flow (0 for a pattern without flows).
func (p *Pattern) Steps() int {
	s := int32(0)
	for i := range p.Flows {
		s = max(s, p.Flows[i].Step)
	}
	return int(s)
}

// Chunks is one more than the largest chunk id (0 without flows).
func (p *Pattern) Chunks() int {
	c := int32(-1)
	for i := range p.Flows {
		c = max(c, p.Flows[i].Chunk)
	}
	return int(c) + 1
}

// Error is a structural defect of a pattern. Flow is the index of the
// offending flow, or -1 when the defect is in the header.
type Error struct {
	Flow  int
	Field string
	Msg   string
	// Limit marks a size past one of the limits below (errors.Is(err,
	// ErrLimit)), so that callers can tell "too large" from "malformed".
	Limit bool
}

func (e *Error) Error() string {
	if e.Flow < 0 {
		return fmt.Sprintf("pattern %s: %s", e.Field, e.Msg)
	}
	return fmt.Sprintf("pattern flow %d: %s: %s", e.Flow, e.Field, e.Msg)
}

// Unwrap makes errors.Is(err, ErrLimit) true for a size limit.
func (e *Error) Unwrap() error {
	if e.Limit {
		return ErrLimit
	}
	return nil
}

// ErrLimit is what every error about a pattern past MaxRanks, MaxSteps or
// the chunk bound wraps: the generators (package pattern), the checker
// (package semantics) and the decoders (package wire) refuse such patterns,
// and libreact maps the error to REACT_E_LIMIT.
var ErrLimit = errors.New("pattern size limit")

// Size limits. Everything derived from a pattern is sized by them, so that
// no input, however its header lies, makes a reader allocate much more than
// the bytes it was given:
//   - MaxRanks: the exactly-once checker keeps N x N bits per op (N^2/4
//     bytes: 256 KiB at 1024), the ring AllReduce has 2N(N-1) flows (2M,
//     64 MiB at 1024), the tuner's link model keeps N^2 pairs. REACT tunes
//     the pattern between hosts, and 1024 hosts is a large job.
//   - MaxSteps: per-(step, rank) indexes (Degrees, critical paths) are
//     MaxSteps x MaxRanks cells at most (32 MiB); the longest generated
//     pattern, the ring AllReduce, has 2(N-1) < MaxSteps steps.
//   - chunk ids lie below the flow count, so a chunk index is as long as
//     the flow list (every chunk holds a flow when ids are dense).
const (
	MaxRanks = 1024
	MaxSteps = 4 * MaxRanks
)

// Validate checks structure only: header fields, ranks in range, no self
// flows, steps from 1 to MaxSteps, chunks from 0 up and below the flow
// count, known kinds, fractions in (0, 1], and rank count at most MaxRanks.
// It does not check what the pattern computes.
func (p *Pattern) Validate() error {
	if p.Op < AllReduce || p.Op > Reduce {
		return &Error{-1, "op", fmt.Sprintf("unknown op %d", uint8(p.Op)), false}
	}
	if p.Ranks < 2 {
		return &Error{-1, "ranks", fmt.Sprintf("need at least 2 ranks, got %d", p.Ranks), false}
	}
	if p.Ranks > MaxRanks {
		return &Error{-1, "ranks", fmt.Sprintf("at most %d ranks (ten.MaxRanks), got %d", MaxRanks, p.Ranks), true}
	}
	if p.Op.Rooted() {
		if p.Root < 0 || p.Root >= p.Ranks {
			return &Error{-1, "root", fmt.Sprintf("root %d out of range [0, %d) for %s", p.Root, p.Ranks, p.Op), false}
		}
	} else if p.Root != -1 {
		return &Error{-1, "root", fmt.Sprintf("%s has no root, want -1, got %d", p.Op, p.Root), false}
	}
	if len(p.Flows) == 0 {
		return &Error{-1, "flows", "pattern has no flows", false}
	}
	n := int32(p.Ranks)
	for i := range p.Flows {
		f := &p.Flows[i]
		switch {
		case f.Src < 0 || f.Src >= n:
			return &Error{i, "src", fmt.Sprintf("rank %d out of range [0, %d)", f.Src, n), false}
		case f.Dst < 0 || f.Dst >= n:
			return &Error{i, "dst", fmt.Sprintf("rank %d out of range [0, %d)", f.Dst, n), false}
		case f.Src == f.Dst:
			return &Error{i, "dst", fmt.Sprintf("self flow at rank %d", f.Src), false}
		case f.Step < 1:
			return &Error{i, "step", fmt.Sprintf("steps start at 1, got %d", f.Step), false}
		case f.Step > MaxSteps:
			return &Error{i, "step", fmt.Sprintf("at most %d steps (ten.MaxSteps), got step %d", MaxSteps, f.Step), true}
		case f.Chunk < 0:
			return &Error{i, "chunk", fmt.Sprintf("chunks start at 0, got %d", f.Chunk), false}
		case int(f.Chunk) >= len(p.Flows):
			return &Error{i, "chunk", fmt.Sprintf("chunk id %d, but the pattern has %d flows: ids lie below the flow count", f.Chunk, len(p.Flows)), true}
		case f.Kind != KindReduce && f.Kind != KindCopy:
			return &Error{i, "kind", fmt.Sprintf("unknown kind %d", uint8(f.Kind)), false}
		case !(f.Fraction > 0 && f.Fraction <= 1):
			return &Error{i, "fraction", fmt.Sprintf("want a share in (0, 1], got %v", f.Fraction), false}
		}
	}
	return nil
}
