package driver

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/react-torch/react-torch/internal/fixture"
	"github.com/react-torch/react-torch/pkg/pattern"
	"github.com/react-torch/react-torch/pkg/shmring"
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
	d.Start(nil)
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
	st := d.Stats()
	if st.Batches != 1 || st.Epochs != 6 || st.Decisions != 1 || st.Patterns != 1 || st.LastEpoch != 5 {
		t.Fatalf("stats %+v", st)
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
	if st := d.Stats(); st.Version != 1 || st.LastEpoch != 15 || st.Rejected != 0 {
		t.Fatalf("stats after the switch %+v", st)
	}
}

func TestSubmitRefusals(t *testing.T) {
	p := pattern.TreeAllReduce(8)
	d := start(t, p)
	if err := d.Submit(batch(p, 0, 6, 0, 3)); err != nil {
		t.Fatal(err)
	}
	dec, _, _ := d.Decision(1 << 20)
	q, _ := wire.DecodeMsgpack(dec.Pattern)
	for _, tc := range []struct {
		name string
		b    *wire.FCTBatch
		kind Kind
		want string
	}{
		{"epoch again", batch(p, 5, 1, 0, -1), State, "not after the last epoch observed (5)"},
		{"wrong version", batch(q, 6, 1, 1, -1), State, "epoch 6 runs pattern version 0, the batch says version 1"},
		{"straddles the switch", batch(p, 6, 6, 0, -1), State, "epochs 6 to 9 were taken, 10 to 11 dropped"},
		{"flows", batch(pattern.TreeAllReduce(4), 12, 1, 1, -1), Invalid, "batch has 12 flows per epoch, pattern version 1 has 28"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := d.Submit(tc.b)
			if kind(err) != tc.kind || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v (kind %d), want kind %d containing %q", err, kind(err), tc.kind, tc.want)
			}
		})
	}
	if st := d.Stats(); st.Rejected != 4 || st.LastEpoch != 9 {
		t.Fatalf("stats %+v", st)
	}
}

