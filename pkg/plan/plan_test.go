package plan

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/react-torch/react-torch/pkg/critpath"
	"github.com/react-torch/react-torch/pkg/pattern"
	"github.com/react-torch/react-torch/pkg/semantics"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/react-torch/react-torch/pkg/transform"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// cases are every op's patterns, as generated and with chunk swaps that
// keep them correct (the tuner's patterns).
func cases(t testing.TB) map[string]*ten.Pattern {
	out := map[string]*ten.Pattern{}
	for _, op := range []ten.Op{ten.AllReduce, ten.AllGather, ten.ReduceScatter, ten.Broadcast, ten.Reduce} {
		for _, algo := range pattern.Algos(op) {
			for _, n := range []int{2, 3, 5, 8} {
				root := -1
				if op == ten.Broadcast || op == ten.Reduce {
					root = n - 1
				}
				p, err := pattern.Generate(op, algo, n, root)
				if err != nil {
					continue
				}
				name := fmt.Sprintf("%v/%s/%d", op, algo, n)
				out[name] = p
				q := transform.Apply(p, transform.ChunkSwap(0, 0, n-1))
				if semantics.Check(q) == nil {
					out[name+"/swapped"] = q
				}
			}
		}
	}
	if len(out) < 40 {
		t.Fatalf("only %d patterns", len(out))
	}
	return out
}

func numelFor(p *ten.Pattern) int64 {
	if p.Op == ten.AllGather || p.Op == ten.ReduceScatter {
		return 1000 * int64(p.Ranks)
	}
	return 1000*int64(p.Ranks) + 7
}

func plans(t testing.TB, p *ten.Pattern, numel int64, itemsize, seg int) []*Plan {
	ly, err := semantics.NewLayout(p)
	if err != nil {
		t.Fatal(err)
	}
	d := critpath.New(p)
	var out []*Plan
	for r := range p.Ranks {
		pl, err := New(p, ly, d, r, numel, itemsize, seg)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, pl)
	}
	return out
}

// What each rank sends is what its peer receives: same step, tag, flows,
// elements and segments; every flow travels in exactly one message.
func TestEverySendIsItsPeersReceive(t *testing.T) {
	for name, p := range cases(t) {
		t.Run(name, func(t *testing.T) {
			type key struct{ step, src, dst int32 }
			sent, got := map[key]string{}, map[key]string{}
			flows := 0
			for r, pl := range plans(t, p, numelFor(p), 4, 1024) {
				for _, s := range pl.Sends {
					if s.Src != int32(r) {
						t.Fatalf("rank %d sends a message from %d", r, s.Src)
					}
					sent[key{s.Step, s.Src, s.Dst}] = fmt.Sprint(s.Tag, s.Flows, s.Size, s.Segs)
					flows += len(s.Flows)
				}
				for _, m := range pl.Recvs {
					if m.Dst != int32(r) {
						t.Fatalf("rank %d receives a message for %d", r, m.Dst)
					}
					got[key{m.Step, m.Src, m.Dst}] = fmt.Sprint(m.Tag, m.Flows, m.Size, m.Segs)
				}
			}
			if fmt.Sprint(sent) != fmt.Sprint(got) {
				t.Fatalf("sends and receives differ:\n%v\n%v", sent, got)
			}
			if flows != len(p.Flows) {
				t.Fatalf("%d flows in messages, pattern has %d", flows, len(p.Flows))
			}
		})
	}
}

// A send waits for exactly the receives that carry its flows' preds, all
// of earlier steps; it streams along a dep only where both carry the same
// elements in the same segments.
func TestSendsWaitForTheirInputs(t *testing.T) {
	for name, p := range cases(t) {
		t.Run(name, func(t *testing.T) {
			d := critpath.New(p)
			for _, pl := range plans(t, p, numelFor(p), 4, 1024) {
				into := map[int32]int32{}
				for j, m := range pl.Recvs {
					for _, f := range m.Flows {
						into[f] = int32(j)
					}
				}
				for _, s := range pl.Sends {
					var want []int32
					for _, f := range s.Flows {
						for _, g := range d.Preds(int(f)) {
							want = append(want, into[g])
						}
					}
					slices.Sort(want)
					if want = slices.Compact(want); !slices.Equal(want, s.Deps) {
						t.Fatalf("send %+v waits for %v, want %v", s.Message, s.Deps, want)
					}
					for k, j := range s.Deps {
						r := pl.Recvs[j]
						if r.Step >= s.Step {
							t.Fatalf("send at step %d waits for a receive at step %d", s.Step, r.Step)
						}
						if same := r.Size > 0 && fmt.Sprint(spans(&r.Message)) == fmt.Sprint(spans(&s.Message)) && slices.Equal(r.Segs, s.Segs); same != s.Aligned[k] {
							t.Fatalf("aligned %v, want %v", s.Aligned[k], same)
						}
					}
				}
			}
		})
	}
}

