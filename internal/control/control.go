// Package control is one rank's side of a group's control plane, as a
// deterministic state machine in the manner of etcd-io/raft's RawNode: the
// runtime calls it around every collective call and on every exchange, and
// moves the bytes it hands out (the exchange's row to the leader, the
// leader's answer to every rank, the ranks' vote); it does no I/O, keeps no
// clock (times come in as arguments) and never waits.
//
// What it decides, the same on every rank because every rank calls the same
// keys in the same order: each key's epoch and the pattern version in force;
// which epochs are recorded; when an exchange is due and which answers must
// be in before it is sent (Depth exchanges are in flight before a rank
// waits); the epoch a decided pattern takes effect at (the key's next epoch
// when the answer becomes due, or the tuner's switch epoch if later); the
// exchange period (Batch epochs of the clock key, stretched so that fast
// calls exchange about every ExchangeS seconds); when the group clock is
// estimated again. On the leader it also picks, from the tuners' decisions,
// those an answer carries.
package control

import (
	"errors"
	"fmt"
	"math"

	"github.com/react-torch/react-torch/pkg/semantics"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/react-torch/react-torch/pkg/wire"
)

// Defaults of the settings the runtime does not expose.
const (
	// Depth is how many exchanges are in flight: the switches exchange x's
	// answer carries are scheduled when exchange x + Depth is sent.
	Depth = 2
	// ExchangeS is the time between exchanges that fast calls are batched up to.
	ExchangeS = 1.0
	// MaxValues bounds the values a rank's row of one key carries in one
	// exchange (8 MB): a stretched period must not make the reduction of a
	// large pattern's records huge.
	MaxValues = 1 << 20
	// Resync: the group clock's offset is estimated again every this many
	// exchanges (hosts' clocks drift apart by microseconds a minute).
	Resync = 64
)

// Config sets a plane up. Tuned false: keys count epochs, nothing is
// recorded or exchanged.
type Config struct {
	Batch    int // epochs of the clock key per exchange (the tuner's B)
	MinCalls int // a key's epochs before this count are not recorded
	Tuned    bool
	Leader   bool
}

// Validate says what is wrong with c.
func (c Config) Validate() error {
	if c.Batch < 1 || c.MinCalls < 0 {
		return fmt.Errorf("control: batch %d, min calls %d: want batch >= 1, min calls >= 0", c.Batch, c.MinCalls)
	}
	return nil
}

// Record is what one rank measured of one epoch it took part in.
type Record struct {
	Flows    []int64   // flows this rank received, by index in the pattern
	Arrivals []float64 // each one's arrival, seconds from this rank's entry
	Elapsed  float64   // the call's time on this rank
	Entry    int       // this rank's rank in the pattern, -1: it ran no part
	EntryAt  float64   // when it entered, on its own clock (Offset makes it the group's)
	// Deferred: the arrivals are read later (CUDA events, off the
	// collective thread) and given to Fill before the exchange's row is made.
	Deferred bool
}

// Due says what End found: Recorded, the epoch went into the next exchange;
// X > 0, exchange X is due now: once the answers up to Need are in (Need < 1:
// none), Send cuts it.
type Due struct {
	Recorded bool
	X, Need  int
	// Next is the key's next epoch; Ask says its next Begin may switch
	// (a switch is scheduled). Until an exchange is sent or Ask is set,
	// the next epoch runs the version in force and Begin may be skipped.
	Next int
	Ask  bool
}

// Refusal is a decided pattern not every rank accepted.
type Refusal struct {
	Key, Version int
	Why          string // this rank's reason; "" where another rank refused it
}

// KeyStats is one key's state, for the runtime's listing.
type KeyStats struct {
	Epoch, Version, Switches, Refused int
	Tuned                             bool
}

// Decision is a leader's tuner's new pattern for a key.
type Decision struct {
	Key, Version, Effective int
	Pattern                 []byte
}

type key struct {
	raw      map[int][]byte       // every version's pattern bytes
	patterns map[int]*ten.Pattern // and the pattern
	version  int
	epoch    int // next epoch to run
	pending  []switchAt
	tuned    bool
	switches int
	refused  int
	records  []*record
}

