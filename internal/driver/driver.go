// Package driver runs one tuner on its own goroutine for the C ABI: it takes
// FCT batches from callers (Submit) and from a shared-memory ring, keeps the
// tuner's history, runs the tuner epoch by epoch, and keeps the latest new
// pattern for the caller to fetch. It is the thin Node around the tuner's
// RawNode; the tuner itself stays pure.
package driver

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/react-torch/react-torch/pkg/shmring"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/react-torch/react-torch/pkg/tuner"
	"github.com/react-torch/react-torch/pkg/wire"
	"go.uber.org/zap"
)

// Kind classifies a driver error for the C status codes.
type Kind int

// The kinds of driver errors.
const (
	Invalid  Kind = iota + 1 // the batch does not fit the tuner's pattern or is malformed
	State                    // the batch does not fit the tuner's state: epoch order, version
	Closed                   // the driver was closed
	Internal                 // the goroutine panicked; the driver is dead
)

// Error is a failure of a driver call.
type Error struct {
	Kind Kind
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

func errorf(k Kind, format string, a ...any) *Error { return &Error{k, fmt.Sprintf(format, a...)} }

// errClosedMsg is the message of every call on a closed driver.
const errClosedMsg = "tuner closed"

// Stats are the driver's counters since it was made.
type Stats struct {
	Batches      uint64 // batches taken in, from Submit and the ring
	Epochs       uint64 // epochs observed by the tuner
	RingSlots    uint64 // ring slots read, good or bad
	RingCorrupt  uint64 // ring slots refused: torn, truncated, checksum
	RingOverruns uint64 // ring messages overwritten before they were read
	Rejected     uint64 // batches refused: undecodable, or not fitting the tuner
	Decisions    uint64 // tuner decisions (one per tuner batch of B epochs)
	Patterns     uint64 // decisions that carried a new pattern
	Version      int64  // pattern version in force at the last observed epoch
	LastEpoch    int64  // last epoch observed, -1 before any
	RingAttached bool
}

// Decided is a new pattern the tuner emitted.
type Decided struct {
	Version   int    // its version
	Effective int    // first epoch every rank runs it
	Pattern   []byte // msgpack (package wire); never modified
}

// Polling of the ring: the reader spins briefly after activity, then backs
// off to at most pollMax between looks.
const (
	pollMin   = 20 * time.Microsecond
	pollMax   = time.Millisecond
	drainMax  = 64                   // ring slots per turn before requests are served
	tornGrace = 2 * time.Millisecond // a slot's seq may lag head this long before it counts as torn
)

type reqKind int

const (
	reqSubmit reqKind = iota
	reqAttach
	reqReset
	reqClose
)

type request struct {
	kind  reqKind
	batch *wire.FCTBatch
	ring  *shmring.Ring
	reply chan error
}

// Driver drives one tuner. Its methods are safe for concurrent use.
type Driver struct {
	initial *ten.Pattern
	cfg     tuner.Config
	bytes   float64

	reqs    chan request
	done    chan struct{}
	closing atomic.Bool

	mu        sync.Mutex
	stats     Stats
	out       *Decided
	delivered int    // last version handed out by Decision
	lastErr   string // last failure met on the ring
	broken    string // why the goroutine died, "" while it runs
}

// New checks the inputs and makes a driver; Start runs it.
func New(cfg tuner.Config, initial *ten.Pattern, messageBytes float64) (*Driver, error) {
	if _, err := tuner.New(cfg, initial, messageBytes); err != nil {
		return nil, err
	}
	d := &Driver{initial: initial.Clone(), cfg: cfg, bytes: messageBytes,
		reqs: make(chan request), done: make(chan struct{})}
	d.stats.LastEpoch = -1
	return d, nil
}

// Start starts the driver's goroutine; log may be nil.
func (d *Driver) Start(log *zap.Logger) {
	if log == nil {
		log = zap.NewNop()
	}
	tu, _ := tuner.New(d.cfg, d.initial, d.bytes) // checked by New
	g := &loop{d: d, tu: tu, log: log, last: -1}
	go g.run()
}

func (d *Driver) call(r request) error {
	r.reply = make(chan error, 1)
	select {
	case d.reqs <- r:
	case <-d.done:
		return d.gone()
	}
	return <-r.reply
}

// gone is the error of a call that found the goroutine ended.
func (d *Driver) gone() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.broken != "" {
		return &Error{Internal, d.broken}
	}
	return &Error{Closed, errClosedMsg}
}

