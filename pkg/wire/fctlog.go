package wire

// # FCT log
//
// The runtime (Go or Python) records every flow's completion time in JSON
// lines, one object per line, so that a run can be replayed through the
// tuner offline (react replay). A flow record:
//
//	{"epoch": 12, "version": 0, "flow": 5, "chunk": 1, "step": 2, "src": 5, "dst": 3, "bytes": 1000000, "fct": 0.000324}
//
// and, at most once per epoch, an epoch record (no "flow" key) carrying the
// collective's measured time, the ranks' entries into the call, or both:
//
//	{"epoch": 12, "version": 0, "elapsed": 0.0013, "entry": [0.5, 0.5002, 0.5001]}
//
//	epoch    int    epoch number, >= 0; records of one epoch are contiguous,
//	                epochs increase (gaps are allowed)
//	version  int    version of the pattern the epoch ran, >= 0, the same in
//	                every record of the epoch
//	flow     int    index of the flow in that pattern's "flows", in [0, F)
//	chunk, step, src, dst
//	         int    the flow's fields, for people; optional, not checked
//	bytes    number bytes the flow carried; optional, >= 0
//	fct      number flow completion time, seconds, > 0
//	arrival  number instead of fct: when the flow's last byte reached its
//	                receiver, seconds from the moment that rank entered the
//	                call, > 0 (the dataflow executor's record; a reader turns
//	                arrivals into durations as the FCT batch's "arrival" says); the
//	                flow records of one epoch all carry the same one of the two
//	elapsed  number collective time of the epoch, seconds, > 0 (epoch
//	                record only)
//	entry    array  each rank's entry into the call, seconds on a clock the
//	                ranks share, finite (epoch record only; the FCT batch's
//	                "entry", for arrivals)
//
// Every epoch lists each of its F flows exactly once. Integers are integer
// literals; unknown keys are ignored; blank lines are skipped. A reader
// names the line of the first record at fault.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
)

// EpochRecord is FCTRecord.Flow for an epoch record.
const EpochRecord = -1

// maxFCTLine bounds one line of an FCT log; records are under 200 bytes.
const maxFCTLine = 1 << 20

// FCTRecord is one line of an FCT log: a flow record, or an epoch record
// when Flow is EpochRecord (then only Epoch, Version, Elapsed and Entry
// count; Elapsed 0 is left out, and an epoch record needs one of the two).
type FCTRecord struct {
	Epoch, Version        int
	Flow                  int
	Chunk, Step, Src, Dst int
	Bytes, FCT, Elapsed   float64
	Arrival               bool      // FCT is an arrival: written as "arrival"
	Entry                 []float64 // the ranks' entries (epoch record)
}

// FCTEpoch is one epoch of an FCT log.
type FCTEpoch struct {
	Epoch, Version int
	FCT            []float64 // seconds, indexed by flow
	Arrival        bool      // FCT holds arrivals, not durations
	Bytes          []float64 // as logged, 0 where a record gave none
	Elapsed        float64   // 0 when the epoch had no epoch record
	Entry          []float64 // the ranks' entries, nil when not logged
}

func positiveFinite(v float64) bool { return v > 0 && !math.IsInf(v, 0) }

