// Package leader is the leader's side of a group's control plane in
// libreact: it takes each exchange's reduced values (one float64 row per
// epoch of every key, pkg/wire/exchange.go), cuts them into every key's
// epochs, feeds each key's tuner runs of consecutive epochs of one
// pattern version, writes the FCT logs, and hands back what the tuners
// decided, numbered in the group's versions.
//
// The runtime moves the bytes (the reduction that brings the rows, the
// broadcast of the decisions); every rule about what the rows hold lives
// here.
package leader

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/react-torch/react-torch/internal/driver"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/react-torch/react-torch/pkg/tuner"
	"github.com/react-torch/react-torch/pkg/wire"
	"go.uber.org/zap"
)

// Key describes one recurring collective of the group.
type Key struct {
	// Name is the key as a JSON value ([op, dtype, numel, root]), what a
	// report names it by.
	Name         []byte
	Label        string // for the logs: "allreduce float32 x1024"
	MessageBytes float64
	Config       tuner.Config
	Log          io.WriteCloser // the key's FCT log, or nil
}

// LogPath is where the FCT log of the key named name ([op, dtype, numel,
// root], Key.Name) goes under REACT_FCT_LOG's base:
// BASE.OP.DTYPE.NUMEL[.rootR].jsonl, the root only where the op has one.
func LogPath(base string, name []byte) (string, error) {
	var k []json.RawMessage
	var op, dtype string
	var numel, root int64
	if json.Unmarshal(name, &k) != nil || len(k) != 4 || json.Unmarshal(k[0], &op) != nil || json.Unmarshal(k[1], &dtype) != nil ||
		json.Unmarshal(k[2], &numel) != nil || json.Unmarshal(k[3], &root) != nil || op == "" || dtype == "" {
		return "", fmt.Errorf("FCT log: key %s is not [op, dtype, numel, root]", name)
	}
	path := fmt.Sprintf("%s.%s.%s.%d", base, op, dtype, numel)
	if root >= 0 {
		path += ".root" + strconv.FormatInt(root, 10)
	}
	return path + ".jsonl", nil
}

// Decision is a new pattern for a key, in the group's version numbering.
type Decision struct {
	Key       int
	Version   int
	Effective int // the tuner's switch epoch
	Pattern   []byte
}

// Leader holds the tuners of every key of one group. Its methods are safe
// for concurrent use; they run one at a time.
type Leader struct {
	mu    sync.Mutex
	log   *zap.Logger
	hosts [][]int // a hierarchical group's ranks per host: its patterns run over hosts
	keys  map[int]*key
	order []int // keys in the order they were added
	made  []Decision
}

type key struct {
	Key
	id  int
	drv *driver.Driver // nil before the first run and after Reset
	// base is the group's version of the driver's version 0
	base     int
	patterns map[int]*ten.Pattern // by group version: the first, and every one decided
	run      run
	decided  *Decision // the last decision of the exchange being taken
}

// run is a run of consecutive epochs of one version, as one FCT batch.
type run struct {
	version int
	p       *ten.Pattern
	b       wire.FCTBatch
	entries int // epochs with every rank's entry
}

// New makes a leader that logs to log (nil: nowhere). hosts: where the
// group's patterns run over hosts, each host's ranks (its reports name
// hosts); nil where they run over ranks.
func New(log *zap.Logger, hosts [][]int) *Leader {
	if log == nil {
		log = zap.NewNop()
	}
	return &Leader{log: log, hosts: hosts, keys: map[int]*key{}}
}

// AddKey adds key id, whose epochs ran version of p so far.
func (l *Leader) AddKey(id int, k Key, version int, p *ten.Pattern) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.keys[id]; ok {
		return fmt.Errorf("leader: key %d added twice", id)
	}
	if version < 0 || !(k.MessageBytes > 0) || math.IsInf(k.MessageBytes, 0) {
		return fmt.Errorf("leader: key %d: version %d, message bytes %v: want >= 0 and > 0", id, version, k.MessageBytes)
	}
	if err := k.Config.Validate(); err != nil {
		return fmt.Errorf("leader: key %d: %w", id, err)
	}
	l.keys[id] = &key{Key: k, id: id, patterns: map[int]*ten.Pattern{version: p}}
	l.order = append(l.order, id)
	return nil
}

