package control

// A rank's control plane as text scripts (testdata/*.txt), in the manner
// of etcd-io/raft; `go test ./internal/control -rewrite` rewrites the
// expected output after a deliberate change.
//
//	plane batch=3 [mincalls=0] [leader] [untuned]
//	key algo=ring ranks=4 [numel=4096] [op=allreduce]
//	    adds a key; prints its id and whether it is tuned.
//	run id=0 [n=1] [at=T] [deferred] [bad]
//	    n epochs of the key: begin, then end with this rank's arrivals
//	    (rank 0 of the pattern, one per flow into it), and where an exchange
//	    is due, send at time at (+1 a send); prints switches, dues, sends.
//	fill x=1 i=0
//	row x=1      prints the row's length and its finite values' count
//	layout x=1
//	decide id=0 version=1 effective=E [swap=0,1] [bad]
//	    the leader's tuner decides a pattern: the key's version 0 with
//	    ranks swapped, or one with a flow dropped (fails the check).
//	deadline x=1
//	answer x=1 [report=TEXT]   the leader's answer, decoded
//	check x=1   checks the last answer; prints each decision's verdict
//	accept x=1 [votes=1,0]     (default: this rank's verdicts)
//	report
//	stats

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/react-torch/react-torch/internal/fixture"
	"github.com/react-torch/react-torch/pkg/pattern"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/react-torch/react-torch/pkg/transform"
	"github.com/react-torch/react-torch/pkg/wire"
)

// promise is what End said of the next epoch: it runs version unless an
// exchange is sent first (the runtime then skips Begin).
type promise struct{ epoch, version, sends int }

type script struct {
	c     *Plane
	sends int
	// per key, what its last End promised the next Begin (when it did)
	skip   map[int]promise
	at     float64
	body   []byte
	ok     []bool
	swapAt map[int]int // key -> epoch of the last switch seen
}

func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		s := &script{}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out, err := s.exec(d)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			return out
		})
	})
}