// EncodeFCTRecord writes r as one line of an FCT log.
func EncodeFCTRecord(w io.Writer, r FCTRecord) error {
	if r.Epoch < 0 || r.Version < 0 {
		return fmt.Errorf("wire: fct log: epoch %d version %d, want both >= 0", r.Epoch, r.Version)
	}
	b := make([]byte, 0, 192)
	b = append(b, `{"epoch": `...)
	b = strconv.AppendInt(b, int64(r.Epoch), 10)
	b = append(b, `, "version": `...)
	b = strconv.AppendInt(b, int64(r.Version), 10)
	if r.Flow == EpochRecord {
		switch {
		case r.Elapsed == 0 && len(r.Entry) == 0:
			return fmt.Errorf("wire: fct log: epoch %d: an epoch record with neither elapsed nor entry", r.Epoch)
		case r.Elapsed != 0 && !positiveFinite(r.Elapsed):
			return fmt.Errorf("wire: fct log: epoch %d: elapsed %v, want a positive finite time", r.Epoch, r.Elapsed)
		}
		if r.Elapsed != 0 {
			b = append(b, `, "elapsed": `...)
			b = strconv.AppendFloat(b, r.Elapsed, 'g', -1, 64)
		}
		if len(r.Entry) > 0 {
			b = append(b, `, "entry": [`...)
			for i, v := range r.Entry {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return fmt.Errorf("wire: fct log: epoch %d: entry of rank %d %v, want a finite time", r.Epoch, i, v)
				}
				if i > 0 {
					b = append(b, ", "...)
				}
				b = strconv.AppendFloat(b, v, 'g', -1, 64)
			}
			b = append(b, ']')
		}
	} else {
		switch {
		case r.Flow < 0:
			return fmt.Errorf("wire: fct log: epoch %d: flow %d, want >= 0", r.Epoch, r.Flow)
		case !positiveFinite(r.FCT):
			return fmt.Errorf("wire: fct log: epoch %d flow %d: fct %v, want a positive finite time", r.Epoch, r.Flow, r.FCT)
		case !(r.Bytes >= 0) || math.IsInf(r.Bytes, 0):
			return fmt.Errorf("wire: fct log: epoch %d flow %d: bytes %v, want >= 0 and finite", r.Epoch, r.Flow, r.Bytes)
		}
		for _, kv := range [...]struct {
			k string
			v int
		}{{"flow", r.Flow}, {"chunk", r.Chunk}, {"step", r.Step}, {"src", r.Src}, {"dst", r.Dst}} {
			b = append(b, `, "`...)
			b = append(b, kv.k...)
			b = append(b, `": `...)
			b = strconv.AppendInt(b, int64(kv.v), 10)
		}
		b = append(b, `, "bytes": `...)
		if r.Bytes == math.Trunc(r.Bytes) && r.Bytes < 1e21 {
			b = strconv.AppendFloat(b, r.Bytes, 'f', -1, 64) // byte counts read best as integers
		} else {
			b = strconv.AppendFloat(b, r.Bytes, 'g', -1, 64)
		}
		if r.Arrival {
			b = append(b, `, "arrival": `...)
		} else {
			b = append(b, `, "fct": `...)
		}
		b = strconv.AppendFloat(b, r.FCT, 'g', -1, 64)
	}
	b = append(b, "}\n"...)
	_, err := w.Write(b)
	return err
}

// fctLine is a record as read; pointers tell absent keys from zeros.
type fctLine struct {
	Epoch   *int      `json:"epoch"`
	Version *int      `json:"version"`
	Flow    *int      `json:"flow"`
	Chunk   *int      `json:"chunk"`
	Step    *int      `json:"step"`
	Src     *int      `json:"src"`
	Dst     *int      `json:"dst"`
	Bytes   *float64  `json:"bytes"`
	FCT     *float64  `json:"fct"`
	Arrival *float64  `json:"arrival"`
	Elapsed *float64  `json:"elapsed"`
	Entry   []float64 `json:"entry"`
}

// ReadFCTLog reads an FCT log for a pattern of flows flows and groups it by
// epoch, in order. Errors name the line at fault.
func ReadFCTLog(r io.Reader, flows int) ([]FCTEpoch, error) {
	if flows < 1 {
		return nil, fmt.Errorf("wire: fct log: %d flows, want >= 1", flows)
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxFCTLine)
	lr := &fctLogReader{flows: flows}
	for sc.Scan() {
		lr.line++
		text := sc.Bytes()
		if len(trimSpace(text)) == 0 {
			continue
		}
		if err := lr.record(text); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("wire: fct log: after line %d: %w", lr.line, err)
	}
	if err := lr.finish(fmt.Sprintf("end of input (line %d)", lr.line)); err != nil {
		return nil, err
	}
	return lr.out, nil
}

// fctLogReader is ReadFCTLog's state: the epochs read, and of the epoch
// being read which flows and whether its epoch record were seen.
type fctLogReader struct {
	flows int
	out   []FCTEpoch
	cur   *FCTEpoch
	seen  []bool
	have  int  // flows seen in cur
	hasEl bool // cur has its epoch record
	start int  // line of cur's first record
	line  int
}

