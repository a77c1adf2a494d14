package driver

import (
	"bytes"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/react-torch/react-torch/internal/fixture"
	"github.com/react-torch/react-torch/pkg/critpath"
	"github.com/react-torch/react-torch/pkg/pattern"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/react-torch/react-torch/pkg/tuner"
	"github.com/react-torch/react-torch/pkg/wire"
)

const msg = 1 << 20

// batch makes epochs epochs of fixture FCTs for p from epoch0, flows into
// slow (if >= 0) three times slower, with a little deterministic jitter.
func batch(p *ten.Pattern, epoch0, epochs, version, slow int) *wire.FCTBatch {
	b := &wire.FCTBatch{Epoch0: epoch0, Version: version, Epochs: epochs, Flows: len(p.Flows),
		FCT: make([]float64, 0, epochs*len(p.Flows)), Elapsed: make([]float64, epochs)}
	for e := range epochs {
		b.FCT = append(b.FCT, fixture.FCTs(p, msg, func(i int, f ten.Flow) float64 {
			x := 1 + 0.01*float64((e*7+i*3)%5)
			if int(f.Dst) == slow {
				x *= 3
			}
			return x
		})...)
	}
	return b
}

func start(t testing.TB, p *ten.Pattern) *Driver {
	t.Helper()
	d, err := New(tuner.DefaultConfig(), p, msg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func TestSubmitToDecision(t *testing.T) {
	p := pattern.TreeAllReduce(8)
	d := start(t, p)
	if _, ok, _ := d.Decision(1 << 20); ok {
		t.Fatal("a decision before any batch")
	}
	if err := d.Submit(batch(p, 0, 6, 0, 3)); err != nil {
		t.Fatal(err)
	}
	dec, ok, fits := d.Decision(10)
	if !ok || fits || dec.Version != 1 {
		t.Fatalf("short room: ok %v fits %v %+v", ok, fits, dec)
	}
	dec, ok, fits = d.Decision(len(dec.Pattern))
	if !ok || !fits || dec.Version != 1 || dec.Effective != 5+tuner.DefaultConfig().Lag {
		t.Fatalf("decision ok %v fits %v version %d effective %d", ok, fits, dec.Version, dec.Effective)
	}
	q, err := wire.DecodeMsgpack(dec.Pattern)
	if err != nil || len(q.Flows) != len(p.Flows) {
		t.Fatalf("decided pattern: %v", err)
	}
	if _, ok, _ := d.Decision(1 << 20); ok {
		t.Fatal("the same decision handed out twice")
	}
	// Epochs 6..9 still run version 0; epoch 10 switches.
	if err := d.Submit(batch(p, 6, 4, 0, 3)); err != nil {
		t.Fatal(err)
	}
	if err := d.Submit(batch(q, 10, 6, 1, 3)); err != nil {
		t.Fatal(err)
	}
	if err := d.Submit(batch(q, 15, 1, 1, 3)); kind(err) != State || !strings.Contains(err.Error(), "(15)") {
		t.Fatalf("epoch 15 again: %v", err)
	}
}

// decided is a driver on p whose tuner, after epochs 0 to 5 with rank 3
// slow, switches to q from epoch 10.
func decided(t *testing.T, p *ten.Pattern) (d *Driver, q *ten.Pattern) {
	t.Helper()
	d = start(t, p)
	if err := d.Submit(batch(p, 0, 6, 0, 3)); err != nil {
		t.Fatal(err)
	}
	dec, ok, _ := d.Decision(1 << 20)
	if !ok || dec.Effective != 10 {
		t.Fatalf("decision %v, effective epoch %d, want one from epoch 10", ok, dec.Effective)
	}
	q, err := wire.DecodeMsgpack(dec.Pattern)
	if err != nil {
		t.Fatal(err)
	}
	return d, q
}

func TestSubmitRefusals(t *testing.T) {
	p := pattern.TreeAllReduce(8)
	d, q := decided(t, p)
	for _, tc := range []struct {
		name string
		b    *wire.FCTBatch
		kind Kind
		want string
	}{
		{"epoch again", batch(p, 5, 1, 0, -1), State, "not after the last epoch observed (5)"},
		{"wrong version", batch(q, 6, 1, 1, -1), State, "epoch 6 runs pattern version 0, the batch says version 1"},
		{"flows", batch(pattern.TreeAllReduce(4), 12, 1, 1, -1), Invalid, "batch has 12 flows per epoch, pattern version 1 has 28"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := d.Submit(tc.b)
			if kind(err) != tc.kind || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v (kind %d), want kind %d containing %q", err, kind(err), tc.kind, tc.want)
			}
		})
	}
}