// Submit hands one batch to the tuner goroutine and returns once the tuner
// has taken it in: when the batch completed a tuner batch, its decision is
// ready on return.
func (d *Driver) Submit(b *wire.FCTBatch) error {
	return d.call(request{kind: reqSubmit, batch: b})
}

// Attach makes the goroutine consume r, in place of any ring attached
// before; nil detaches. On return the goroutine no longer reads the
// previous ring.
func (d *Driver) Attach(r *shmring.Ring) error { return d.call(request{kind: reqAttach, ring: r}) }

// Reset puts the tuner back to the initial pattern (version 0) with an
// empty history; counters and the attached ring stay.
func (d *Driver) Reset() error { return d.call(request{kind: reqReset}) }

// Close stops the goroutine; on return it no longer reads any ring. A
// second Close is an error.
func (d *Driver) Close() error {
	if !d.closing.CompareAndSwap(false, true) {
		return &Error{Closed, errClosedMsg}
	}
	if err := d.call(request{kind: reqClose}); err != nil && kind(err) != Internal {
		return err
	}
	return nil // a driver whose goroutine died closes all the same
}

func kind(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return 0
}

// Closed reports whether Close was called.
func (d *Driver) Closed() bool { return d.closing.Load() }

// Refused counts a batch the caller could not decode, as Submit counts
// one the tuner refused.
func (d *Driver) Refused() {
	d.mu.Lock()
	d.stats.Rejected++
	d.mu.Unlock()
}

// Stats returns the counters.
func (d *Driver) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats
}

// LastError returns the last failure the goroutine met on the ring, "" if
// none.
func (d *Driver) LastError() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lastErr
}

// Decision returns the newest pattern not yet handed out. When it is longer
// than room bytes it is returned with fits false and stays pending, so that
// the caller can retry with a larger buffer; otherwise it is marked handed
// out. ok is false when there is none.
func (d *Driver) Decision(room int) (dec Decided, ok, fits bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.out == nil || d.out.Version <= d.delivered {
		return Decided{}, false, false
	}
	if len(d.out.Pattern) > room {
		return *d.out, true, false
	}
	d.delivered = d.out.Version
	return *d.out, true, true
}

// loop is the goroutine's state; only the goroutine touches it.
type loop struct {
	d    *Driver
	tu   *tuner.Tuner
	log  *zap.Logger
	last int // last epoch observed

	serving *request // the request being answered, for the panic handler

	ring      *shmring.Ring
	buf       []byte
	tornSeq   uint64
	tornSince time.Time
	torn      bool
}

func (g *loop) run() {
	defer close(g.d.done)
	defer g.recover()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	idle := 0
	for {
		var tick <-chan time.Time
		if g.ring != nil {
			if g.drain() > 0 {
				idle = 0
				select {
				case r := <-g.d.reqs:
					if g.serve(r) {
						return
					}
				default:
				}
				continue
			}
			wait := pollMin << min(idle, 10)
			if wait > pollMax {
				wait = pollMax
			}
			idle++
			timer.Reset(wait)
			tick = timer.C
		}
		select {
		case r := <-g.d.reqs:
			if g.serve(r) {
				return
			}
		case <-tick:
		}
	}
}

