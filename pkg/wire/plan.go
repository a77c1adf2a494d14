package wire

import (
	"fmt"

	"github.com/react-torch/react-torch/pkg/plan"
	"github.com/vmihailenco/msgpack/v5"
)

// PlanFormat names the msgpack form of a plan.Plan.
const PlanFormat = "react.plan/v1"

// EncodePlan returns the msgpack form of one rank's plan, what the
// executor runs:
//
//	"format"        str  "react.plan/v1"
//	"rank", "numel", "need"  int  (need: scratch elements)
//	"tag_steps", "max_segments"  int  plan.TagSteps, plan.MaxSegments
//	"peers"         [int]
//	"sends"         [message]  in step order, each a map of
//	    "step", "src", "dst", "tag", "size"  int
//	    "flows"   [int]  the pattern's flow indexes, in order
//	    "ranges"  [int]  lo, hi of each range of the working buffer, flat
//	    "kinds"   [int]  per range: 1 reduce, 2 copy (ten.Kind)
//	    "segs"    [int]  lo, hi of each segment of the message, flat
//	    "deps"    [int]  receives it waits for
//	    "aligned" [bool] per dep: streams segment by segment
//	"recvs"         [message]  the same fields but deps and aligned, and
//	    "after"   int    the receive before it on its elements, or -1
//	    "war"     [int]  sends it must wait for before it is applied
//	    "direct"  bool   received in place
//	    "offset"  int    into scratch, when not direct
func EncodePlan(pl *plan.Plan) ([]byte, error) {
	w := &appendWriter{b: make([]byte, 0, 256+64*(len(pl.Sends)+len(pl.Recvs)))}
	e := encoder{e: msgpack.NewEncoder(w)}
	e.do(e.e.EncodeMapLen(9))
	e.str("format", PlanFormat)
	e.int("rank", int64(pl.Rank))
	e.int("numel", pl.Numel)
	e.int("need", pl.Need)
	e.int("tag_steps", plan.TagSteps)
	e.int("max_segments", plan.MaxSegments)
	e.do(e.e.EncodeString("peers"))
	e.ints(pl.Peers)
	e.do(e.e.EncodeString("sends"))
	e.do(e.e.EncodeArrayLen(len(pl.Sends)))
	for i := range pl.Sends {
		s := &pl.Sends[i]
		e.do(e.e.EncodeMapLen(11))
		e.message(&s.Message)
		e.do(e.e.EncodeString("deps"))
		e.ints(s.Deps)
		e.do(e.e.EncodeString("aligned"))
		e.do(e.e.EncodeArrayLen(len(s.Aligned)))
		for _, a := range s.Aligned {
			e.do(e.e.EncodeBool(a))
		}
	}
	e.do(e.e.EncodeString("recvs"))
	e.do(e.e.EncodeArrayLen(len(pl.Recvs)))
	for j := range pl.Recvs {
		r := &pl.Recvs[j]
		e.do(e.e.EncodeMapLen(13))
		e.message(&r.Message)
		e.int("after", int64(r.After))
		e.do(e.e.EncodeString("war"))
		e.ints(r.War)
		e.do(e.e.EncodeString("direct"))
		e.do(e.e.EncodeBool(r.Direct))
		e.int("offset", r.Offset)
	}
	if e.err != nil {
		return nil, fmt.Errorf("wire: plan: %w", e.err)
	}
	return w.b, nil
}

// message writes the 9 fields every message has.
func (e *encoder) message(m *plan.Message) {
	e.int("step", int64(m.Step))
	e.int("src", int64(m.Src))
	e.int("dst", int64(m.Dst))
	e.int("tag", int64(m.Tag))
	e.int("size", m.Size)
	e.do(e.e.EncodeString("flows"))
	e.ints(m.Flows)
	e.do(e.e.EncodeString("ranges"))
	e.ranges(m.Ranges)
	e.do(e.e.EncodeString("kinds"))
	e.do(e.e.EncodeArrayLen(len(m.Kinds)))
	for _, k := range m.Kinds {
		e.do(e.e.EncodeUint8(uint8(k)))
	}
	e.do(e.e.EncodeString("segs"))
	e.ranges(m.Segs)
}

func (e *encoder) ints(v []int32) {
	e.do(e.e.EncodeArrayLen(len(v)))
	for _, x := range v {
		e.do(e.e.EncodeInt32(x))
	}
}

func (e *encoder) ranges(v []plan.Range) {
	e.do(e.e.EncodeArrayLen(2 * len(v)))
	for _, r := range v {
		e.do(e.e.EncodeInt(r.Lo))
		e.do(e.e.EncodeInt(r.Hi))
	}
}
