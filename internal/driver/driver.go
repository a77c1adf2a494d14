// Package driver holds one tuner for the C ABI: it takes FCT batches
// (Submit), runs the tuner over them epoch by epoch, and keeps the latest
// new pattern for the caller to fetch (Decision). It is the thin Node around
// the tuner's RawNode; the tuner itself stays pure.
package driver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/react-torch/react-torch/pkg/critpath"
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
	Internal                 // the tuner panicked; the driver is dead
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

// Decided is a new pattern the tuner emitted.
type Decided struct {
	Version   int    // its version
	Effective int    // first epoch every rank runs it
	Pattern   []byte // msgpack (package wire); never modified
	P         *ten.Pattern
}

// Driver drives one tuner. Its methods are safe for concurrent use.
type Driver struct {
	closed atomic.Bool

	// mu serialises Submit and Close: the tuner is not safe for concurrent
	// use.
	mu      sync.Mutex
	tu      *tuner.Tuner
	log     *zap.Logger
	label   string
	last    int    // last epoch observed
	version int    // pattern version of the last epoch observed
	broken  string // why the tuner panicked, "" while it is sound
	// arrivals become durations by the dependency rule of the pattern
	// they ran, or from the receiver's previous step when the tuner reads
	// FCTs so (wire.FCTBatch.Arrival, tuner.Config.ReadsStepped)
	stepped bool
	dag     *critpath.DAG
	dagP    *ten.Pattern
	dur     []float64
	// the report at epoch reportAt, made once an epoch (a switch's log
	// sentence and a caller share it), and its JSON: a caller sizing its
	// buffer gets the same bytes on its retry
	report   *tuner.Report
	reportAt int
	encoded  []byte

	// outMu guards the decision apart from mu, so that Decision never waits
	// for a Submit.
	outMu     sync.Mutex
	out       *Decided
	delivered int // last version handed out by Decision
}

// New checks the inputs and makes a driver whose logger discards.
func New(cfg tuner.Config, initial *ten.Pattern, messageBytes float64) (*Driver, error) {
	tu, err := tuner.New(cfg, initial, messageBytes)
	if err != nil {
		return nil, err
	}
	return &Driver{tu: tu, log: zap.NewNop(), last: -1, stepped: cfg.ReadsStepped()}, nil
}

// SetLogger sets the logger and the label its sentences start with (the
// collective's name; "" names it by its op); call it before the driver is
// shared.
func (d *Driver) SetLogger(log *zap.Logger, label string) { d.log, d.label = log, label }

// Submit runs the tuner over one batch; when the batch completed a tuner
// batch, its decision is ready on return. It checks what it can before the
// first epoch, so that a refused batch leaves the tuner as it was. Epochs
// that ran the pattern in force past a switch's effective epoch (the
// runtime switches when its ranks can agree) defer the switch
// (tuner.Tuner.Ran), as do those of a batch that runs past a switch the
// tuner decided within it.
func (d *Driver) Submit(b *wire.FCTBatch) (err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed.Load() {
		return &Error{Closed, errClosedMsg}
	}
	if d.broken != "" {
		return &Error{Internal, d.broken}
	}
	defer d.recover(&err)
	return d.observe(b)
}

// recover keeps a bug in the tuner from killing the process that loaded
// the library: the driver dies instead, and this and every later Submit
// say why.
func (d *Driver) recover(err *error) {
	r := recover()
	if r == nil {
		return
	}
	d.broken = fmt.Sprintf("tuner failed (please report): %v", r)
	d.log.Error("tuner failed", zap.Any("panic", r), zap.Stack("stack"))
	*err = &Error{Internal, d.broken}
}