func (lr *fctLogReader) fail(format string, a ...any) error {
	return fmt.Errorf("wire: fct log: line %d: "+format, append([]any{lr.line}, a...)...)
}

// finish checks that cur is complete; at is the line that ended it.
func (lr *fctLogReader) finish(at string) error {
	if lr.cur == nil || lr.have == len(lr.seen) {
		return nil
	}
	for f, ok := range lr.seen {
		if !ok {
			return fmt.Errorf("wire: fct log: %s: epoch %d (from line %d) has %d of %d flows; flow %d is missing",
				at, lr.cur.Epoch, lr.start, lr.have, lr.flows, f)
		}
	}
	return nil
}

// record decodes one line and files it under its epoch, which it opens
// where the line starts a new one.
func (lr *fctLogReader) record(text []byte) error {
	var rec fctLine
	if err := json.Unmarshal(text, &rec); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return lr.fail("malformed JSON at column %d: %v", se.Offset, err)
		}
		return lr.fail("%v", err)
	}
	switch {
	case rec.Epoch == nil:
		return lr.fail(`missing "epoch"`)
	case rec.Version == nil:
		return lr.fail(`missing "version"`)
	case *rec.Epoch < 0:
		return lr.fail("epoch %d, want >= 0", *rec.Epoch)
	case *rec.Version < 0:
		return lr.fail("version %d, want >= 0", *rec.Version)
	}
	epoch, version := *rec.Epoch, *rec.Version
	if cur := lr.cur; cur == nil || epoch != cur.Epoch {
		if cur != nil && epoch < cur.Epoch {
			return lr.fail("epoch %d after epoch %d: epochs out of order", epoch, cur.Epoch)
		}
		if err := lr.finish(fmt.Sprintf("line %d", lr.line)); err != nil {
			return err
		}
		lr.out = append(lr.out, FCTEpoch{Epoch: epoch, Version: version, FCT: make([]float64, lr.flows), Bytes: make([]float64, lr.flows)})
		lr.cur = &lr.out[len(lr.out)-1]
		lr.seen, lr.have, lr.hasEl, lr.start = make([]bool, lr.flows), 0, false, lr.line
	} else if version != cur.Version {
		return lr.fail("epoch %d: version %d, but line %d gave version %d", epoch, version, lr.start, cur.Version)
	}
	if rec.Flow == nil {
		return lr.epochRecord(&rec, epoch)
	}
	return lr.flowRecord(&rec, epoch)
}

// epochRecord takes an epoch's own record: its collective time or the
// ranks' entry times.
func (lr *fctLogReader) epochRecord(rec *fctLine, epoch int) error {
	switch {
	case rec.Elapsed == nil && rec.Entry == nil:
		return lr.fail(`epoch %d: a record with neither "flow" nor "elapsed" nor "entry"`, epoch)
	case rec.FCT != nil || rec.Arrival != nil:
		return lr.fail(`epoch %d: "fct" or "arrival" without "flow"`, epoch)
	case lr.hasEl:
		return lr.fail("epoch %d: a second epoch record", epoch)
	case rec.Elapsed != nil && !positiveFinite(*rec.Elapsed):
		return lr.fail("epoch %d: elapsed %v, want a positive finite time", epoch, *rec.Elapsed)
	case rec.Entry != nil && len(rec.Entry) == 0:
		return lr.fail("epoch %d: entry is empty, want one time per rank", epoch)
	}
	if rec.Elapsed != nil {
		lr.cur.Elapsed = *rec.Elapsed
	}
	lr.cur.Entry, lr.hasEl = rec.Entry, true
	return nil
}

