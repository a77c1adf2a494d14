package semantics

import (
	"fmt"
	"testing"

	"github.com/react-torch/react-torch/internal/fixture"
)

func TestLayout(t *testing.T) {
	// Recursive doubling on 4 ranks: step 1 carries the sender's own block,
	// step 2 the two blocks it then holds.
	ly, err := NewLayout(rdAllGather(4))
	if err != nil {
		t.Fatal(err)
	}
	p := rdAllGather(4)
	for f, fl := range p.Flows {
		got := fmt.Sprint(ly.Blocks[ly.Start[f]:ly.Start[f+1]])
		var want string
		if fl.Step == 1 {
			want = fmt.Sprint([]int32{fl.Src})
		} else {
			lo := fl.Src &^ 1
			want = fmt.Sprint([]int32{lo, lo + 1})
		}
		if got != want {
			t.Errorf("flow %d (%d->%d step %d) carries %s, want %s", f, fl.Src, fl.Dst, fl.Step, got, want)
		}
	}
	// Ring allgather: every flow carries exactly its chunk's block.
	p = ringAllGather(5)
	ly, err = NewLayout(p)
	if err != nil {
		t.Fatal(err)
	}
	for f, fl := range p.Flows {
		if b := ly.Blocks[ly.Start[f]:ly.Start[f+1]]; len(b) != 1 || b[0] != fl.Chunk {
			t.Errorf("ring flow %d carries %v, want [%d]", f, b, fl.Chunk)
		}
	}
	// Ring reducescatter: chunk c completes at rank c.
	ly, err = NewLayout(ringReduceScatter(5))
	if err != nil {
		t.Fatal(err)
	}
	for c, o := range ly.Owner {
		if int(o) != c {
			t.Errorf("chunk %d owned by %d", c, o)
		}
	}
	// A broken pattern has no layout.
	bad := ringAllGather(3)
	bad.Flows = bad.Flows[1:]
	if _, err := NewLayout(bad); err == nil {
		t.Error("layout of a pattern that fails the check")
	}
	if ly, _ := NewLayout(fixture.RingAllReduce(3)); ly.Owner[0] != -1 || len(ly.Blocks) != 0 {
		t.Error("allreduce has a layout")
	}
}
