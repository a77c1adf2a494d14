package wire

// # FCT batch (msgpack)
//
// The runtime hands the tuner its measurements in batches: the flow
// completion times of Epochs consecutive epochs, all run with one pattern
// version. A batch is one msgpack map in the column style of the pattern
// form (keys in any order, unknown keys skipped, no key twice):
//
//	"format"   str  "react.fcts/v1"
//	"epoch0"   int  first epoch of the batch, >= 0; row e is epoch epoch0+e
//	"version"  int  pattern version every epoch of the batch ran, >= 0
//	"epochs"   int  B, number of epochs, >= 1
//	"nflows"   int  F, flows of that pattern, >= 1
//	"fct"      map  {"dtype": "<f8", "shape": [B, F], "data": bin of B*F*8 bytes}
//	                row-major: the FCT of flow f in row e is element e*F+f;
//	                seconds, every value > 0 and finite
//	"elapsed"  map  {"dtype": "<f8", "shape": [B], "data": bin of B*8 bytes}
//	                the measured collective time of each epoch, seconds,
//	                >= 0 and finite; 0 means not measured (the tuner then
//	                takes the critical path of the FCTs)
//	"arrival"  bool optional, default false: fct holds each flow's arrival,
//	                the moment its last byte reached its receiver, in seconds
//	                from the moment that rank entered the call, instead of
//	                its duration; the driver turns arrivals into durations
//	                by the pattern's dependency rule (critpath.DAG.Durations:
//	                a flow starts when the last of its inputs reached its
//	                sender, the rule the simulator and the link model's
//	                replay follow), or, for a tuner that reads FCTs from the
//	                receiver's step start (Config.ReadsStepped), from the latest arrival
//	                at the receiver in an earlier step (StepDurations)
//
// Python writes a column as {"dtype": "<f8", "shape": list(a.shape), "data":
// a.astype("<f8").tobytes()}.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/vmihailenco/msgpack/v5"
)

// BatchFormat is the format string of an FCT batch.
const BatchFormat = "react.fcts/v1"

// maxEntryRanks bounds an entry row: far above any pattern's ranks
// (ten.MaxRanks), far below what would overflow a column's size.
const maxEntryRanks = 1 << 20

// maxEpoch bounds epoch numbers so that epoch0+epochs never overflows.
const maxEpoch = 1 << 48

// FCTBatch is the measurements of Epochs consecutive epochs.
type FCTBatch struct {
	Epoch0  int // first epoch
	Version int // pattern version all epochs ran
	Epochs  int // B
	Flows   int // F
	// FCT holds Epochs*Flows completion times in seconds, row-major: Row(e)
	// is epoch Epoch0+e.
	FCT []float64
	// Elapsed holds each epoch's measured collective time in seconds, 0
	// where it was not measured.
	Elapsed []float64
	// Arrival: FCT holds arrivals, not durations (the format's "arrival").
	Arrival bool
	// Ranks is the number of ranks of Entry's rows, 0 without Entry.
	Ranks int
	// Entry holds Epochs*Ranks entry times on the ranks' shared clock,
	// row-major (EntryRow), or nothing.
	Entry []float64
}

// EntryRow returns the entry times of epoch Epoch0+e, nil without them.
func (b *FCTBatch) EntryRow(e int) []float64 {
	if b.Entry == nil {
		return nil
	}
	return b.Entry[e*b.Ranks : (e+1)*b.Ranks : (e+1)*b.Ranks]
}

// Row returns the FCTs of epoch Epoch0+e, sharing the batch's storage.
func (b *FCTBatch) Row(e int) []float64 { return b.FCT[e*b.Flows : (e+1)*b.Flows : (e+1)*b.Flows] }