// A batch that ran version 0 past the switch's epoch 10 (the runtime
// switched later) is taken whole and defers the switch to epoch 12.
func TestSubmitPastTheSwitch(t *testing.T) {
	p := pattern.TreeAllReduce(8)
	d, q := decided(t, p)
	if err := d.Submit(batch(p, 6, 6, 0, -1)); err != nil {
		t.Fatal(err)
	}
	if err := d.Submit(batch(q, 12, 1, 1, -1)); err != nil {
		t.Fatal(err)
	}
}

func TestClose(t *testing.T) {
	p := pattern.TreeAllReduce(8)
	d := start(t, p)
	if err := d.Submit(batch(p, 0, 6, 0, 3)); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if !d.Closed() {
		t.Fatal("not closed")
	}
	for _, err := range []error{d.Close(), d.Submit(batch(p, 6, 1, 0, -1))} {
		if kind(err) != Closed {
			t.Fatalf("call after close: %v", err)
		}
	}
}

func TestNewRefuses(t *testing.T) {
	p := pattern.TreeAllReduce(4)
	bad := p.Clone()
	bad.Flows[0].Dst = (bad.Flows[0].Dst + 1) % 4
	if bad.Flows[0].Dst == bad.Flows[0].Src {
		bad.Flows[0].Dst = (bad.Flows[0].Dst + 1) % 4
	}
	cfg := tuner.DefaultConfig()
	cfg.B = 0
	for _, tc := range []struct {
		cfg   tuner.Config
		p     *ten.Pattern
		bytes float64
	}{{tuner.DefaultConfig(), bad, msg}, {cfg, p, msg}, {tuner.DefaultConfig(), p, 0}} {
		if _, err := New(tc.cfg, tc.p, tc.bytes); err == nil {
			t.Fatalf("New accepted %+v bytes %v", tc.cfg, tc.bytes)
		}
	}
}