// Chunks tile the buffer in chunk order (a reducescatter's tile their
// owner's block), and a message's segments tile the message.
func TestRangesTile(t *testing.T) {
	for name, p := range cases(t) {
		if p.Op == ten.AllGather {
			continue
		}
		for _, extra := range []int64{0, 1, 13} {
			numel := numelFor(p)
			if p.Op != ten.ReduceScatter {
				numel += extra
			}
			ly, _ := semantics.NewLayout(p)
			lo, hi := chunkBounds(p, ly, numel)
			if p.Op == ten.ReduceScatter {
				block := numel / int64(p.Ranks)
				for r := range int32(p.Ranks) {
					at := int64(r) * block
					for c := range lo {
						if ly.Owner[c] == r {
							if lo[c] != at || hi[c] < lo[c] {
								t.Fatalf("%s: chunk %d at [%d,%d), want from %d", name, c, lo[c], hi[c], at)
							}
							at = hi[c]
						}
					}
					if at != int64(r+1)*block {
						t.Fatalf("%s: rank %d's chunks end at %d, want %d", name, r, at, int64(r+1)*block)
					}
				}
				continue
			}
			if lo[0] != 0 || hi[len(hi)-1] != numel {
				t.Fatalf("%s: chunks span [%d,%d), want [0,%d)", name, lo[0], hi[len(hi)-1], numel)
			}
			for c := 1; c < len(lo); c++ {
				if lo[c] != hi[c-1] || hi[c] < lo[c] {
					t.Fatalf("%s: chunk %d at [%d,%d) after [%d,%d)", name, c, lo[c], hi[c], lo[c-1], hi[c-1])
				}
			}
		}
	}
	for _, c := range []struct {
		n            int64
		item, seg, k int
	}{{0, 4, 1024, 0}, {10, 4, 0, 1}, {1000, 4, 1024, 3}, {1 << 20, 4, 1024, MaxSegments}, {5, 4, 1, 5}} {
		s := segments(c.n, c.item, c.seg)
		if len(s) != c.k {
			t.Errorf("segments(%d, %d, %d): %d, want %d", c.n, c.item, c.seg, len(s), c.k)
		}
		at := int64(0)
		for _, r := range s {
			if r.Lo != at || r.empty() {
				t.Errorf("segments(%d, %d, %d): %v", c.n, c.item, c.seg, s)
			}
			at = r.Hi
		}
		if at != c.n {
			t.Errorf("segments(%d, %d, %d) end at %d", c.n, c.item, c.seg, at)
		}
	}
}

// A receive into place touches elements nothing else touches after it,
// and whatever touched them before built its data; the scratch holds
// every other receive, end to end.
func TestReceivesInPlaceAndScratch(t *testing.T) {
	direct := 0
	for name, p := range cases(t) {
		for _, pl := range plans(t, p, numelFor(p), 4, 0) {
			at := int64(0)
			for j, r := range pl.Recvs {
				rs := spans(&r.Message)
				if r.After >= 0 && (int(r.After) >= j || !meet(rs, spans(&pl.Recvs[r.After].Message))) {
					t.Fatalf("%s: receive %d after %d", name, j, r.After)
				}
				for _, i := range r.War {
					if pl.Sends[i].Step > r.Step || !meet(rs, spans(&pl.Sends[i].Message)) {
						t.Fatalf("%s: receive %d waits for send %d", name, j, i)
					}
				}
				if r.Direct {
					direct++
					if len(r.Ranges) != 1 || r.Kinds[0] != ten.KindCopy {
						t.Fatalf("%s: receive %d in place with %d ranges", name, j, len(r.Ranges))
					}
					for k := j + 1; k < len(pl.Recvs); k++ {
						if meet(rs, spans(&pl.Recvs[k].Message)) {
							t.Fatalf("%s: receive %d in place, %d touches its elements after", name, j, k)
						}
					}
					continue
				}
				if r.Size > 0 {
					if r.Offset != at {
						t.Fatalf("%s: receive %d at %d in scratch, want %d", name, j, r.Offset, at)
					}
					at += r.Size
				}
			}
			if at != pl.Need {
				t.Fatalf("%s: scratch %d, receives need %d", name, pl.Need, at)
			}
		}
	}
	if direct == 0 {
		t.Fatal("no receive lands in place")
	}
}

func TestNewRefuses(t *testing.T) {
	p, _ := pattern.Generate(ten.AllReduce, "ring", 4, -1)
	ly, _ := semantics.NewLayout(p)
	d := critpath.New(p)
	for _, c := range []struct {
		rank      int
		numel     int64
		item, seg int
		want      string
	}{
		{4, 10, 4, 0, "rank 4 out of range"},
		{-1, 10, 4, 0, "rank -1"},
		{0, -1, 4, 0, "element count -1"},
		{0, 10, 0, 0, "element size 0"},
		{0, 10, 4, -1, "segment size -1"},
	} {
		if _, err := New(p, ly, d, c.rank, c.numel, c.item, c.seg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(rank %d, numel %d, item %d, seg %d): %v, want %q", c.rank, c.numel, c.item, c.seg, err, c.want)
		}
	}
	q, _ := pattern.Generate(ten.AllReduce, "tree", 4, -1)
	if _, err := New(q, ly, d, 0, 10, 4, 0); err == nil {
		t.Error("a plan from another pattern's layout and DAG")
	}
}