// Close ends the driver, after a Submit in progress; every later call
// fails, a second Close included.
func (d *Driver) Close() error {
	if !d.closed.CompareAndSwap(false, true) {
		return &Error{Closed, errClosedMsg}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.log.Info("closed", zap.Int("version", d.version))
	return nil
}

func kind(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return 0
}

// Closed reports whether Close was called.
func (d *Driver) Closed() bool { return d.closed.Load() }

// Decision returns the newest pattern not yet handed out. When it is longer
// than room bytes it is returned with fits false and stays pending, so that
// the caller can retry with a larger buffer; otherwise it is marked handed
// out. ok is false when there is none.
func (d *Driver) Decision(room int) (dec Decided, ok, fits bool) {
	d.outMu.Lock()
	defer d.outMu.Unlock()
	if d.out == nil || d.out.Version <= d.delivered {
		return Decided{}, false, false
	}
	if len(d.out.Pattern) > room {
		return *d.out, true, false
	}
	d.delivered = d.out.Version
	return *d.out, true, true
}

// Report is the tuner's report (tuner.Report) as JSON. It waits for a
// Submit in progress; the bytes are made again only once the tuner has
// observed another epoch.
func (d *Driver) Report() (_ []byte, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed.Load() {
		return nil, &Error{Closed, errClosedMsg}
	}
	if d.broken != "" {
		return nil, &Error{Internal, d.broken}
	}
	// a report that fails is that call's error: the tuner goes on
	defer func() {
		if r := recover(); r != nil {
			d.log.Error("report failed", zap.Any("panic", r), zap.Stack("stack"))
			err = &Error{Internal, fmt.Sprintf("report failed (please report): %v", r)}
		}
	}()
	r := d.current()
	if d.encoded == nil {
		var b bytes.Buffer
		je := json.NewEncoder(&b)
		je.SetEscapeHTML(false)              // swaps read "3<->2"
		if err := je.Encode(r); err != nil { // a report holds only numbers and strings
			panic(err)
		}
		d.encoded = bytes.TrimSpace(b.Bytes())
	}
	return d.encoded, nil
}

// current is the tuner's report at the last epoch observed, made once an
// epoch. The caller holds mu.
func (d *Driver) current() *tuner.Report {
	if d.report == nil || d.reportAt != d.last {
		r := d.tu.Report()
		d.report, d.reportAt, d.encoded = &r, d.last, nil
	}
	return d.report
}

func (d *Driver) observe(b *wire.FCTBatch) error {
	if b.Epoch0 <= d.last {
		return errorf(State, "batch starts at epoch %d, not after the last epoch observed (%d)", b.Epoch0, d.last)
	}
	for e := range b.Epochs {
		epoch := b.Epoch0 + e
		d.tu.Ran(epoch, b.Version)
		p, v := d.tu.Pattern(epoch)
		if v != b.Version {
			return errorf(State, "epoch %d runs pattern version %d, the batch says version %d", epoch, v, b.Version)
		}
		if len(p.Flows) != b.Flows {
			return errorf(Invalid, "batch has %d flows per epoch, pattern version %d has %d", b.Flows, v, len(p.Flows))
		}
		fct := b.Row(e)
		if b.Arrival {
			if b.Entry != nil && b.Ranks != p.Ranks {
				return errorf(Invalid, "batch has entry times of %d ranks, pattern version %d has %d", b.Ranks, v, p.Ranks)
			}
			fct = d.durations(p, fct, b.EntryRow(e))
		}
		d.tu.Ahead(b.Epochs - 1 - e)
		dec, err := d.tu.Observe(epoch, fct, b.Elapsed[e])
		if err != nil {
			return errorf(Invalid, "%v", err)
		}
		d.last, d.version = epoch, v
		if dec != nil {
			d.decided(dec)
		}
	}
	return nil
}

// durations turns one epoch's arrivals under p (and the ranks' entries, or
// nil) into durations, in a buffer the next call reuses (Observe copies
// what it keeps).
func (d *Driver) durations(p *ten.Pattern, arrival, entry []float64) []float64 {
	if d.dagP != p {
		d.dag, d.dagP = critpath.New(p), p
	}
	d.dur = slices.Grow(d.dur[:0], len(arrival))[:len(arrival)]
	d.dag.ReadArrivals(p, d.stepped, arrival, entry, d.dur)
	return d.dur
}

func (d *Driver) decided(dec *tuner.Decision) {
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
		out = &Decided{Version: dec.NewVersion, Effective: dec.Effective, Pattern: enc, P: dec.Pattern}
		fields = append(fields, zap.Int("new_version", dec.NewVersion), zap.Int("effective", dec.Effective))
	}
	d.log.Info("decision", fields...)
	if (dec.Pattern != nil || dec.Kept || dec.Reverted) && d.log.Core().Enabled(zap.InfoLevel) {
		d.log.Info(summary(d.label, d.current(), dec))
	}
	if out != nil {
		d.outMu.Lock()
		d.out = out
		d.outMu.Unlock()
	}
}