// Validate names the first field out of range.
func (b *FCTBatch) Validate() error {
	switch {
	case b.Epoch0 < 0 || b.Epoch0 > maxEpoch:
		return fmt.Errorf("epoch0 %d out of range [0, %d]", b.Epoch0, maxEpoch)
	case b.Version < 0 || b.Version > math.MaxInt32:
		return fmt.Errorf("version %d out of range [0, %d]", b.Version, math.MaxInt32)
	case b.Epochs < 1 || b.Epochs > math.MaxInt32:
		return fmt.Errorf("epochs %d out of range [1, %d]", b.Epochs, math.MaxInt32)
	case b.Flows < 1 || b.Flows > math.MaxInt32:
		return fmt.Errorf("nflows %d out of range [1, %d]", b.Flows, math.MaxInt32)
	case int64(len(b.FCT)) != int64(b.Epochs)*int64(b.Flows):
		return fmt.Errorf("fct has %d values, want %d (%d epochs x %d flows)", len(b.FCT), int64(b.Epochs)*int64(b.Flows), b.Epochs, b.Flows)
	case len(b.Elapsed) != b.Epochs:
		return fmt.Errorf("elapsed has %d values, want %d (one per epoch)", len(b.Elapsed), b.Epochs)
	case b.Entry == nil && b.Ranks != 0:
		return fmt.Errorf("ranks %d without entry", b.Ranks)
	case b.Entry != nil && !b.Arrival:
		return errors.New("entry without arrival: entry times place arrivals on a shared clock")
	case b.Entry != nil && (b.Ranks < 1 || b.Ranks > maxEntryRanks):
		return fmt.Errorf("entry: %d ranks out of range [1, %d]", b.Ranks, maxEntryRanks)
	case b.Entry != nil && int64(len(b.Entry)) != int64(b.Epochs)*int64(b.Ranks):
		return fmt.Errorf("entry has %d values, want %d (%d epochs x %d ranks)", len(b.Entry), int64(b.Epochs)*int64(b.Ranks), b.Epochs, b.Ranks)
	}
	for i, v := range b.FCT {
		if !positiveFinite(v) {
			return fmt.Errorf("fct: epoch %d flow %d: %v, want a positive finite time", b.Epoch0+i/b.Flows, i%b.Flows, v)
		}
	}
	for e, v := range b.Elapsed {
		if !(v >= 0) || math.IsInf(v, 0) {
			return fmt.Errorf("elapsed: epoch %d: %v, want >= 0 and finite", b.Epoch0+e, v)
		}
	}
	for i, v := range b.Entry {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("entry: epoch %d rank %d: %v, want a finite time", b.Epoch0+i/b.Ranks, i%b.Ranks, v)
		}
	}
	return nil
}

// EncodeFCTBatch returns the msgpack form of b.
func EncodeFCTBatch(b *FCTBatch) ([]byte, error) { return AppendFCTBatch(nil, b) }

// AppendFCTBatch appends the msgpack form of b to dst, so that a writer can
// reuse one buffer for every batch.
func AppendFCTBatch(dst []byte, b *FCTBatch) ([]byte, error) {
	if err := b.Validate(); err != nil {
		return dst, fmt.Errorf("wire: fct batch: refusing to encode: %w", err)
	}
	w := &appendWriter{b: dst}
	if size := 256 + 8*(len(b.FCT)+len(b.Elapsed)+len(b.Entry)); cap(dst)-len(dst) < size {
		w.b = make([]byte, len(dst), len(dst)+size)
		copy(w.b, dst)
	}
	e := encoder{e: msgpack.NewEncoder(w)}
	keys := 7
	if b.Arrival {
		keys++
	}
	if b.Entry != nil {
		keys++
	}
	e.do(e.e.EncodeMapLen(keys))
	if b.Arrival {
		e.do(e.e.EncodeString("arrival"))
		e.do(e.e.EncodeBool(true))
	}
	e.str("format", BatchFormat)
	e.int("epoch0", int64(b.Epoch0))
	e.int("version", int64(b.Version))
	e.int("epochs", int64(b.Epochs))
	e.int("nflows", int64(b.Flows))
	for _, c := range [...]struct {
		name  string
		shape []int
		vals  []float64
	}{{"fct", []int{b.Epochs, b.Flows}, b.FCT}, {"elapsed", []int{b.Epochs}, b.Elapsed}, {"entry", []int{b.Epochs, b.Ranks}, b.Entry}} {
		if c.vals == nil && c.name == "entry" {
			continue
		}
		e.column(c.name, "<f8", c.shape, 8*len(c.vals))
		if e.err != nil {
			break
		}
		for _, v := range c.vals {
			w.b = binary.LittleEndian.AppendUint64(w.b, math.Float64bits(v))
		}
	}
	if e.err != nil {
		return dst, fmt.Errorf("wire: fct batch: %w", e.err)
	}
	return w.b, nil
}

// DecodeFCTBatch reads the msgpack form of an FCT batch and validates it.
// It never panics; errors name the key at fault.
func DecodeFCTBatch(data []byte) (*FCTBatch, error) {
	b, err := decodeFCTBatch(data)
	if err != nil {
		return nil, fmt.Errorf("wire: fct batch: %w", err)
	}
	return b, nil
}