// Exchange takes one exchange: layout says what values holds, as
//
//	items, then per item: key, records, then per record: epoch, version
//
// and values holds, record after record, the record's row
// (wire.ExchangeRowLen of its pattern: its flows' arrivals, the elapsed
// time, every rank's entry; NaN where no rank gave one). An epoch with a
// flow missing is left out; the tuner takes the rest, a run of
// consecutive epochs of one version at a time. The layout is checked
// whole before any tuner takes anything.
func (l *Leader) Exchange(layout []int64, values []float64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	type rec struct {
		k              *key
		epoch, version int
		p              *ten.Pattern
		row            []float64
	}
	var recs []rec
	at, off := 1, 0
	next := func(what string) (int, error) {
		if at >= len(layout) {
			return 0, fmt.Errorf("leader: exchange layout ends before %s (%d values)", what, len(layout))
		}
		v := layout[at]
		at++
		if v < 0 || v > math.MaxInt32 {
			return 0, fmt.Errorf("leader: exchange layout: %s %d out of range", what, v)
		}
		return int(v), nil
	}
	if len(layout) == 0 || layout[0] < 0 {
		return errors.New("leader: exchange layout is empty or has a negative item count")
	}
	for range layout[0] {
		id, err := next("a key")
		if err != nil {
			return err
		}
		k := l.keys[id]
		if k == nil {
			return fmt.Errorf("leader: exchange names key %d, which was not added", id)
		}
		n, err := next("a record count")
		if err != nil {
			return err
		}
		for range n {
			e, err := next("an epoch")
			if err != nil {
				return err
			}
			v, err := next("a version")
			if err != nil {
				return err
			}
			p := k.patterns[v]
			if p == nil {
				return fmt.Errorf("leader: key %d epoch %d ran version %d, a pattern the leader has not seen", id, e, v)
			}
			w := wire.ExchangeRowLen(len(p.Flows), p.Ranks)
			if off+w > len(values) {
				return fmt.Errorf("leader: exchange has %d values, its layout needs more (key %d epoch %d)", len(values), id, e)
			}
			recs = append(recs, rec{k, e, v, p, values[off : off+w]})
			off += w
		}
	}
	if at != len(layout) || off != len(values) {
		return fmt.Errorf("leader: exchange layout covers %d of %d entries and %d of %d values", at, len(layout), off, len(values))
	}
	// Each key's records are one item: its runs go to its tuner before the
	// next key's, and of what it decided within the exchange the last
	// counts (it supersedes the earlier).
	var last *key
	done := func() error {
		if last == nil {
			return nil
		}
		err := l.flush(last)
		if last.decided != nil {
			l.made = append(l.made, *last.decided)
			last.decided = nil
		}
		return err
	}
	for _, r := range recs {
		if r.k != last {
			if err := done(); err != nil {
				return err
			}
			last = r.k
		}
		if err := l.take(r.k, r.epoch, r.version, r.p, r.row); err != nil {
			return err
		}
	}
	return done()
}

// take adds one record to its key's run, flushing the run first where the
// record does not continue it.
func (l *Leader) take(k *key, epoch, version int, p *ten.Pattern, row []float64) error {
	nf := len(p.Flows)
	for _, v := range row[:nf] {
		if !(v > 0) || math.IsInf(v, 0) {
			return nil // a flow no rank received: the epoch is left out
		}
	}
	r := &k.run
	if r.b.Epochs > 0 && (version != r.version || epoch != r.b.Epoch0+r.b.Epochs) {
		if err := l.flush(k); err != nil {
			return err
		}
	}
	if r.b.Epochs == 0 {
		r.version, r.p = version, p
		r.b = wire.FCTBatch{Epoch0: epoch, Flows: nf, Arrival: true, Ranks: p.Ranks,
			FCT: r.b.FCT[:0], Elapsed: r.b.Elapsed[:0], Entry: r.b.Entry[:0]}
		r.entries = 0
	}
	r.b.Epochs++
	r.b.FCT = append(r.b.FCT, row[:nf]...)
	el := row[nf]
	if !(el > 0) || math.IsInf(el, 0) {
		el = 0
	}
	r.b.Elapsed = append(r.b.Elapsed, el)
	entry := row[nf+1:]
	if !slices.ContainsFunc(entry, func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }) {
		r.entries++
	}
	r.b.Entry = append(r.b.Entry, entry...)
	return nil
}

// flush hands a key's run to its tuner (made from the run's pattern where
// it has none), logs its epochs and keeps what the tuner decided.
func (l *Leader) flush(k *key) error {
	r := &k.run
	if r.b.Epochs == 0 {
		return nil
	}
	defer func() { r.b.Epochs = 0 }()
	if k.drv == nil {
		d, err := driver.New(k.Config, r.p, k.MessageBytes)
		if err != nil {
			return fmt.Errorf("leader: key %s: %w", k.Label, err)
		}
		d.SetLogger(l.log.With(zap.String("label", k.Label)), k.Label)
		k.drv, k.base = d, r.version
	}
	b := r.b
	b.Version = r.version - k.base
	if r.entries < b.Epochs { // a rank ran no part of an epoch: the tuner reads arrivals alone
		b.Entry, b.Ranks = nil, 0
	}
	if err := k.drv.Submit(&b); err != nil {
		return fmt.Errorf("leader: key %s: %w", k.Label, err)
	}
	if err := k.write(&b, r.version); err != nil {
		return fmt.Errorf("leader: key %s: FCT log: %w", k.Label, err)
	}
	if dec, ok, _ := k.drv.Decision(math.MaxInt); ok {
		v := dec.Version + k.base
		k.patterns[v] = dec.P
		k.decided = &Decision{Key: k.id, Version: v, Effective: dec.Effective, Pattern: dec.Pattern}
	}
	return nil
}