func (s *script) exec(d *datadriven.TestData) (string, error) {
	args := fixture.ArgsOf(d)
	has, num, real := args.Has, args.Int, args.Float
	flag := has("leader")
	id, x := num("id", 0), num("x", 1)
	switch d.Cmd {
	case "plane":
		c, err := New(Config{Batch: num("batch", 3), MinCalls: num("mincalls", 0), Tuned: !has("untuned"), Leader: flag})
		if err != nil {
			return "", err
		}
		s.c, s.at, s.skip = c, 0, nil
		return "ok\n", nil
	case "key":
		op := ten.AllReduce
		if v, ok := args["op"]; ok {
			var err error
			if op, err = ten.ParseOp(v); err != nil {
				return "", err
			}
		}
		p, err := pattern.Generate(op, args["algo"], num("ranks", 4), -1)
		if err != nil {
			return "", err
		}
		raw, err := wire.EncodeMsgpack(p)
		if err != nil {
			return "", err
		}
		got := s.c.AddKey(p, raw, int64(num("numel", 4096)))
		return fmt.Sprintf("key %d tuned %v\n", got, s.c.Stats()[got].Tuned), nil
	case "run":
		var out strings.Builder
		for range num("n", 1) {
			e, v, err := s.c.Begin(id)
			if err != nil {
				return "", err
			}
			if p, ok := s.skip[id]; ok && p.sends == s.sends && (e != p.epoch || v != p.version) {
				return "", fmt.Errorf("key %d: End promised epoch %d on version %d, Begin gave %d on %d", id, p.epoch, p.version, e, v)
			}
			st := s.c.Stats()[id]
			if st.Switches > 0 && st.Version == v && e > 0 && s.switched(id, st.Switches) {
				fmt.Fprintf(&out, "epoch %d: switched to version %d\n", e, v)
			}
			r := s.record(id, v, has("deferred"), has("bad"))
			due, err := s.c.End(id, r)
			delete(s.skip, id)
			if err != nil {
				fmt.Fprintf(&out, "epoch %d: error: %v\n", e, err)
				continue
			}
			if !due.Ask {
				if s.skip == nil {
					s.skip = map[int]promise{}
				}
				s.skip[id] = promise{epoch: due.Next, version: v, sends: s.sends}
			}
			if due.X == 0 {
				continue
			}
			if due.Need >= 1 && s.c.Replied() < due.Need {
				fmt.Fprintf(&out, "epoch %d: exchange %d due, waits for answer %d (in: %d)\n", e, due.X, due.Need, s.c.Replied())
				return out.String(), nil
			}
			s.at += real("at", 1)
			got, def, err := s.c.Send(s.at)
			if err != nil {
				return "", err
			}
			s.sends++
			fmt.Fprintf(&out, "epoch %d: sent exchange %d at %g", e, got, s.at)
			if def > 0 {
				fmt.Fprintf(&out, " (%d deferred)", def)
			}
			out.WriteString("\n")
		}
		if out.Len() == 0 {
			return "ok\n", nil
		}
		return out.String(), nil
	case "send":
		s.at += real("at", 1)
		got, def, err := s.c.Send(s.at)
		if err != nil {
			return "", err
		}
		s.sends++
		return fmt.Sprintf("sent exchange %d at %g (%d deferred)\n", got, s.at, def), nil
	case "fill":
		ex, err := s.c.exchange(x)
		if err != nil {
			return "", err
		}
		i := num("i", 0)
		if i >= len(ex.deferred) {
			return "", s.c.Fill(x, i, Record{})
		}
		d := ex.deferred[i]
		r := Record{Elapsed: 0.01}
		for f, fl := range d.p.Flows {
			if fl.Dst == 0 {
				r.Flows, r.Arrivals = append(r.Flows, int64(f)), append(r.Arrivals, 1e-3*float64(f+1))
			}
		}
		if has("bad") {
			r.Flows, r.Arrivals = append(r.Flows, 1<<20), append(r.Arrivals, 1)
		}
		if err := s.c.Fill(x, i, r); err != nil {
			return "", err
		}
		return "ok\n", nil
	case "row":
		row, err := s.c.Row(x)
		if err != nil {
			return "", err
		}
		n := 0
		for _, v := range row {
			if !math.IsInf(v, -1) {
				n++
			}
		}
		return fmt.Sprintf("%d values, %d from this rank, report slot %v\n", len(row), n, row[len(row)-1]), nil
	case "layout":
		ly, err := s.c.Layout(x)
		if err != nil {
			return "", err
		}
		return fmt.Sprintln(ly), nil
	case "decide":
		p := s.c.keys[id].patterns[0]
		var q *ten.Pattern
		if has("bad") {
			q = p.Clone()
			q.Flows = q.Flows[1:]
		} else {
			sw := args.Ints("swap")
			q = transform.Apply(p, transform.GlobalSwap(sw[0], sw[1]))
		}
		raw, err := wire.EncodeMsgpack(q)
		if err != nil {
			return "", err
		}
		s.c.Decided([]Decision{{Key: id, Version: num("version", 1), Effective: num("effective", 0), Pattern: raw}})
		return "ok\n", nil
	case "deadline":
		dl, err := s.c.Deadline(x)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%.3f\n", dl), nil
	case "answer":
		b, err := s.c.Answer(x, []byte(args["report"]))
		if err != nil {
			return "", err
		}
		s.body = b
		a, err := wire.DecodeAnswer(b)
		if err != nil {
			return "", err
		}
		out := fmt.Sprintf("every %d, report %q\n", a.Every, a.Report)
		for _, d := range a.Decisions {
			out += fmt.Sprintf("item %d: version %d from epoch %d\n", d.Item, d.Version, d.Effective)
		}
		return out, nil
	case "check":
		ok, err := s.c.Check(x, s.body)
		if err != nil {
			return "", err
		}
		s.ok = ok
		ex := s.c.out[x]
		var out strings.Builder
		for i, v := range ok {
			if v {
				fmt.Fprintf(&out, "decision %d: ok\n", i)
			} else {
				fmt.Fprintf(&out, "decision %d: refused: %s\n", i, ex.why[i])
			}
		}
		if out.Len() == 0 {
			return "no decisions\n", nil
		}
		return out.String(), nil
	case "accept":
		votes := s.ok
		if has("votes") {
			votes = nil
			for _, n := range args.Ints("votes") {
				votes = append(votes, n != 0)
			}
		}
		ref, resync, err := s.c.Accept(x, votes)
		if err != nil {
			return "", err
		}
		out := fmt.Sprintf("replied %d resync %v\n", s.c.Replied(), resync)
		for _, r := range ref {
			out += fmt.Sprintf("refused key %d version %d: %s\n", r.Key, r.Version, r.Why)
		}
		return out, nil
	case "report":
		return fmt.Sprintf("%q\n", s.c.Report()), nil
	case "ask":
		s.c.AskReport()
		return "ok\n", nil
	case "stats":
		var out strings.Builder
		for i, st := range s.c.Stats() {
			fmt.Fprintf(&out, "key %d: epoch %d version %d switches %d refused %d tuned %v\n", i, st.Epoch, st.Version, st.Switches, st.Refused, st.Tuned)
		}
		fmt.Fprintf(&out, "sent %d replied %d every %d clock %d\n", s.c.sent, s.c.replied, s.c.every, s.c.clock)
		return out.String(), nil
	}
	return "", fmt.Errorf("unknown command %q", d.Cmd)
}