func decodeFCTBatch(data []byte) (*FCTBatch, error) {
	r := bytes.NewReader(data)
	d := reader{d: msgpack.NewDecoder(r), r: r, data: data}
	f, err := d.fctBatchFields()
	if err != nil {
		return nil, err
	}
	if r.Len() > 0 {
		return nil, fmt.Errorf("trailing garbage: %d bytes after the batch map", r.Len())
	}
	return f.batch()
}

// fctBatchKeys are a batch map's keys; fctBatchFields.ints is indexed
// like them.
func fctBatchKeys() [9]string {
	return [...]string{"format", "epoch0", "version", "epochs", "nflows", "fct", "elapsed", "arrival", "entry"}
}

// fctBatchFields is a batch map as read, its columns not yet checked
// against its counts.
type fctBatchFields struct {
	ints          [5]int64 // epoch0, version, epochs, nflows at 1-4
	fct, ela, ent columnValue
	arrival       bool
	seen          int // bit k: fctBatchKeys()[k] was read
}

// fctBatchFields reads the batch map: every key once, unknown keys
// skipped, every required key present.
func (d *reader) fctBatchFields() (*fctBatchFields, error) {
	n, err := d.mapLen("fct batch")
	if err != nil {
		return nil, err
	}
	f := &fctBatchFields{}
	limits := [5][2]int64{{}, {0, maxEpoch}, {0, math.MaxInt32}, {1, math.MaxInt32}, {1, math.MaxInt32}}
	for range n {
		key, err := d.str("fct batch key")
		if err != nil {
			return nil, err
		}
		k := -1
		for i, name := range fctBatchKeys() {
			if key == name {
				k = i
			}
		}
		if k < 0 {
			if err := d.skip(key, 0); err != nil {
				return nil, err
			}
			continue
		}
		if f.seen&(1<<k) != 0 {
			return nil, fmt.Errorf("key %q appears twice", key)
		}
		f.seen |= 1 << k
		switch key {
		case "format":
			s, err := d.str(key)
			if err != nil {
				return nil, err
			}
			if s != BatchFormat {
				return nil, fmt.Errorf("format: %q is not %q", s, BatchFormat)
			}
		case "fct":
			err = d.column(key, &f.fct, 2)
		case "elapsed":
			err = d.column(key, &f.ela, 2)
		case "entry":
			err = d.column(key, &f.ent, 2)
		case "arrival":
			f.arrival, err = d.bool(key)
		default:
			f.ints[k], err = d.int(key, limits[k][0], limits[k][1])
		}
		if err != nil {
			return nil, err
		}
	}
	return f, nil
}

// batch checks the columns' shapes against the counts and builds the
// batch.
func (f *fctBatchFields) batch() (*FCTBatch, error) {
	for i, name := range fctBatchKeys() {
		if f.seen&(1<<i) == 0 && name != "arrival" && name != "entry" {
			return nil, fmt.Errorf("key %q missing", name)
		}
	}
	epochs, flows := f.ints[3], f.ints[4]
	b := &FCTBatch{Epoch0: int(f.ints[1]), Version: int(f.ints[2]), Epochs: int(epochs), Flows: int(flows), Arrival: f.arrival}
	fb, err := f.fct.check("<f8", 8, []int64{epochs, flows}, "epochs and nflows")
	if err != nil {
		return nil, fmt.Errorf("fct: %w", err)
	}
	eb, err := f.ela.check("<f8", 8, []int64{epochs}, "epochs")
	if err != nil {
		return nil, fmt.Errorf("elapsed: %w", err)
	}
	b.FCT, b.Elapsed = readFloats(fb), readFloats(eb)
	if ent := &f.ent; ent.present {
		// the rank count is the column's own second dimension
		if len(ent.shape) != 2 || ent.shape[1] < 1 || ent.shape[1] > maxEntryRanks {
			return nil, fmt.Errorf("entry: shape %v, want [%d, ranks] with ranks in [1, %d]", ent.shape, epochs, maxEntryRanks)
		}
		nb, err := ent.check("<f8", 8, []int64{epochs, ent.shape[1]}, "epochs and the column's ranks")
		if err != nil {
			return nil, fmt.Errorf("entry: %w", err)
		}
		b.Ranks, b.Entry = int(ent.shape[1]), readFloats(nb)
	}
	if err := b.Validate(); err != nil {
		return nil, err
	}
	return b, nil
}

func readFloats(b []byte) []float64 {
	out := make([]float64, len(b)/8)
	for i := range out {
		out[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return out
}
