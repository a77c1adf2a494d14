package plan

import (
	"fmt"
	"slices"

	"github.com/react-torch/react-torch/pkg/critpath"
	"github.com/react-torch/react-torch/pkg/ten"
)

// link fills in what orders the messages: each send's deps (and whether
// it streams along them), each receive's predecessor on its elements, the
// sends it must wait for, and whether it lands in place.
func (pl *Plan) link(p *ten.Pattern, d *critpath.DAG) error {
	into := make(map[int32]int32) // flow -> receive carrying it
	for j, r := range pl.Recvs {
		for _, f := range r.Flows {
			into[f] = int32(j)
		}
	}
	ss := make([][]Range, len(pl.Sends))
	for i := range pl.Sends {
		ss[i] = spans(&pl.Sends[i].Message)
	}
	rs := make([][]Range, len(pl.Recvs))
	for j := range pl.Recvs {
		rs[j] = spans(&pl.Recvs[j].Message)
	}
	for i := range pl.Sends {
		s := &pl.Sends[i]
		for _, f := range s.Flows {
			for _, g := range d.Preds(int(f)) {
				j, ok := into[g]
				if !ok {
					return fmt.Errorf("plan: flow %d's pred %d does not arrive at rank %d", f, g, pl.Rank)
				}
				s.Deps = append(s.Deps, j)
			}
		}
		slices.Sort(s.Deps)
		s.Deps = slices.Compact(s.Deps)
		for _, j := range s.Deps {
			r := &pl.Recvs[j]
			s.Aligned = append(s.Aligned, r.Size > 0 && slices.Equal(rs[j], ss[i]) && slices.Equal(r.Segs, s.Segs))
		}
	}
	// Two messages touch the same elements exactly where they carry a
	// range in common: chunks tile the buffer (blocks, for allgather), so
	// two ranges are the same or apart.
	at := map[Range]*touching{}
	touch := func(x Range) *touching {
		t := at[x]
		if t == nil {
			t = &touching{}
			at[x] = t
		}
		return t
	}
	for i := range pl.Sends {
		for _, x := range ss[i] {
			t := touch(x)
			t.sends = append(t.sends, int32(i))
		}
	}
	for j := range pl.Recvs {
		for _, x := range rs[j] {
			t := touch(x)
			t.recvs = append(t.recvs, int32(j))
		}
	}
	anc := ancestors{d: d, mark: make([]int32, len(p.Flows))}
	for j := range pl.Recvs {
		r := &pl.Recvs[j]
		for _, x := range rs[j] {
			t := at[x]
			if k, _ := slices.BinarySearch(t.recvs, int32(j)); k > 0 {
				r.After = max(r.After, t.recvs[k-1])
			}
			for _, i := range t.sends {
				if pl.Sends[i].Step <= r.Step {
					r.War = append(r.War, i)
				}
			}
		}
		slices.Sort(r.War)
		r.War = slices.Compact(r.War)
		r.Direct = pl.direct(j, rs, at, &anc)
		if !r.Direct && r.Size > 0 {
			r.Offset = pl.Need
			pl.Need += r.Size
		}
	}
	return nil
}

// touching are the sends and receives that carry one range, ascending.
type touching struct{ sends, recvs []int32 }

// direct says whether receive j may land in place: one range, a copy,
// whatever touched its elements before (the sends that read them, the
// receives that wrote them) among the ancestors of its data, and nothing
// touching them after it.
func (pl *Plan) direct(j int, rs [][]Range, at map[Range]*touching, anc *ancestors) bool {
	r := &pl.Recvs[j]
	if len(r.Ranges) != 1 || r.Kinds[0] != ten.KindCopy {
		return false
	}
	if len(rs[j]) == 0 {
		return true // nothing to receive
	}
	t := at[rs[j][0]]
	if t.recvs[len(t.recvs)-1] != int32(j) {
		return false
	}
	anc.of(int32(j+1), r.Flows)
	for _, i := range r.War {
		if !anc.any(pl.Sends[i].Flows) {
			return false
		}
	}
	for _, k := range t.recvs {
		if int(k) < j && !anc.any(pl.Recvs[k].Flows) {
			return false
		}
	}
	return true
}

// ancestors marks the flows a set of flows was built from (the preds,
// transitively), stamped so that one buffer serves every receive.
type ancestors struct {
	d     *critpath.DAG
	mark  []int32
	stamp int32
	todo  []int32
}

func (a *ancestors) of(stamp int32, flows []int32) {
	a.stamp = stamp
	a.todo = append(a.todo[:0], flows...)
	for _, f := range flows {
		a.mark[f] = -stamp // its own flows: seen, not ancestors
	}
	for len(a.todo) > 0 {
		f := a.todo[len(a.todo)-1]
		a.todo = a.todo[:len(a.todo)-1]
		for _, g := range a.d.Preds(int(f)) {
			if a.mark[g] != stamp && a.mark[g] != -stamp {
				a.mark[g] = stamp
				a.todo = append(a.todo, g)
			}
		}
	}
}

// any says whether one of flows is an ancestor.
func (a *ancestors) any(flows []int32) bool {
	for _, f := range flows {
		if a.mark[f] == a.stamp {
			return true
		}
	}
	return false
}

// spans are a message's non-empty ranges.
func spans(m *Message) []Range {
	out := make([]Range, 0, len(m.Ranges))
	for _, r := range m.Ranges {
		if !r.empty() {
			out = append(out, r)
		}
	}
	return out
}