// flowRecord takes a flow's record: its FCT (or arrival time) and bytes.
func (lr *fctLogReader) flowRecord(rec *fctLine, epoch int) error {
	f := *rec.Flow
	arrival := rec.Arrival != nil
	if arrival && rec.FCT == nil {
		rec.FCT = rec.Arrival
	}
	switch {
	case f < 0 || f >= lr.flows:
		return lr.fail("epoch %d: flow %d out of range [0, %d)", epoch, f, lr.flows)
	case lr.seen[f]:
		return lr.fail("epoch %d: duplicate flow %d", epoch, f)
	case rec.Elapsed != nil || rec.Entry != nil:
		return lr.fail(`epoch %d flow %d: "elapsed" and "entry" belong in the epoch record`, epoch, f)
	case rec.FCT == nil:
		return lr.fail(`epoch %d flow %d: missing "fct"`, epoch, f)
	case arrival && rec.FCT != rec.Arrival:
		return lr.fail(`epoch %d flow %d: both "fct" and "arrival"`, epoch, f)
	case lr.have > 0 && arrival != lr.cur.Arrival:
		return lr.fail(`epoch %d flow %d: "fct" and "arrival" mixed in one epoch`, epoch, f)
	case !positiveFinite(*rec.FCT):
		name := "fct"
		if arrival {
			name = "arrival"
		}
		return lr.fail("epoch %d flow %d: %s %v, want a positive finite time", epoch, f, name, *rec.FCT)
	case rec.Bytes != nil && (!(*rec.Bytes >= 0) || math.IsInf(*rec.Bytes, 0)):
		return lr.fail("epoch %d flow %d: bytes %v, want >= 0 and finite", epoch, f, *rec.Bytes)
	}
	lr.seen[f] = true
	lr.have++
	lr.cur.FCT[f], lr.cur.Arrival = *rec.FCT, arrival
	if rec.Bytes != nil {
		lr.cur.Bytes[f] = *rec.Bytes
	}
	return nil
}

// FlowEnds is where a logged flow ran: its chunk, step, source and
// destination, as the runtime wrote them (FCTRecord).
type FlowEnds struct {
	Chunk, Step, Src, Dst int
}

// ReadFCTLogFlows reads the flow records of an FCT log's first epoch and
// returns their endpoints in flow order, and the ranks its epoch record's
// entries count (0 without them): enough to find the pattern the log ran
// when none is given. ReadFCTLog then reads the times. Errors name the
// line at fault.
func ReadFCTLogFlows(r io.Reader) (flows []FlowEnds, ranks int, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxFCTLine)
	var seen []bool
	first, line := -1, 0
	fail := func(format string, a ...any) error {
		return fmt.Errorf("wire: fct log: line %d: "+format, append([]any{line}, a...)...)
	}
	for sc.Scan() {
		line++
		if len(trimSpace(sc.Bytes())) == 0 {
			continue
		}
		var rec fctLine
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, 0, fail("%v", err)
		}
		if rec.Epoch == nil {
			return nil, 0, fail(`missing "epoch"`)
		}
		if first >= 0 && *rec.Epoch != first {
			break
		}
		first = *rec.Epoch
		if rec.Flow == nil {
			ranks = len(rec.Entry)
			continue
		}
		f := *rec.Flow
		if rec.Chunk == nil || rec.Step == nil || rec.Src == nil || rec.Dst == nil {
			return nil, 0, fail("epoch %d flow %d: no chunk, step, src and dst to find the pattern by", first, f)
		}
		if f < 0 || f >= maxLoggedFlows {
			return nil, 0, fail("epoch %d: flow %d out of range [0, %d)", first, f, maxLoggedFlows)
		}
		for len(flows) <= f {
			flows, seen = append(flows, FlowEnds{}), append(seen, false)
		}
		if seen[f] {
			return nil, 0, fail("epoch %d: duplicate flow %d", first, f)
		}
		seen[f], flows[f] = true, FlowEnds{Chunk: *rec.Chunk, Step: *rec.Step, Src: *rec.Src, Dst: *rec.Dst}
	}
	if err := sc.Err(); err != nil {
		return nil, 0, fmt.Errorf("wire: fct log: after line %d: %w", line, err)
	}
	if len(flows) == 0 {
		return nil, 0, fmt.Errorf("wire: fct log: no flow records in the first epoch (%d lines)", line)
	}
	for f, ok := range seen {
		if !ok {
			return nil, 0, fmt.Errorf("wire: fct log: epoch %d: flow %d of %d is missing", first, f, len(flows))
		}
	}
	return flows, ranks, nil
}

// maxLoggedFlows bounds the flows of one logged epoch that
// ReadFCTLogFlows takes (a pattern of ten.MaxRanks ranks has fewer).
const maxLoggedFlows = 1 << 20

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