type switchAt struct{ effective, version int }

type record struct {
	epoch, version int
	p              *ten.Pattern
	row            []float64 // wire.ExchangeRowLen of its pattern
	deferred       bool
}

type item struct {
	key  int
	recs []*record
}

// exchange is one sent and not yet accepted.
type exchange struct {
	at       float64 // when it was sent (the runtime's clock)
	items    []item
	want     bool
	deferred []*record
	answer   *wire.Answer // decoded by Check
	checked  []*ten.Pattern
	why      []string
}

type answer struct {
	x        int
	switches []switchTo
	every    int
}

type switchTo struct {
	key, effective, version int
}

// Plane is one rank's control plane of one group. Not safe for concurrent
// use: the runtime serializes its calls.
type Plane struct {
	cfg     Config
	keys    []*key
	clock   int // the key whose batches time the exchanges, -1 before one
	sent    int
	replied int
	every   int
	offset  float64
	want    bool
	report  []byte
	out     map[int]*exchange
	answers []answer
	// records waiting for Fill, in the order End took them
	deferred []*record
	// leader
	ready    []Decision
	lastAt   float64
	interval float64 // EMA of the time between exchanges, NaN before two
	timed    int     // the last exchange the interval took
}

// New makes a plane with no keys.
func New(cfg Config) (*Plane, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Plane{cfg: cfg, clock: -1, every: cfg.Batch, out: map[int]*exchange{}, lastAt: math.NaN(), interval: math.NaN()}, nil
}

// AddKey adds a key whose calls move numel elements with p (raw: its
// msgpack form, checked) and returns its id, the next in first-call order.
// A key is tuned where the group is and each chunk of p has at least two
// elements a rank.
func (c *Plane) AddKey(p *ten.Pattern, raw []byte, numel int64) int {
	k := &key{raw: map[int][]byte{0: raw}, patterns: map[int]*ten.Pattern{0: p}}
	k.tuned = c.cfg.Tuned && numel >= int64(2*p.Ranks*max(p.Chunks(), 1))
	c.keys = append(c.keys, k)
	return len(c.keys) - 1
}

func (c *Plane) key(id int) (*key, error) {
	if id < 0 || id >= len(c.keys) {
		return nil, fmt.Errorf("control: key %d: %d keys added", id, len(c.keys))
	}
	return c.keys[id], nil
}

// Begin starts the key's next epoch: it switches to the pattern due then,
// and returns the epoch and the version in force.
func (c *Plane) Begin(id int) (epoch, version int, err error) {
	k, err := c.key(id)
	if err != nil {
		return 0, 0, err
	}
	for len(k.pending) > 0 && k.pending[0].effective <= k.epoch {
		k.version = k.pending[0].version
		k.pending = k.pending[1:]
		k.switches++
	}
	return k.epoch, k.version, nil
}

// Pattern is the msgpack form of a key's version (every version it ran or
// has scheduled).
func (c *Plane) Pattern(id, version int) ([]byte, error) {
	k, err := c.key(id)
	if err != nil {
		return nil, err
	}
	raw, ok := k.raw[version]
	if !ok {
		return nil, fmt.Errorf("control: key %d has no version %d", id, version)
	}
	return raw, nil
}

// End records the epoch Begin started. A record that names a flow out of
// range or a negative or non-finite time is refused whole, and the epoch
// still counts.
func (c *Plane) End(id int, r Record) (Due, error) {
	k, err := c.key(id)
	if err != nil {
		return Due{}, err
	}
	e := k.epoch
	k.epoch++
	due := Due{Next: k.epoch, Ask: len(k.pending) > 0}
	if !k.tuned || e+1 < c.cfg.MinCalls {
		return due, nil
	}
	p := k.patterns[k.version]
	row, err := c.row(p, r)
	if err != nil {
		return Due{}, fmt.Errorf("control: key %d epoch %d: %w", id, e, err)
	}
	rec := &record{epoch: e, version: k.version, p: p, row: row, deferred: r.Deferred}
	k.records = append(k.records, rec)
	if r.Deferred {
		c.deferred = append(c.deferred, rec)
	}
	due.Recorded = true
	n, b := len(k.records), c.every
	if n >= b && (c.clock < 0 || c.clock == id || n >= 2*b) {
		c.clock = id
		due.X, due.Need = c.sent+1, c.sent+1-Depth
	}
	return due, nil
}