// recover keeps a bug in the tuner from killing the process that loaded
// the library: the driver dies instead, every later call says why, and the
// request being served gets the same answer.
func (g *loop) recover() {
	r := recover()
	if r == nil {
		return
	}
	msg := fmt.Sprintf("tuner goroutine failed (please report): %v", r)
	g.log.Error("tuner goroutine failed", zap.Any("panic", r), zap.Stack("stack"))
	g.d.mu.Lock()
	g.d.broken, g.d.lastErr = msg, msg
	g.d.stats.RingAttached = false
	g.d.mu.Unlock()
	if g.serving != nil {
		g.serving.reply <- &Error{Internal, msg}
	}
}

// serve answers one request; it reports whether the loop must end.
func (g *loop) serve(r request) (stop bool) {
	g.serving = &r // not cleared by a defer: the panic handler runs after defers
	var err error
	switch r.kind {
	case reqSubmit:
		err = g.take(r.batch)
	case reqAttach:
		g.ring, g.torn = r.ring, false
		g.d.mu.Lock()
		g.d.stats.RingAttached = r.ring != nil
		g.d.mu.Unlock()
		if r.ring != nil {
			g.log.Info("ring attached", zap.Int("slots", r.ring.Slots()), zap.Int("slot_size", r.ring.SlotSize()),
				zap.Uint64("tail", r.ring.Tail()), zap.Int("version", g.version()))
		} else {
			g.log.Info("ring detached", zap.Int("version", g.version()))
		}
	case reqReset:
		g.tu, _ = tuner.New(g.d.cfg, g.d.initial, g.d.bytes) // checked by New
		g.last = -1
		g.d.mu.Lock()
		g.d.out, g.d.delivered = nil, 0
		g.d.stats.Version, g.d.stats.LastEpoch = 0, -1
		g.d.mu.Unlock()
		g.log.Info("reset to the initial pattern", zap.Int("version", 0))
	case reqClose:
		g.ring = nil
		g.log.Info("closed", zap.Int("version", g.version()))
		stop = true
	}
	g.serving = nil
	r.reply <- err
	return stop
}

func (g *loop) version() int {
	g.d.mu.Lock()
	defer g.d.mu.Unlock()
	return int(g.d.stats.Version)
}

// take runs the tuner over one batch. It checks what it can before the
// first epoch, so that a refused batch leaves the tuner as it was; only a
// batch that runs past a switch the tuner decided within it is taken in
// part, up to the switch.
func (g *loop) take(b *wire.FCTBatch) error {
	err := g.observe(b)
	g.d.mu.Lock()
	if err != nil {
		g.d.stats.Rejected++
	} else {
		g.d.stats.Batches++
	}
	g.d.mu.Unlock()
	return err
}

func (g *loop) observe(b *wire.FCTBatch) error {
	if b.Epoch0 <= g.last {
		return errorf(State, "batch starts at epoch %d, not after the last epoch observed (%d)", b.Epoch0, g.last)
	}
	for e := range b.Epochs {
		epoch := b.Epoch0 + e
		p, v := g.tu.Pattern(epoch)
		if v != b.Version {
			if e == 0 {
				return errorf(State, "epoch %d runs pattern version %d, the batch says version %d", epoch, v, b.Version)
			}
			return errorf(State, "epoch %d runs pattern version %d (a switch decided within this batch), the batch says version %d: epochs %d to %d were taken, %d to %d dropped; split batches at the switch epoch",
				epoch, v, b.Version, b.Epoch0, epoch-1, epoch, b.Epoch0+b.Epochs-1)
		}
		if len(p.Flows) != b.Flows {
			return errorf(Invalid, "batch has %d flows per epoch, pattern version %d has %d", b.Flows, v, len(p.Flows))
		}
		dec, err := g.tu.Observe(epoch, b.Row(e), b.Elapsed[e])
		if err != nil {
			return errorf(Invalid, "%v", err)
		}
		g.last = epoch
		g.d.mu.Lock()
		g.d.stats.Epochs++
		g.d.stats.LastEpoch, g.d.stats.Version = int64(epoch), int64(v)
		g.d.mu.Unlock()
		if dec != nil {
			g.decided(dec)
		}
	}
	return nil
}