// The plans of a few small patterns, written out (testdata/*.golden).
func TestGolden(t *testing.T) {
	for _, c := range []struct {
		op    ten.Op
		algo  string
		ranks int
		numel int64
		seg   int
	}{
		{ten.AllReduce, "tree", 4, 103, 128},
		{ten.AllReduce, "ring", 3, 9, 0},
		{ten.AllGather, "recursive_doubling", 4, 8, 0},
		{ten.ReduceScatter, "ring", 3, 12, 0},
	} {
		name := fmt.Sprintf("%v-%s-%d", c.op, c.algo, c.ranks)
		t.Run(name, func(t *testing.T) {
			p, err := pattern.Generate(c.op, c.algo, c.ranks, -1)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for r, pl := range plans(t, p, c.numel, 4, c.seg) {
				fmt.Fprintf(&b, "rank %d: peers %v, scratch %d\n", r, pl.Peers, pl.Need)
				for i, s := range pl.Sends {
					fmt.Fprintf(&b, "  send %d: step %d -> %d tag %d flows %v ranges %v kinds %v segs %v deps %v aligned %v\n",
						i, s.Step, s.Dst, s.Tag, s.Flows, s.Ranges, s.Kinds, s.Segs, s.Deps, s.Aligned)
				}
				for j, m := range pl.Recvs {
					fmt.Fprintf(&b, "  recv %d: step %d <- %d tag %d flows %v ranges %v kinds %v segs %v after %d war %v direct %v offset %d\n",
						j, m.Step, m.Src, m.Tag, m.Flows, m.Ranges, m.Kinds, m.Segs, m.After, m.War, m.Direct, m.Offset)
				}
			}
			path := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if b.String() != string(want) {
				t.Errorf("plan differs from %s (go test -update rewrites it):\n%s", path, b.String())
			}
		})
	}
}

func meet(a, b []Range) bool {
	for _, x := range a {
		for _, y := range b {
			if x.Lo < y.Hi && y.Lo < x.Hi {
				return true
			}
		}
	}
	return false
}

// The order constraints agree with their definitions checked pairwise
// over every two messages (what the index of shared ranges stands for).
func TestOrderAgainstPairwise(t *testing.T) {
	for name, p := range cases(t) {
		for _, numel := range []int64{numelFor(p), 1, 0} {
			for _, pl := range plans(t, p, numel, 4, 0) {
				d := critpath.New(p)
				anc := ancestors{d: d, mark: make([]int32, len(p.Flows))}
				for j, r := range pl.Recvs {
					rs := spans(&r.Message)
					after := int32(-1)
					for k := j - 1; k >= 0; k-- {
						if meet(rs, spans(&pl.Recvs[k].Message)) {
							after = int32(k)
							break
						}
					}
					var war []int32
					for i, s := range pl.Sends {
						if s.Step <= r.Step && meet(spans(&s.Message), rs) {
							war = append(war, int32(i))
						}
					}
					direct := len(r.Ranges) == 1 && r.Kinds[0] == ten.KindCopy
					for k := j + 1; direct && k < len(pl.Recvs); k++ {
						direct = !meet(rs, spans(&pl.Recvs[k].Message))
					}
					if direct {
						anc.of(int32(j+1), r.Flows)
						for _, i := range war {
							direct = direct && anc.any(pl.Sends[i].Flows)
						}
						for k := range j {
							if meet(rs, spans(&pl.Recvs[k].Message)) {
								direct = direct && anc.any(pl.Recvs[k].Flows)
							}
						}
					}
					if r.After != after || fmt.Sprint(r.War) != fmt.Sprint(war) || r.Direct != direct {
						t.Fatalf("%s numel %d rank %d receive %d: after %d war %v direct %v, pairwise %d %v %v",
							name, numel, pl.Rank, j, r.After, r.War, r.Direct, after, war, direct)
					}
				}
			}
		}
	}
}

// BenchmarkNew: a rank's plan, once per key and element count.
func BenchmarkNew(b *testing.B) {
	for _, c := range []struct {
		algo  string
		ranks int
	}{{"tree", 8}, {"ring", 8}, {"tree", 64}, {"ring", 64}, {"tree", 1024}, {"ring", 1024}} {
		p, err := pattern.Generate(ten.AllReduce, c.algo, c.ranks, -1)
		if err != nil {
			b.Fatal(err)
		}
		ly, _ := semantics.NewLayout(p)
		d := critpath.New(p)
		b.Run(fmt.Sprintf("%s/%d", c.algo, c.ranks), func(b *testing.B) {
			for b.Loop() {
				if _, err := New(p, ly, d, 1, 1<<24, 4, 1<<20); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