// row lays out one epoch's values (pkg/wire/exchange.go): -Inf where this
// rank has nothing.
func (c *Plane) row(p *ten.Pattern, r Record) ([]float64, error) {
	f := len(p.Flows)
	row := make([]float64, wire.ExchangeRowLen(f, p.Ranks))
	for i := range row {
		row[i] = math.Inf(-1)
	}
	if err := fill(row, f, r); err != nil {
		return nil, err
	}
	if r.Entry >= p.Ranks {
		return nil, fmt.Errorf("entry of rank %d in a pattern of %d ranks", r.Entry, p.Ranks)
	}
	if r.Entry >= 0 {
		if !finite(r.EntryAt) {
			return nil, fmt.Errorf("entry time %v", r.EntryAt)
		}
		row[f+1+r.Entry] = r.EntryAt + c.offset
	}
	return row, nil
}

func fill(row []float64, f int, r Record) error {
	if r.Deferred {
		return nil
	}
	if len(r.Flows) != len(r.Arrivals) {
		return fmt.Errorf("%d flows, %d arrivals", len(r.Flows), len(r.Arrivals))
	}
	for i, fl := range r.Flows {
		if fl < 0 || fl >= int64(f) {
			return fmt.Errorf("flow %d of a pattern of %d flows", fl, f)
		}
		if !finite(r.Arrivals[i]) || r.Arrivals[i] < 0 {
			return fmt.Errorf("flow %d: arrival %v", fl, r.Arrivals[i])
		}
		row[fl] = r.Arrivals[i]
	}
	if !finite(r.Elapsed) || r.Elapsed < 0 {
		return fmt.Errorf("elapsed time %v", r.Elapsed)
	}
	row[f] = r.Elapsed
	return nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// Replied is the last exchange whose answer was accepted.
func (c *Plane) Replied() int { return c.replied }

// Send cuts the exchange End found due, sent at the runtime's time at:
// first it schedules the switches the answers up to its Need carry, then it
// takes every key's records, in first-call order. Returns the exchange and
// how many of its records wait for Fill (numbered in the order End took
// them).
func (c *Plane) Send(at float64) (x, deferred int, err error) {
	need := c.sent + 1 - Depth
	if need >= 1 && c.replied < need {
		return 0, 0, fmt.Errorf("control: exchange %d is due after answer %d, and the last in is %d", c.sent+1, need, c.replied)
	}
	for len(c.answers) > 0 && c.answers[0].x <= need {
		a := c.answers[0]
		c.answers = c.answers[1:]
		c.every = a.every
		for _, s := range a.switches {
			k := c.keys[s.key]
			k.pending = append(k.pending, switchAt{max(s.effective, k.epoch), s.version})
		}
	}
	c.sent++
	ex := &exchange{at: at, want: c.want, deferred: c.deferred}
	c.want, c.deferred = false, nil
	for id, k := range c.keys {
		if len(k.records) == 0 {
			continue
		}
		ex.items = append(ex.items, item{key: id, recs: k.records})
		k.records = nil
	}
	c.out[c.sent] = ex
	return c.sent, len(ex.deferred), nil
}

func (c *Plane) exchange(x int) (*exchange, error) {
	ex := c.out[x]
	if ex == nil {
		return nil, fmt.Errorf("control: exchange %d is not in flight", x)
	}
	return ex, nil
}

// Fill gives deferred record i of exchange x its arrivals and elapsed time.
func (c *Plane) Fill(x, i int, r Record) error {
	ex, err := c.exchange(x)
	if err != nil {
		return err
	}
	if i < 0 || i >= len(ex.deferred) {
		return fmt.Errorf("control: exchange %d has %d deferred records, not %d", x, len(ex.deferred), i+1)
	}
	d := ex.deferred[i]
	if !d.deferred {
		return fmt.Errorf("control: exchange %d: deferred record %d filled twice", x, i)
	}
	r.Deferred = false
	if err := fill(d.row, len(d.p.Flows), r); err != nil {
		return fmt.Errorf("control: exchange %d, deferred record %d: %w", x, i, err)
	}
	d.deferred = false
	return nil
}

// Row is this rank's part of exchange x: its records' rows one after
// another, then a slot that asks the leader for its report (1, else -Inf).
func (c *Plane) Row(x int) ([]float64, error) {
	ex, err := c.exchange(x)
	if err != nil {
		return nil, err
	}
	var out []float64
	for _, it := range ex.items {
		for _, r := range it.recs {
			if r.deferred {
				return nil, fmt.Errorf("control: exchange %d: key %d epoch %d was never filled", x, it.key, r.epoch)
			}
			out = append(out, r.row...)
		}
	}
	if ex.want {
		return append(out, 1), nil
	}
	return append(out, math.Inf(-1)), nil
}

// Layout says what exchange x's row holds, as internal/leader reads it:
// items, then per item its key, its record count and per record its epoch
// and version.
func (c *Plane) Layout(x int) ([]int64, error) {
	ex, err := c.exchange(x)
	if err != nil {
		return nil, err
	}
	out := []int64{int64(len(ex.items))}
	for _, it := range ex.items {
		out = append(out, int64(it.key), int64(len(it.recs)))
		for _, r := range it.recs {
			out = append(out, int64(r.epoch), int64(r.version))
		}
	}
	return out, nil
}

// Decided hands the plane (on the leader) what its tuners decided; an
// answer carries each one with the next exchange of its key.
func (c *Plane) Decided(ds []Decision) { c.ready = append(c.ready, ds...) }

// Deadline is when the leader stops waiting for its tuners to take
// exchange x before it answers: half the time between exchanges after x
// was sent (0.1 s before that is known).
func (c *Plane) Deadline(x int) (float64, error) {
	ex, err := c.exchange(x)
	if err != nil {
		return 0, err
	}
	if c.timed < x {
		if !math.IsNaN(c.lastAt) {
			d := ex.at - c.lastAt
			if math.IsNaN(c.interval) {
				c.interval = d
			} else {
				c.interval = 0.8*c.interval + 0.2*d
			}
		}
		c.lastAt, c.timed = ex.at, x
	}
	if math.IsNaN(c.interval) {
		return ex.at + 0.1, nil
	}
	return ex.at + 0.5*c.interval, nil
}

// Answer is the leader's answer to exchange x (its msgpack form): the
// decisions made so far for keys x carries, the exchange period from
// x + Depth on (Batch epochs of the clock key, or a multiple of Batch that
// spaces exchanges ExchangeS apart, up to MaxValues a key), and report (the
// tuners' newest, made for an exchange that asked; nil: none).
func (c *Plane) Answer(x int, report []byte) ([]byte, error) {
	ex, err := c.exchange(x)
	if err != nil {
		return nil, err
	}
	if !c.cfg.Leader {
		return nil, errors.New("control: only the leader answers")
	}
	if _, err := c.Deadline(x); err != nil { // takes x's interval if the runtime did not ask
		return nil, err
	}
	a := &wire.Answer{Every: c.every, Report: report}
	index := map[int]int{}
	for i, it := range ex.items {
		index[it.key] = i
	}
	var rest []Decision
	for _, d := range c.ready {
		i, ok := index[d.Key]
		if !ok {
			rest = append(rest, d)
			continue
		}
		a.Decisions = append(a.Decisions, wire.AnswerDecision{Item: i, Effective: d.Effective, Version: d.Version, Pattern: d.Pattern})
	}
	c.ready = rest
	if !math.IsNaN(c.interval) {
		perBatch := c.interval * float64(c.cfg.Batch) / float64(c.every)
		n := int(math.Round(ExchangeS / max(perBatch, 1e-9)))
		a.Every = c.cfg.Batch * max(1, min(n, MaxValues/(c.cfg.Batch*c.widest())))
	}
	return wire.EncodeAnswer(a)
}

// widest is the longest row of a tuned key's patterns (1 when none).
func (c *Plane) widest() int {
	w := 1
	for _, k := range c.keys {
		if !k.tuned {
			continue
		}
		for _, p := range k.patterns {
			w = max(w, wire.ExchangeRowLen(len(p.Flows), p.Ranks))
		}
	}
	return w
}

// Check reads the answer to exchange x and checks every pattern it carries
// (libreact's exactly-once check): ok[i] says whether this rank accepts
// decision i. A malformed answer is an error of the group, not a refusal.
func (c *Plane) Check(x int, body []byte) (ok []bool, err error) {
	ex, err := c.exchange(x)
	if err != nil {
		return nil, err
	}
	a, err := wire.DecodeAnswer(body)
	if err != nil {
		return nil, fmt.Errorf("control: exchange %d: %w", x, err)
	}
	ex.answer, ex.checked, ex.why = a, make([]*ten.Pattern, len(a.Decisions)), make([]string, len(a.Decisions))
	ok = make([]bool, len(a.Decisions))
	for i, d := range a.Decisions {
		if d.Item >= len(ex.items) {
			return nil, fmt.Errorf("control: exchange %d: decision %d names item %d of %d", x, i, d.Item, len(ex.items))
		}
		p, err := checked(d.Pattern)
		if err == nil && p.Ranks != c.keys[ex.items[d.Item].key].patterns[0].Ranks {
			err = fmt.Errorf("a pattern of %d ranks for a key of %d", p.Ranks, c.keys[ex.items[d.Item].key].patterns[0].Ranks)
		}
		if err != nil {
			ex.why[i] = err.Error()
			continue
		}
		ex.checked[i], ok[i] = p, true
	}
	if len(a.Report) > 0 {
		c.report = a.Report
	}
	return ok, nil
}

func checked(raw []byte) (*ten.Pattern, error) {
	p, err := wire.DecodeMsgpack(raw)
	if err != nil {
		return nil, err
	}
	if err := semantics.Check(p); err != nil {
		return nil, err
	}
	return p, nil
}

// Accept takes the ranks' vote on exchange x's decisions (all[i]: every
// rank accepted decision i): the accepted become due when exchange
// x + Depth is sent; the others are counted as refused and returned. resync:
// the runtime estimates the group clock again now (every rank is at the
// same exchange).
func (c *Plane) Accept(x int, all []bool) (refused []Refusal, resync bool, err error) {
	ex, err := c.exchange(x)
	if err != nil {
		return nil, false, err
	}
	if ex.answer == nil {
		return nil, false, fmt.Errorf("control: exchange %d: accepted before its answer was checked", x)
	}
	if len(all) != len(ex.answer.Decisions) {
		return nil, false, fmt.Errorf("control: exchange %d: %d votes for %d decisions", x, len(all), len(ex.answer.Decisions))
	}
	if x != c.replied+1 {
		return nil, false, fmt.Errorf("control: exchange %d accepted after %d", x, c.replied)
	}
	an := answer{x: x, every: ex.answer.Every}
	for i, d := range ex.answer.Decisions {
		id := ex.items[d.Item].key
		k := c.keys[id]
		if !all[i] || ex.checked[i] == nil {
			k.refused++
			why := ex.why[i]
			if why == "" && !all[i] {
				why = "refused by another rank"
			}
			refused = append(refused, Refusal{Key: id, Version: d.Version, Why: why})
			continue
		}
		k.raw[d.Version], k.patterns[d.Version] = d.Pattern, ex.checked[i]
		an.switches = append(an.switches, switchTo{key: id, effective: d.Effective, version: d.Version})
	}
	c.answers = append(c.answers, an)
	c.replied = x
	delete(c.out, x)
	return refused, x%Resync == 0, nil
}

// AskReport asks the leader for its report with the next exchange.
func (c *Plane) AskReport() { c.want = true }

// Report is the last report the leader sent (nil before one).
func (c *Plane) Report() []byte { return c.report }

// SetOffset sets what turns this rank's clock into the group's.
func (c *Plane) SetOffset(offset float64) { c.offset = offset }

// Stats is every key's state, by id.
func (c *Plane) Stats() []KeyStats {
	out := make([]KeyStats, len(c.keys))
	for i, k := range c.keys {
		out[i] = KeyStats{Epoch: k.epoch, Version: k.version, Switches: k.switches, Refused: k.refused, Tuned: k.tuned}
	}
	return out
}