// switched says whether the key's switch count grew since the last look.
func (s *script) switched(id, n int) bool {
	if s.swapAt == nil {
		s.swapAt = map[int]int{}
	}
	if s.swapAt[id] == n {
		return false
	}
	s.swapAt[id] = n
	return true
}

// record is rank 0's record of an epoch of key id's version v: an arrival
// for every flow into rank 0 (1 ms apart), entered at 0.
func (s *script) record(id, v int, deferred, bad bool) Record {
	r := Record{Elapsed: 0.01, Entry: 0, Deferred: deferred}
	if id >= 0 {
		for f, fl := range s.c.keys[id].patterns[v].Flows {
			if fl.Dst == 0 {
				r.Flows, r.Arrivals = append(r.Flows, int64(f)), append(r.Arrivals, 1e-3*float64(f+1))
			}
		}
	}
	if bad {
		r.Flows = append(r.Flows, 1<<20)
		r.Arrivals = append(r.Arrivals, 1)
	}
	return r
}

func TestConfigRefused(t *testing.T) {
	for _, c := range []Config{{Batch: 0}, {Batch: -1}, {Batch: 2, MinCalls: -1}} {
		if _, err := New(c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

// Every Resync-th accepted exchange tells the runtime to estimate the group
// clock again, the same exchange on every rank.
func TestResync(t *testing.T) {
	c, err := New(Config{Batch: 1, Tuned: true, Leader: true})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := pattern.Generate(ten.AllReduce, "tree", 4, -1)
	raw, _ := wire.EncodeMsgpack(p)
	id := c.AddKey(p, raw, 4096)
	var at []int
	for e := range 3 * Resync {
		if _, _, err := c.Begin(id); err != nil {
			t.Fatal(err)
		}
		due, err := c.End(id, Record{Elapsed: 1e-3, Entry: -1})
		if err != nil || due.X == 0 {
			t.Fatalf("epoch %d: %+v %v", e, due, err)
		}
		x, _, err := c.Send(float64(e))
		if err != nil {
			t.Fatal(err)
		}
		body, err := c.Answer(x, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Check(x, body); err != nil {
			t.Fatal(err)
		}
		_, resync, err := c.Accept(x, nil)
		if err != nil {
			t.Fatal(err)
		}
		if resync {
			at = append(at, x)
		}
	}
	if len(at) != 3 || at[0] != Resync || at[2] != 3*Resync {
		t.Fatalf("resync at exchanges %v, want every %d-th", at, Resync)
	}
}

// BenchmarkEnd is the control plane's cost of one recorded call: Begin and
// End with this rank's arrivals, at 8 and 64 ranks (ring and tree).
func BenchmarkEnd(b *testing.B) {
	for _, algo := range []string{"tree", "ring"} {
		for _, n := range []int{8, 64} {
			b.Run(fmt.Sprintf("%s/%d", algo, n), func(b *testing.B) {
				c, _ := New(Config{Batch: 6, Tuned: true})
				p, _ := pattern.Generate(ten.AllReduce, algo, n, -1)
				raw, _ := wire.EncodeMsgpack(p)
				id := c.AddKey(p, raw, 1<<30)
				r := Record{Elapsed: 1e-3, Entry: 0}
				for f, fl := range p.Flows {
					if fl.Dst == 0 {
						r.Flows, r.Arrivals = append(r.Flows, int64(f)), append(r.Arrivals, 1e-4)
					}
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					c.Begin(id)
					due, _ := c.End(id, r)
					if due.X > 0 {
						x, _, _ := c.Send(float64(i))
						delete(c.out, x) // no answers here: the exchange is dropped
						c.replied = x
					}
				}
			})
		}
	}
}