func (g *loop) decided(dec *tuner.Decision) {
	fields := []zap.Field{zap.Int("batch", dec.Batch), zap.Int("epoch", dec.Epoch), zap.Int("version", dec.Version),
		zap.Float64("observed_s", dec.Observed), zap.Bool("kept", dec.Kept), zap.Bool("reverted", dec.Reverted),
		zap.Bool("explored", dec.Explored), zap.Int("congested", len(dec.Congested)), zap.Int("trials", len(dec.Trials))}
	if dec.Note != "" {
		fields = append(fields, zap.String("note", dec.Note))
	}
	var out *Decided
	if dec.Pattern != nil {
		enc, err := wire.EncodeMsgpack(dec.Pattern)
		if err != nil { // the tuner emits only checked patterns
			panic(fmt.Sprintf("driver: tuner emitted a pattern that does not encode: %v", err))
		}
		out = &Decided{Version: dec.NewVersion, Effective: dec.Effective, Pattern: enc}
		fields = append(fields, zap.Int("new_version", dec.NewVersion), zap.Int("effective", dec.Effective))
	}
	g.log.Info("decision", fields...)
	g.d.mu.Lock()
	g.d.stats.Decisions++
	if out != nil {
		g.d.stats.Patterns++
		g.d.out = out
	}
	g.d.mu.Unlock()
}

// drain consumes up to drainMax ring slots and returns how many it
// consumed (bad ones included).
func (g *loop) drain() int {
	n := 0
	for n < drainMax && g.ring != nil {
		msg, err := g.ring.Read(g.buf)
		var se *shmring.SlotError
		var he *shmring.HeaderError
		switch {
		case err == nil:
			g.buf, g.torn = msg, false
			b, derr := wire.DecodeFCTBatch(msg)
			seq := g.ring.Tail()
			g.ring.Advance(1, derr != nil) // the slot is copied: free it before the tuner runs
			if derr != nil {
				g.count(func(s *Stats) { s.Rejected++ })
				g.fail(fmt.Sprintf("ring message %d: %v", seq, derr))
			} else if terr := g.take(b); terr != nil {
				g.fail(fmt.Sprintf("ring message %d: %v", seq, terr))
			}
			// counted last, so that a reader of the stats who sees the slot
			// also sees what it did
			g.count(func(s *Stats) { s.RingSlots++ })
		case errors.Is(err, shmring.ErrEmpty):
			g.torn = false
			return n
		case errors.As(err, &se) && se.Kind == shmring.Overrun:
			g.ring.Advance(se.Lost, true)
			g.count(func(s *Stats) { s.RingOverruns += se.Lost })
			g.fail(err.Error())
		case errors.As(err, &se) && se.Kind == shmring.Torn && !g.tornLongEnough(se.Seq):
			return n // the writer may still be storing the slot's sequence number
		case errors.As(err, &se):
			g.torn = false
			g.ring.Advance(1, true)
			g.count(func(s *Stats) { s.RingSlots++; s.RingCorrupt++ })
			g.fail(err.Error())
		case errors.As(err, &he):
			g.fail(err.Error() + "; ring detached")
			g.ring = nil
			g.count(func(s *Stats) { s.RingAttached = false })
			return n
		default:
			panic(fmt.Sprintf("driver: unexpected ring error %v", err))
		}
		n++
	}
	return n
}

func (g *loop) tornLongEnough(seq uint64) bool {
	now := time.Now()
	if !g.torn || g.tornSeq != seq {
		g.torn, g.tornSeq, g.tornSince = true, seq, now
		return false
	}
	return now.Sub(g.tornSince) >= tornGrace
}

func (g *loop) count(f func(s *Stats)) {
	g.d.mu.Lock()
	f(&g.d.stats)
	g.d.mu.Unlock()
}

func (g *loop) fail(msg string) {
	g.log.Warn("ring", zap.String("error", msg), zap.Int("version", g.version()))
	g.d.mu.Lock()
	g.d.lastErr = msg
	g.d.mu.Unlock()
}
