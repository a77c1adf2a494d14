package ten

import (
	"errors"
	"strings"
	"testing"
)

func twoRankPattern() *Pattern {
	return &Pattern{Op: AllReduce, Algo: "test", Ranks: 2, Root: -1, Flows: []Flow{
		{Chunk: 0, Step: 1, Src: 0, Dst: 1, Kind: KindReduce, Fraction: 1},
		{Chunk: 0, Step: 2, Src: 1, Dst: 0, Kind: KindCopy, Fraction: 1},
	}}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(p *Pattern)
		want   string // substring of the error, "" for valid
	}{
		{"valid", func(p *Pattern) {}, ""},
		{"unknown op", func(p *Pattern) { p.Op = 9 }, "unknown op"},
		{"one rank", func(p *Pattern) { p.Ranks = 1 }, "at least 2 ranks"},
		{"root on allreduce", func(p *Pattern) { p.Root = 0 }, "has no root"},
		{"broadcast without root", func(p *Pattern) { p.Op = Broadcast }, "root -1 out of range"},
		{"no flows", func(p *Pattern) { p.Flows = nil }, "no flows"},
		{"src out of range", func(p *Pattern) { p.Flows[0].Src = 2 }, "flow 0: src: rank 2 out of range"},
		{"negative dst", func(p *Pattern) { p.Flows[1].Dst = -1 }, "flow 1: dst: rank -1 out of range"},
		{"self flow", func(p *Pattern) { p.Flows[0].Dst = 0 }, "self flow"},
		{"step zero", func(p *Pattern) { p.Flows[0].Step = 0 }, "steps start at 1"},
		{"negative chunk", func(p *Pattern) { p.Flows[0].Chunk = -1 }, "chunks start at 0"},
		{"bad kind", func(p *Pattern) { p.Flows[0].Kind = 7 }, "unknown kind"},
		{"zero fraction", func(p *Pattern) { p.Flows[0].Fraction = 0 }, "fraction"},
		{"fraction above one", func(p *Pattern) { p.Flows[0].Fraction = 1.5 }, "fraction"},
		{"ranks past the limit", func(p *Pattern) { p.Ranks = MaxRanks + 1 }, "at most 1024 ranks"},
		{"ranks at the limit", func(p *Pattern) { p.Ranks = MaxRanks }, ""},
		{"step past the limit", func(p *Pattern) { p.Flows[1].Step = MaxSteps + 1 }, "at most 4096 steps"},
		{"step at the limit", func(p *Pattern) { p.Flows[1].Step = MaxSteps }, ""},
		{"chunk id at the flow count", func(p *Pattern) { p.Flows[1].Chunk = 2 }, "ids lie below the flow count"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := twoRankPattern()
			tt.mutate(p)
			err := p.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want error containing %q", err, tt.want)
			}
			if limit := strings.Contains(tt.name, "past the limit") || strings.Contains(tt.name, "flow count"); errors.Is(err, ErrLimit) != limit {
				t.Fatalf("errors.Is(%v, ErrLimit) = %v, want %v", err, !limit, limit)
			}
		})
	}
}

func TestParseOpAndKind(t *testing.T) {
	for _, op := range []Op{AllReduce, AllGather, ReduceScatter, Broadcast, Reduce} {
		got, err := ParseOp(op.String())
		if err != nil || got != op {
			t.Errorf("ParseOp(%q) = %v, %v", op.String(), got, err)
		}
	}
	if _, err := ParseOp("alltoall"); err == nil || !strings.Contains(err.Error(), "alltoall") {
		t.Errorf("ParseOp(alltoall) error = %v, want one naming the op", err)
	}
	for _, k := range []Kind{KindReduce, KindCopy} {
		if got, err := ParseKind(k.String()); err != nil || got != k {
			t.Errorf("ParseKind(%q) = %v, %v", k, got, err)
		}
	}
	if _, err := ParseKind("add"); err == nil {
		t.Error("ParseKind(add) succeeded")
	}
}

func TestDegreesAndChunks(t *testing.T) {
	p := &Pattern{Op: AllReduce, Ranks: 3, Root: -1, Flows: []Flow{
		{Chunk: 1, Step: 2, Src: 2, Dst: 0, Kind: KindReduce, Fraction: .5},
		{Chunk: 0, Step: 1, Src: 1, Dst: 0, Kind: KindReduce, Fraction: .5},
		{Chunk: 1, Step: 1, Src: 1, Dst: 2, Kind: KindReduce, Fraction: .5},
		{Chunk: 0, Step: 1, Src: 2, Dst: 0, Kind: KindReduce, Fraction: .5},
	}}
	if p.Steps() != 2 || p.Chunks() != 2 {
		t.Fatalf("Steps, Chunks = %d, %d, want 2, 2", p.Steps(), p.Chunks())
	}
	d := NewDegrees(p)
	if d.In(1, 0) != 2 || d.Out(1, 1) != 2 || d.Out(1, 2) != 1 || d.In(2, 0) != 1 || d.In(1, 1) != 0 {
		t.Errorf("degrees wrong: in(1,0)=%d out(1,1)=%d out(1,2)=%d in(2,0)=%d", d.In(1, 0), d.Out(1, 1), d.Out(1, 2), d.In(2, 0))
	}
	if got := d.Flow(&p.Flows[3]); got != 2 {
		t.Errorf("flow degree = %d, want 2 (max of out 1 and in 2)", got)
	}
	ix := NewChunkIndex(p)
	if ix.Len() != 2 {
		t.Fatalf("chunk index len %d", ix.Len())
	}
	if got := ix.Chunk(0); len(got) != 2 || got[0] != 1 || got[1] != 3 {
		t.Errorf("chunk 0 flows = %v, want [1 3]", got)
	}
	if got := ix.Chunk(1); len(got) != 2 || got[0] != 2 || got[1] != 0 {
		t.Errorf("chunk 1 flows = %v, want [2 0] (step order)", got)
	}
}

func TestCloneIsDeep(t *testing.T) {
	p := twoRankPattern()
	q := p.Clone()
	q.Flows[0].Src = 1
	if p.Flows[0].Src != 0 {
		t.Fatal("Clone shares flows")
	}
}
