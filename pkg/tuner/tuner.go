// Package tuner is REACT's feedback loop (§5.4 and Algorithm 1 of the
// paper) as a deterministic state machine driven from outside, in the
// manner of etcd-io/raft's RawNode: the caller asks which pattern an epoch
// runs (Pattern), runs it, and hands back every flow's completion time
// (Observe). At the end of every batch Observe returns a Decision: what was
// detected, which transforms were tried with their estimated gain, whether
// the previous change was kept or reverted, and the new pattern, if any,
// with the epoch from which every rank runs it. There is no I/O, no clock
// and no goroutine; randomness comes from Config.Seed.
package tuner

import (
	"fmt"
	"hash"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/react-torch/react-torch/pkg/critpath"
	"github.com/react-torch/react-torch/pkg/detect"
	"github.com/react-torch/react-torch/pkg/links"
	"github.com/react-torch/react-torch/pkg/model"
	"github.com/react-torch/react-torch/pkg/semantics"
	"github.com/react-torch/react-torch/pkg/ten"
	"github.com/react-torch/react-torch/pkg/transform"
)

// Trial is one transform the exploration estimated.
type Trial struct {
	Swap   transform.Swap
	Lowers bool    // lowers the problem rank's degree in its congested direction
	Before float64 // model's mean time over the batch's critical paths, seconds
	After  float64 // the same with the transform applied
	// Accepted: After improved on Before by 1+Epsilon and the model's time
	// for the whole collective did not grow.
	Accepted bool
}

// Gain is Before/After, the estimated speed-up of the trial.
func (t Trial) Gain() float64 { return t.Before / t.After }

// Decision is the outcome of one batch.
type Decision struct {
	Batch   int // batch number, from 0
	Epoch   int // last epoch of the batch
	Version int // version of the pattern the batch ran
	// Observed is the batch's mean collective time; Previous that of the
	// batch before the change under evaluation (0 when none was).
	Observed, Previous float64
	Kept, Reverted     bool // verdict on the change under evaluation
	Explored           bool
	Congested          []FlowClass
	Trials             []Trial
	// Pattern is the pattern every rank runs from epoch Effective on, as
	// version NewVersion; nil when the pattern stays.
	Pattern    *ten.Pattern
	NewVersion int
	Effective  int
	Note       string // why nothing was explored, when nothing was

	// Model "react" only. ObservedGain is the old pattern's mean time over
	// the new one's, for a change under evaluation, as the judge saw them
	// (the times mixed with the FCTs' critical paths: judged; each side's
	// one outlier epoch clipped: judgeChange); Predicted the link
	// model's time for the pattern in force; Evaluated how many candidate
	// patterns the search judged; Model the fit the decision rests on.
	ObservedGain float64
	Predicted    float64
	Evaluated    int
	Model        *links.Fit
	// Expected is the predicted speed-up of the change emitted (Model
	// react; 0 otherwise).
	Expected float64
}

// FlowClass is a flow the detection classified.
type FlowClass struct {
	Flow  int
	Class detect.Class
}

type pending struct {
	p         *ten.Pattern
	version   int
	effective int
}

// Tuner tunes one recurring collective. It is not safe for concurrent use.
type Tuner struct {
	cfg   Config
	bytes float64
	rng   *rand.Rand

	cur     *ten.Pattern
	version int
	deg     *ten.Degrees
	next    *pending

	batch   [][]float64
	elapsed []float64
	paths   []float64     // the critical path of each epoch's FCTs
	dag     *critpath.DAG // of cur
	batchNo int
	last    int // last epoch observed, -1 before any
	// untimed: an epoch came without its collective time (its FCTs'
	// critical path stood in)
	untimed bool
	// ahead: epochs after the one being observed that are already in hand
	ahead int

	loop     loop            // the feedback loop of cfg.Model
	rejected map[string]bool // patterns of reverted changes, not to be tried again

	changes []Change // the newest maxChanges changes, for Report
	times   *Times   // the last batch's collective times
}

// New makes a tuner for an initial pattern (which must pass the semantics
// check) and a message of messageBytes bytes.
func New(cfg Config, initial *ten.Pattern, messageBytes float64) (*Tuner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !(messageBytes > 0) || math.IsInf(messageBytes, 0) {
		return nil, fmt.Errorf("tuner: message size %v bytes, want > 0", messageBytes)
	}
	if err := semantics.Check(initial); err != nil {
		return nil, fmt.Errorf("tuner: initial pattern: %w", err)
	}
	t := &Tuner{
		cfg: cfg, bytes: messageBytes, rng: rand.New(rand.NewPCG(cfg.Seed, 0x7e4c7)),
		cur: initial.Clone(), deg: ten.NewDegrees(initial), last: -1, rejected: map[string]bool{},
	}
	t.dag = critpath.New(t.cur)
	paper := &paperLoop{Tuner: t, hist: model.NewHistory(cfg.H), resolved: map[int32]bool{}}
	t.loop = paper
	if cfg.Model == ModelReact {
		m, err := links.NewModel(initial.Ranks, cfg.H, cfg.B, cfg.Stepped)
		if err != nil {
			return nil, fmt.Errorf("tuner: %w", err)
		}
		t.loop = &reactLoop{paperLoop: paper, links: m}
	}
	return t, nil
}