func TestResetAndClose(t *testing.T) {
	p := pattern.TreeAllReduce(8)
	d := start(t, p)
	for range 2 {
		if err := d.Submit(batch(p, 0, 6, 0, 3)); err != nil {
			t.Fatal(err)
		}
		if dec, ok, _ := d.Decision(1 << 20); !ok || dec.Version != 1 {
			t.Fatalf("decision after reset: %v %+v", ok, dec)
		}
		if err := d.Reset(); err != nil {
			t.Fatal(err)
		}
		if st := d.Stats(); st.LastEpoch != -1 || st.Version != 0 {
			t.Fatalf("stats after reset %+v", st)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{d.Close(), d.Submit(batch(p, 0, 1, 0, -1)), d.Reset(), d.Attach(nil)} {
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

// TestGoroutinePanic: a panic on the goroutine answers the caller, fails
// every later call with the reason, and leaves Close working.
func TestGoroutinePanic(t *testing.T) {
	p := pattern.TreeAllReduce(4)
	d := start(t, p)
	b := batch(p, 0, 1, 0, -1)
	b.Elapsed = nil // Observe indexes Elapsed[0]: an index panic inside the goroutine
	err := d.Submit(b)
	if kind(err) != Internal || !strings.Contains(err.Error(), "tuner goroutine failed") {
		t.Fatalf("submit: %v", err)
	}
	if err := d.Reset(); kind(err) != Internal {
		t.Fatalf("reset after the panic: %v", err)
	}
	if !strings.Contains(d.LastError(), "index out of range") {
		t.Fatalf("last error %q", d.LastError())
	}
	if err := d.Close(); err != nil {
		t.Fatalf("close after the panic: %v", err)
	}
}

func region(n int) []byte {
	w := make([]uint64, n/8+1)
	return unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), n)
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !ok(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func TestRing(t *testing.T) {
	p := pattern.TreeAllReduce(8)
	d := start(t, p)
	size, _ := shmring.Size(4, 4096)
	mem := region(size)
	r, err := shmring.Format(mem, 4, 4096, shmring.CRC32C)
	if err != nil {
		t.Fatal(err)
	}
	push := func(b []byte) {
		t.Helper()
		for {
			err := r.Push(b)
			if err == nil {
				return
			}
			if !errors.Is(err, shmring.ErrFull) {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
	enc, _ := wire.EncodeFCTBatch(batch(p, 0, 3, 0, 3))
	push(enc)
	// message 1: corrupt payload, checksum kept from the good bytes
	push(enc)
	slot1 := shmring.HeaderSize + 4096
	mem[slot1+shmring.SlotHeader+10] ^= 0xff
	push([]byte("not msgpack"))
	enc, _ = wire.EncodeFCTBatch(batch(p, 3, 3, 0, 3))
	push(enc)
	// Attached only now: the damage above is done before the reader looks.
	if err := d.Attach(r); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the ring's four messages", func() bool { return d.Stats().RingSlots == 4 })
	st := d.Stats()
	if st.RingCorrupt != 1 || st.Rejected != 1 || st.Batches != 2 || st.Patterns != 1 || !st.RingAttached || r.Rejected() != 2 {
		t.Fatalf("stats %+v, ring rejected %d", st, r.Rejected())
	}
	if e := d.LastError(); !strings.Contains(e, "ring message 2") {
		t.Fatalf("last error %q", e)
	}
	// A torn slot (head published, seq not) is refused after the grace.
	le := func(off int, v uint64) { atomic.StoreUint64((*uint64)(unsafe.Pointer(&mem[off])), v) }
	le(64, r.Head()+1)
	// The counter and the message are published separately: wait for both.
	waitFor(t, "the torn slot", func() bool { return d.Stats().RingCorrupt == 2 && strings.Contains(d.LastError(), "torn slot") })
	if e := d.LastError(); !strings.Contains(e, "torn slot") {
		t.Fatalf("last error %q", e)
	}
	if err := d.Attach(nil); err != nil {
		t.Fatal(err)
	}
	if d.Stats().RingAttached {
		t.Fatal("still attached")
	}
	// A header the writer broke detaches the ring.
	if err := d.Attach(r); err != nil {
		t.Fatal(err)
	}
	le(64, 0) // head behind tail
	waitFor(t, "the ring to detach", func() bool { return !d.Stats().RingAttached })
	if e := d.LastError(); !strings.Contains(e, "behind tail") {
		t.Fatalf("last error %q", e)
	}
}

func TestConcurrentCallers(t *testing.T) {
	p := pattern.TreeAllReduce(8)
	d := start(t, p)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				switch (w + i) % 3 {
				case 0:
					d.Submit(batch(p, 1000*w+i, 1, 0, -1))
				case 1:
					d.Stats()
					d.Decision(1 << 20)
				case 2:
					d.LastError()
				}
			}
		}()
	}
	wg.Wait()
	if st := d.Stats(); st.Batches+st.Rejected == 0 {
		t.Fatalf("stats %+v", st)
	}
}

// BenchmarkSubmitToDecision: one 6-epoch batch of an 8-rank ring allreduce
// with a slow rank, from submission to the new pattern in hand.
func BenchmarkSubmitToDecision(b *testing.B) {
	for _, p := range []*ten.Pattern{pattern.TreeAllReduce(8), pattern.RingAllReduce(8)} {
		b.Run(p.Algo, func(b *testing.B) {
			d := start(b, p)
			bt := batch(p, 0, 6, 0, 3)
			for b.Loop() {
				if err := d.Submit(bt); err != nil {
					b.Fatal(err)
				}
				if _, ok, _ := d.Decision(1 << 20); !ok {
					b.Fatal("no decision")
				}
				if err := d.Reset(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