// TestPanic: a panic in the tuner answers the caller, fails every later
// Submit with the reason, and leaves Close working.
func TestPanic(t *testing.T) {
	p := pattern.TreeAllReduce(4)
	d := start(t, p)
	b := batch(p, 0, 1, 0, -1)
	b.Elapsed = nil // Observe indexes Elapsed[0]: an index panic inside the tuner
	err := d.Submit(b)
	if kind(err) != Internal || !strings.Contains(err.Error(), "tuner failed") || !strings.Contains(err.Error(), "index out of range") {
		t.Fatalf("submit: %v", err)
	}
	if err := d.Submit(batch(p, 0, 1, 0, -1)); kind(err) != Internal || !strings.Contains(err.Error(), "index out of range") {
		t.Fatalf("submit after the panic: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("close after the panic: %v", err)
	}
}

func TestConcurrentCallers(t *testing.T) {
	p := pattern.TreeAllReduce(8)
	d := start(t, p)
	var wg sync.WaitGroup
	var mu sync.Mutex
	taken := 0
	for w := range 4 {
		wg.Go(func() {
			for i := range 50 {
				if (w+i)%2 == 0 {
					if d.Submit(batch(p, 1000*w+i, 1, 0, -1)) == nil {
						mu.Lock()
						taken++
						mu.Unlock()
					}
				} else {
					d.Decision(1 << 20)
				}
			}
		})
	}
	wg.Wait()
	if taken == 0 {
		t.Fatal("no batch taken")
	}
}

// BenchmarkSubmitToDecision: one 6-epoch batch of an 8-rank allreduce with
// a slow rank, from submission to the decision; the link model may rightly
// keep the pattern, the paper's loop must propose one.
func BenchmarkSubmitToDecision(b *testing.B) {
	for _, model := range []string{"react", "paper"} {
		for _, p := range []*ten.Pattern{pattern.TreeAllReduce(8), pattern.RingAllReduce(8)} {
			b.Run(model+"/"+p.Algo, func(b *testing.B) {
				cfg := tuner.DefaultConfig()
				cfg.Model = model
				bt := batch(p, 0, 6, 0, 3)
				for b.Loop() {
					b.StopTimer()
					d, err := New(cfg, p, msg)
					if err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					if err := d.Submit(bt); err != nil {
						b.Fatal(err)
					}
					if _, ok, _ := d.Decision(1 << 20); !ok && model == "paper" {
						b.Fatal("no new pattern")
					}
				}
			})
		}
	}
}

// A batch of arrivals (each flow's finish, as the dataflow executor
// records them) decides what the batch of the same flows' durations does.
func TestSubmitArrivals(t *testing.T) {
	p := pattern.TreeAllReduce(8)
	dur, arr := batch(p, 0, 6, 0, 3), batch(p, 0, 6, 0, 3)
	arr.Arrival = true
	dag := critpath.New(p)
	for e := range arr.Epochs {
		dag.Finish(dur.Row(e), arr.Row(e))
	}
	// the same flows' arrivals with each rank entering at its own time,
	// read from that rank's entry, and the entries on a shared clock
	ent := batch(p, 0, 6, 0, 3)
	ent.Arrival, ent.Ranks, ent.Entry = true, p.Ranks, make([]float64, 6*p.Ranks)
	order := make([]int, len(p.Flows))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int { return int(p.Flows[x].Step - p.Flows[y].Step) })
	abs := make([]float64, len(p.Flows))
	for e := range ent.Epochs {
		in := ent.EntryRow(e)
		for r := range in {
			in[r] = 100 + float64((e*5+r*3)%7)/1024 // late ranks, in exact binary fractions
		}
		w, out := dur.Row(e), ent.Row(e)
		for _, f := range order {
			fl := p.Flows[f]
			at := max(in[fl.Src], in[fl.Dst])
			for _, g := range dag.Preds(f) {
				at = max(at, abs[g])
			}
			abs[f] = at + w[f]
			out[f] = abs[f] - in[fl.Dst]
		}
	}
	a, b, c := start(t, p), start(t, p), start(t, p)
	if err := a.Submit(dur); err != nil {
		t.Fatal(err)
	}
	if err := b.Submit(arr); err != nil {
		t.Fatal(err)
	}
	if err := c.Submit(ent); err != nil {
		t.Fatal(err)
	}
	da, oka, _ := a.Decision(1 << 20)
	for name, d := range map[string]*Driver{"arrivals": b, "arrivals and entries": c} {
		db, okb, _ := d.Decision(1 << 20)
		if !oka || !okb || da.Version != db.Version || da.Effective != db.Effective || !bytes.Equal(da.Pattern, db.Pattern) {
			t.Fatalf("durations decided %v %+v, their %s %v %+v", oka, da, name, okb, db)
		}
	}
	bad := batch(p, 6, 6, 0, 3)
	bad.Arrival, bad.Ranks, bad.Entry = true, 3, make([]float64, 6*3)
	if err := a.Submit(bad); err == nil || !strings.Contains(err.Error(), "entry times of 3 ranks, pattern version 0 has 8") {
		t.Fatalf("entries of 3 ranks for 8: %v", err)
	}
}