// Ran tells the tuner that the runtime ran epoch on version, before the
// epoch is asked for: a runtime switches when its ranks can agree on it,
// which may be later than the decision's Effective. When version is the
// one in force and a switch was due by epoch, the switch waits until the
// next epoch; the epoch is then observed as the old pattern's, as a lag
// epoch is (the judge's freshest measure of the old pattern). It reports
// whether it deferred the switch.
func (t *Tuner) Ran(epoch, version int) bool {
	if t.next == nil || version != t.version || epoch < t.next.effective {
		return false
	}
	t.next.effective = epoch + 1
	return true
}

// Pattern returns the pattern and version that epoch runs. Epochs must be
// asked for in order; a pending pattern takes over at its effective epoch.
func (t *Tuner) Pattern(epoch int) (*ten.Pattern, int) {
	if t.next != nil && epoch >= t.next.effective {
		t.cur, t.version = t.next.p, t.next.version
		t.deg = ten.NewDegrees(t.cur)
		t.dag = critpath.New(t.cur)
		t.next = nil
		t.batch, t.elapsed, t.paths = t.batch[:0], t.elapsed[:0], t.paths[:0]
	}
	return t.cur, t.version
}

// Observe records epoch's FCTs (seconds, indexed like the flows of the
// pattern that epoch ran) and, when elapsed > 0, its measured collective
// time; otherwise the time is the critical path of the FCTs. It returns a
// Decision at the end of every batch, nil otherwise. Epochs must come in
// order, each after Pattern(epoch).
func (t *Tuner) Observe(epoch int, fct []float64, elapsed float64) (*Decision, error) {
	if epoch <= t.last {
		return nil, fmt.Errorf("tuner: epoch %d observed after epoch %d", epoch, t.last)
	}
	t.Pattern(epoch)
	if len(fct) != len(t.cur.Flows) {
		return nil, fmt.Errorf("tuner: epoch %d: %d FCTs for a pattern of %d flows", epoch, len(fct), len(t.cur.Flows))
	}
	for i, v := range fct {
		if !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("tuner: epoch %d flow %d: FCT %v, want a positive finite time", epoch, i, v)
		}
	}
	if err := t.loop.observe(epoch, fct); err != nil {
		return nil, err
	}
	t.last = epoch
	path, _ := t.dag.Critical(fct)
	if !(elapsed > 0) {
		elapsed = path
		t.untimed = true
	}
	if t.next != nil {
		t.loop.waiting(elapsed, path)
		return nil, nil
	}
	t.batch = append(t.batch, slices.Clone(fct))
	t.elapsed = append(t.elapsed, elapsed)
	t.paths = append(t.paths, path)
	if len(t.batch) < t.cfg.B {
		return nil, nil
	}
	d := t.loop.decide(epoch)
	t.record(d)
	t.batch, t.elapsed, t.paths = t.batch[:0], t.elapsed[:0], t.paths[:0]
	t.batchNo++
	return d, nil
}

// now is the batch's times so far.
func (t *Tuner) now() times { return times{e: t.elapsed, c: t.paths} }

// Ahead says that n epochs after the next one observed are already in
// hand (a runtime's exchange carries several batches at once). A batch
// that a later one in hand will follow skips the link model's search: a
// change found on it would take effect no sooner, on older data, and leave
// the batches after it unused.
func (t *Tuner) Ahead(n int) { t.ahead = n }

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func (t *Tuner) emit(d *Decision, p *ten.Pattern, epoch int) {
	d.Pattern = p
	d.NewVersion = t.version + 1
	d.Effective = epoch + t.cfg.Lag
	t.next = &pending{p: p, version: d.NewVersion, effective: d.Effective}
}

// fingerprint identifies a pattern by its flows' endpoints: the 128-bit
// FNV-1a digest of every flow's source and destination, so that a long run
// that reverts many changes keeps 16 bytes a rejected pattern, not a copy
// of its flows.
func fingerprint(p *ten.Pattern) string {
	var pr printer
	pr.endpoints(p)
	return string(pr.sum())
}

// printer takes fingerprints with its scratch kept. A search looks every
// candidate up by its endpoints, which identify it as the fingerprint does
// without the hashing, and takes the fingerprint only where it is kept or
// there are rejected patterns to look up.
type printer struct {
	h   hash.Hash
	b   []byte
	out []byte
}

// endpoints is what fingerprint hashes of p, valid until the next call.
func (pr *printer) endpoints(p *ten.Pattern) []byte {
	b := pr.b[:0]
	for _, f := range p.Flows {
		b = append(b, byte(f.Src), byte(f.Src>>8), byte(f.Src>>16), byte(f.Dst), byte(f.Dst>>8), byte(f.Dst>>16))
	}
	pr.b = b
	return b
}

// sum is the fingerprint of the endpoints last taken, valid until the next
// call.
func (pr *printer) sum() []byte {
	if pr.h == nil {
		pr.h = fnv.New128a()
	}
	pr.h.Reset()
	pr.h.Write(pr.b)
	pr.out = pr.h.Sum(pr.out[:0])
	return pr.out
}