// write appends a run's epochs to the key's FCT log: what the tuner saw.
func (k *key) write(b *wire.FCTBatch, version int) error {
	if k.Log == nil {
		return nil
	}
	p := k.run.p
	var buf bytes.Buffer
	for e := range b.Epochs {
		rec := wire.FCTRecord{Epoch: b.Epoch0 + e, Version: version, Arrival: true}
		for f, fl := range p.Flows {
			rec.Flow, rec.Chunk, rec.Step, rec.Src, rec.Dst = f, int(fl.Chunk), int(fl.Step), int(fl.Src), int(fl.Dst)
			rec.Bytes, rec.FCT = fl.Fraction*k.MessageBytes, b.Row(e)[f]
			if err := wire.EncodeFCTRecord(&buf, rec); err != nil {
				return err
			}
		}
		ep := wire.FCTRecord{Epoch: rec.Epoch, Version: version, Flow: wire.EpochRecord, Elapsed: b.Elapsed[e], Entry: b.EntryRow(e)}
		if ep.Elapsed > 0 || ep.Entry != nil {
			if err := wire.EncodeFCTRecord(&buf, ep); err != nil {
				return err
			}
		}
	}
	_, err := k.Log.Write(buf.Bytes())
	return err
}

// Decisions returns what the tuners decided since the last call.
func (l *Leader) Decisions() []Decision {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.made
	l.made = nil
	return out
}

// Reset drops key id's tuner (its pattern was refused): the next run
// starts a new one from the pattern in force.
func (l *Leader) Reset(id int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := l.keys[id]
	if k == nil {
		return fmt.Errorf("leader: reset of key %d, which was not added", id)
	}
	if k.drv != nil {
		_ = k.drv.Close()
		k.drv = nil
	}
	return nil
}

// Report is every tuned key's report (tuner.Report, its versions the
// group's), as one JSON object: {"exchange": x, "keys": [{"key": its name,
// "report": ..., "text": the report as an operator reads it}]}.
func (l *Leader) Report(exchange int) ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	type keyReport struct {
		Key    json.RawMessage `json:"key"`
		Report *tuner.Report   `json:"report"`
		Text   string          `json:"text"`
	}
	out := struct {
		Exchange int         `json:"exchange"`
		Keys     []keyReport `json:"keys"`
	}{Exchange: exchange, Keys: []keyReport{}}
	for _, id := range l.order {
		k := l.keys[id]
		if k.drv == nil {
			continue
		}
		raw, err := k.drv.Report()
		if err != nil {
			return nil, fmt.Errorf("leader: key %s: %w", k.Label, err)
		}
		var r tuner.Report
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("leader: key %s: report: %w", k.Label, err)
		}
		r.Version += k.base
		for i := range r.Changes {
			r.Changes[i].From += k.base
			r.Changes[i].To += k.base
		}
		var text strings.Builder
		fmt.Fprintf(&text, "%s: pattern version %d at epoch %d (tuner %s)\n", k.Label, r.Version, r.Epoch, r.Model)
		r.WriteText(&text, l.node())
		out.Keys = append(out.Keys, keyReport{Key: k.Name, Report: &r, Text: strings.TrimSuffix(text.String(), "\n")})
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // swaps read "3<->2"
	if err := enc.Encode(out); err != nil {
		return nil, fmt.Errorf("leader: report: %w", err)
	}
	return bytes.TrimSpace(b.Bytes()), nil
}

// node names a rank of the patterns in reports: a host and its ranks
// where the patterns run over hosts, else nil (the rank).
func (l *Leader) node() func(int) string {
	if l.hosts == nil {
		return nil
	}
	return func(h int) string {
		if h < 0 || h >= len(l.hosts) {
			return fmt.Sprintf("host %d", h)
		}
		rs := make([]string, len(l.hosts[h]))
		for i, r := range l.hosts[h] {
			rs[i] = strconv.Itoa(r)
		}
		if len(rs) == 1 {
			return fmt.Sprintf("host %d (rank %s)", h, rs[0])
		}
		return fmt.Sprintf("host %d (ranks %s)", h, strings.Join(rs, ", "))
	}
}

// Close ends every tuner and closes the logs.
func (l *Leader) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []error
	for _, id := range l.order {
		k := l.keys[id]
		if k.drv != nil {
			_ = k.drv.Close()
			k.drv = nil
		}
		if k.Log != nil {
			errs = append(errs, k.Log.Close())
			k.Log = nil
		}
	}
	return errors.Join(errs...)
}
